"""Canonical source text of an expression, as `use` records it (`[0] input.question:`).

The text appears in prompts and traces, so it must be stable and match the original's formatter
(reference §3.6). Parentheses are only added for later-form operators where precedence needs them.
"""

from __future__ import annotations

import json

from agentscript.lang import ast
from agentscript.lang.tokens import BINARY_PRECEDENCE


def format_expr(expr: ast.Expr) -> str:
    """The canonical text of `expr`."""
    if isinstance(expr, ast.IdentifierExpr):
        return expr.name
    if isinstance(expr, ast.StringExpr):
        return json.dumps(expr.value, ensure_ascii=False)
    if isinstance(expr, ast.NumberExpr):
        return expr.raw
    if isinstance(expr, ast.BooleanExpr):
        return "true" if expr.value else "false"
    if isinstance(expr, ast.NullExpr):
        return "none"
    if isinstance(expr, ast.ListExpr):
        return "[" + ", ".join(format_expr(item) for item in expr.items) + "]"
    if isinstance(expr, ast.ObjectExpr):
        return _format_properties(expr.properties)
    if isinstance(expr, ast.MemberExpr):
        return f"{format_expr(expr.object)}.{expr.property}"
    if isinstance(expr, ast.IndexExpr):
        return f"{format_expr(expr.object)}[{format_expr(expr.index)}]"
    if isinstance(expr, ast.CallExpr):
        args = ", ".join(format_expr(arg) for arg in expr.args)
        return f"{format_expr(expr.callee)}({args})"
    if isinstance(expr, ast.UnaryExpr):
        operand = format_expr(expr.value)
        if isinstance(expr.value, ast.BinaryExpr):
            operand = f"({operand})"
        return f"not {operand}" if expr.operator == "not" else f"-{operand}"
    if isinstance(expr, ast.BinaryExpr):
        return _format_binary(expr)
    if isinstance(expr, ast.ParallelForExpr):
        iterable = format_expr(expr.iterable)
        return f"parallel for {expr.item_name} in {iterable} max {expr.max_items} {{ … }}"
    return f"generate({_format_properties(expr.options.properties)})"


def _format_properties(properties: list[ast.ObjectProperty]) -> str:
    if not properties:
        return "{}"
    return "{ " + ", ".join(f"{p.key}: {format_expr(p.value)}" for p in properties) + " }"


def _format_binary(expr: ast.BinaryExpr) -> str:
    precedence = BINARY_PRECEDENCE[expr.operator]
    left = format_expr(expr.left)
    right = format_expr(expr.right)
    if isinstance(expr.left, ast.BinaryExpr) and BINARY_PRECEDENCE[expr.left.operator] < precedence:
        left = f"({left})"
    if (
        isinstance(expr.right, ast.BinaryExpr)
        and BINARY_PRECEDENCE[expr.right.operator] <= precedence
    ):
        right = f"({right})"
    return f"{left} {expr.operator} {right}"
