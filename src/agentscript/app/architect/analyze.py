"""`analyzeSource`: does AgentScript source parse and check clean, and what does it declare?

The original answers `{ok, diagnostics}` with the checker's errors (each at `source:L:C`, with
its range) or one `parse_error`. Here the answer also carries a summary in the spirit of an
AgentSpec, so a program that writes or reviews agents can read one without parsing: the imports,
and for each agent its configuration and functions with their input contracts, the `use`
lines that feed the model, the generates with their instruction and output shape, and the
tool and agent calls. The source is checked as `agentscript check` checks a file (tool schemes
and model providers included), without loading anything it imports.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from typing import Any

from agentscript.app.architect.diagnostics import SpecDiagnostic
from agentscript.app.lsp.members import type_text
from agentscript.app.programs import check
from agentscript.lang import ast
from agentscript.lang.errors import Diagnostic, ParseError
from agentscript.lang.formatter import format_expr
from agentscript.lang.parser import parse_program


def analyze_source(source: str) -> dict[str, Any]:
    """`{ok, diagnostics, summary}`; for text that does not parse, `{ok: false, diagnostics:
    [{code: "parse_error", …}]}` (the tool turns that into its `parse_error` answer)."""
    try:
        program = parse_program(source)
    except ParseError as problem:
        return {
            "ok": False,
            "diagnostics": [
                {"severity": "error", "code": "parse_error", "path": "", "message": str(problem)}
            ],
        }
    diagnostics = [_located(item) for item in check(program) if item.severity == "error"]
    return {"ok": not diagnostics, "diagnostics": diagnostics, "summary": summary(program)}


def summary(program: ast.Program) -> dict[str, Any]:
    imports = {decl.name: decl.resource_kind for decl in program.imports}
    imports.update({agent.name: "agent" for agent in program.agents})
    return {
        "imports": [
            {"kind": decl.resource_kind, "name": decl.name, "uri": decl.uri}
            for decl in program.imports
        ],
        "agents": [_agent(agent, imports) for agent in program.agents],
    }


def _agent(agent: ast.AgentDecl, imports: dict[str, str]) -> dict[str, Any]:
    return {
        "name": agent.name,
        "main": agent.is_main,
        "config": {item.key: _value(item.value) for item in agent.config},
        "uses": [_use(stmt) for stmt in agent.uses or []],
        "functions": [_function(function, imports) for function in agent.functions],
    }


def _function(function: ast.FuncDecl, imports: dict[str, str]) -> dict[str, Any]:
    nodes = list(_descendants(function.body))
    return {
        "name": function.name,
        "main": function.is_main,
        "params": [
            {"name": param.name, "shape": _shape(param.shape) if param.shape else None}
            for param in function.params
        ],
        "uses": [_use(node) for node in nodes if isinstance(node, ast.UseStmt | ast.UseOneOfStmt)],
        "generates": [_generate(node) for node in nodes if isinstance(node, ast.GenerateExpr)],
        "calls": _calls(nodes, imports),
    }


def _use(stmt: ast.UseStmt | ast.UseOneOfStmt) -> dict[str, Any]:
    if isinstance(stmt, ast.UseOneOfStmt):
        return {
            "one_of": [candidate.name for candidate in stmt.candidates],
            "label": stmt.label,
            "line": stmt.range.start.line,
        }
    return {
        "source": format_expr(stmt.value),
        "max": stmt.budget.text() if stmt.budget else None,
        "label": stmt.label,
        "line": stmt.range.start.line,
    }


def _generate(expr: ast.GenerateExpr) -> dict[str, Any]:
    options = expr.options
    return {
        "input": _value(options.input) if options.input is not None else None,
        "max_output": options.max_output.text() if options.max_output else None,
        "output": _shape(expr.return_shape) if expr.return_shape else None,
        "line": expr.range.start.line,
    }


def _calls(nodes: list[ast.Node], imports: dict[str, str]) -> list[dict[str, str]]:
    """Each `Name.method(…)` on an imported tool, memory or agent (or an agent of the file),
    once, in the order first written."""
    found: dict[str, dict[str, str]] = {}
    for node in nodes:
        if not isinstance(node, ast.CallExpr) or not isinstance(node.callee, ast.MemberExpr):
            continue
        owner = node.callee.object
        if isinstance(owner, ast.IdentifierExpr) and owner.name in imports:
            target = f"{owner.name}.{node.callee.property}"
            found.setdefault(target, {"kind": imports[owner.name], "target": target})
    return list(found.values())


def _shape(shape: ast.ShapeObjectExpr) -> dict[str, str]:
    return {item.name: type_text(item.type) for item in shape.fields}


def _value(expr: ast.Expr) -> Any:
    """A literal string as its text; any other expression as source."""
    return expr.value if isinstance(expr, ast.StringExpr) else format_expr(expr)


def _descendants(body: list[ast.Stmt]) -> Iterator[ast.Node]:
    """Every node under a function body, in source order."""
    for node in body:
        yield node
        yield from _children(node)


def _children(node: ast.Node) -> Iterator[ast.Node]:
    for item in fields(node):
        value = getattr(node, item.name)
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.Node):
                yield child
                yield from _children(child)


def _located(diagnostic: Diagnostic) -> SpecDiagnostic:
    start = diagnostic.range.start
    return {
        "severity": diagnostic.severity,
        "code": diagnostic.code,
        "path": f"source:{start.line}:{start.column}",
        "range": diagnostic.range.to_json(),
        "message": diagnostic.message,
    }
