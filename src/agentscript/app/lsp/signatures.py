"""Signature help: inside the parentheses of a call, the function's parameters (an agent call
shows its main function's), with the one being typed marked."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentscript.app.lsp.analysis import Analysis
from agentscript.app.lsp.index import AGENT, FUNCTION, Symbol
from agentscript.lang import ast

# Brackets, strings and comments, in the order a left-to-right scan meets them.
_SCAN = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|//[^\n]*|[()\[\]{},]')
_CALLEE = re.compile(r"([A-Za-z_][\w-]*)(?:\.([A-Za-z_][\w-]*))?\s*$")


@dataclass(frozen=True, slots=True)
class Signature:
    label: str
    parameters: list[str]
    active: int


def signature_at(analysis: Analysis, offset: int) -> Signature | None:
    call = _open_call(analysis.text, offset)
    index = analysis.index
    if call is None or index is None:
        return None
    paren, commas = call
    callee = _CALLEE.search(analysis.text, 0, paren)
    if callee is None:
        return None
    scope = index.scope_at(offset)
    root = scope.lookup(callee[1]) if scope is not None else None
    if root is None:
        return None
    function = _function(root.origin, callee[2])
    if function is None or not isinstance(function.declaration, ast.FuncDecl):
        return None
    params = [param.name for param in function.declaration.params]
    name = callee[0].strip()
    label = f"{name}({', '.join(params)})"
    return Signature(label, params, min(commas, max(len(params) - 1, 0)))


def _function(origin: Symbol, member: str | None) -> Symbol | None:
    """The function a call runs: `f(…)`, `Agent(…)` (its main function), `Agent.f(…)`."""
    if origin.kind == FUNCTION and member is None:
        return origin
    if origin.kind != AGENT:
        return None
    if member is not None:
        return origin.functions.get(member)
    declaration = origin.declaration
    main = declaration.main_function() if isinstance(declaration, ast.AgentDecl) else None
    return origin.functions.get(main.name) if main is not None else None


def _open_call(text: str, offset: int) -> tuple[int, int] | None:
    """The offset of the innermost `(` open at `offset`, and the commas typed directly in it."""
    stack: list[list[int]] = []  # [offset of the bracket, commas] per open bracket
    for token in _SCAN.finditer(text, 0, offset):
        char = token.group()
        if char in "([{":
            stack.append([token.start(), 0])
        elif char in ")]}":
            if stack:
                stack.pop()
        elif char == "," and stack:
            stack[-1][1] += 1
    for bracket, commas in reversed(stack):
        if text[bracket] == "(":
            return bracket, commas
        return None  # inside a list or an object literal: not typing an argument
    return None
