"""The outline (document symbols) and the folding ranges of a document."""

from __future__ import annotations

import re
from collections.abc import Iterator

from lsprotocol import types

from agentscript.app.lsp.analysis import Analysis
from agentscript.app.lsp.members import signature
from agentscript.lang import ast

_COMMENT_LINE = re.compile(r"^\s*//")
_IMPORT_KINDS = {
    "tool": types.SymbolKind.Interface,
    "llm": types.SymbolKind.Constant,
    "file": types.SymbolKind.File,
    "agent": types.SymbolKind.Class,
    "memory": types.SymbolKind.Struct,
}


def document_symbols(analysis: Analysis) -> list[types.DocumentSymbol]:
    index = analysis.index
    if index is None:
        return []
    lines = analysis.lines
    found: list[types.DocumentSymbol] = []
    for symbol in index.imports.values():
        declaration = symbol.declaration
        assert declaration is not None
        found.append(
            types.DocumentSymbol(
                name=symbol.name,
                detail=f"{symbol.kind} from {symbol.uri}",
                kind=_IMPORT_KINDS.get(symbol.kind, types.SymbolKind.Variable),
                range=lines.range(declaration.range.start_offset, declaration.range.end_offset),
                selection_range=lines.range(symbol.start, symbol.end),
            )
        )
    for info in index.agents.values():
        agent = info.declaration
        children = [
            types.DocumentSymbol(
                name="main func" if function.name.startswith("__") else function.name,
                detail=signature(function),
                kind=types.SymbolKind.Method,
                range=lines.range(
                    function.declaration.range.start_offset, function.declaration.range.end_offset
                )
                if function.declaration is not None
                else lines.range(function.start, function.end),
                selection_range=lines.range(function.start, function.end),
            )
            for function in info.functions.values()
        ]
        found.append(
            types.DocumentSymbol(
                name="main agent" if agent.name.startswith("__") else agent.name,
                detail="main agent" if agent.is_main else "agent",
                kind=types.SymbolKind.Class,
                range=lines.range(agent.range.start_offset, agent.range.end_offset),
                selection_range=lines.range(info.symbol.start, info.symbol.end),
                children=children,
            )
        )
    return found


def folding_ranges(analysis: Analysis) -> list[types.FoldingRange]:
    """Agents, functions, blocks and shapes that span lines; runs of comment lines."""
    lines = analysis.lines
    ranges: list[types.FoldingRange] = []
    seen: set[int] = set()
    if analysis.index is not None and analysis.outcome.program is not None:
        for node in _blocks(analysis.outcome.program):
            start = lines.position(node.range.start_offset).line
            end = lines.position(node.range.end_offset).line
            if end > start and start not in seen:
                seen.add(start)
                ranges.append(types.FoldingRange(start_line=start, end_line=end))
    run_start: int | None = None
    text_lines = analysis.text.split("\n")
    for number, line in enumerate([*text_lines, ""]):
        if _COMMENT_LINE.match(line):
            run_start = number if run_start is None else run_start
            continue
        if run_start is not None and number - 1 > run_start:
            ranges.append(
                types.FoldingRange(
                    start_line=run_start,
                    end_line=number - 1,
                    kind=types.FoldingRangeKind.Comment,
                )
            )
        run_start = None
    return ranges


def _blocks(program: ast.Program) -> Iterator[ast.Node]:
    for agent in program.agents:
        yield agent
        for function in agent.functions:
            yield function
            yield from _statement_blocks(function.body)


def _statement_blocks(body: list[ast.Stmt]) -> Iterator[ast.Node]:
    for stmt in body:
        if isinstance(stmt, ast.IfStmt):
            yield stmt
            yield from _statement_blocks(stmt.then_body)
            yield from _statement_blocks(stmt.else_body or [])
        elif isinstance(stmt, ast.ForInStmt | ast.LoopUntilStmt | ast.RepeatStmt):
            yield stmt
            yield from _statement_blocks(stmt.body)
        elif isinstance(stmt, ast.AssignStmt | ast.ExprStmt | ast.ReturnStmt):
            value = stmt.value if not isinstance(stmt, ast.ExprStmt) else stmt.expr
            if isinstance(value, ast.GenerateExpr | ast.ObjectExpr | ast.ParallelForExpr):
                yield value
