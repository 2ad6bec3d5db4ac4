"""Hover: what a name is, in a few lines of Markdown.

A variable or parameter shows its shape where the program declares one; a `use` its budget and
label; a tool import its URI and methods; an agent (imported ones too) its role, description and
the input contract of its main function.
"""

from __future__ import annotations

from pathlib import Path

from agentscript.app.lsp.analysis import Analysis
from agentscript.app.lsp.index import AGENT, FILE, FUNCTION, LLM, LOCAL, MEMORY, PARAM, TOOL, Symbol
from agentscript.app.lsp.members import members_of, resolve_member, shape_text, signature
from agentscript.app.lsp.tool_methods import ToolCatalog
from agentscript.lang import ast
from agentscript.lang.formatter import format_expr
from agentscript.lang.shape_types import type_text as value_type_text
from agentscript.runtime.errors import LoadError
from agentscript.runtime.files import resolve_import_path


def hover_text(analysis: Analysis, offset: int, tools: ToolCatalog) -> str | None:
    index = analysis.index
    if index is None:
        return None
    occurrence = index.occurrence_at(offset)
    if occurrence is not None:
        if occurrence.symbol is None:
            return f"`{occurrence.name}`: not declared here"
        return describe(occurrence.symbol, tools)
    member = index.member_at(offset)
    if member is not None and member.root is not None:
        found = resolve_member(member.root, member.chain, tools)
        if found is None:
            return None
        if found.symbol is not None:
            return describe(found.symbol, tools)
        owner = ".".join((member.root.name, *member.chain))
        return _code(f"({found.kind}) {owner}") + "\n\n" + found.detail
    for generate in index.generates:
        start = generate.range.start_offset
        if start <= offset <= start + len("generate"):
            return describe_generate(generate)
    for use in index.uses:
        if use.range.start_offset <= offset <= use.range.end_offset:
            return describe_use(use)
    return None


def describe(symbol: Symbol, tools: ToolCatalog) -> str:
    origin = symbol.origin
    kind = origin.kind
    if kind in (PARAM, LOCAL):
        label = "param" if kind == PARAM else "variable"
        shape = f": {value_type_text(origin.shape)}" if origin.shape is not None else ""
        return _code(f"({label}) {origin.name}{shape}")
    if kind == AGENT:
        return _describe_agent(symbol)
    if kind == FUNCTION:
        return _code(signature(origin)) + f"\n\nfunction of agent `{origin.agent}`"
    lines = [_code(f'import {kind} {origin.name} from "{origin.uri}"')]
    if kind == TOOL:
        server = (
            tools.describe_server(origin.uri or "")
            if (origin.uri or "").startswith("mcp:")
            else None
        )
        if server is not None:
            lines.append(server)
        methods = members_of(origin, (), tools)
        if methods:
            lines.append("methods: " + ", ".join(f"`{member.name}`" for member in methods))
    elif kind == MEMORY:
        lines.append("methods: `add`, `query`")
    elif kind == LLM:
        lines.append(
            "the model that `generate` calls when an agent sets `model " + origin.name + "`"
        )
    elif kind == FILE:
        lines.append(_describe_file(origin))
    return "\n\n".join(lines)


def _describe_file(symbol: Symbol) -> str:
    """Where an `import file` points, and whether that file is there."""
    if symbol.path is None or symbol.uri is None:
        return "the file's content, read when the program starts"
    try:
        target = resolve_import_path(symbol.uri, FILE, Path(symbol.path).parent)
    except LoadError as problem:
        return str(problem)
    state = "" if target.is_file() else " (not found)"
    return f"the content of `{target}`{state}, read when the program starts"


def _describe_agent(symbol: Symbol) -> str:
    origin = symbol.origin
    declaration = origin.declaration
    if not isinstance(declaration, ast.AgentDecl):
        return _code(f'import agent {symbol.name} from "{symbol.uri}"') + "\n\n(file not readable)"
    head = "main agent" if declaration.is_main else "agent"
    lines = [_code(f"{head} {'' if origin.name.startswith('__') else origin.name}".rstrip())]
    for config in declaration.config:
        if config.key in ("role", "description"):
            lines.append(f"**{config.key}**: {_plain(config.value)}")
    main = declaration.main_function()
    if main is not None:
        main_symbol = origin.functions.get(main.name)
        if main_symbol is not None:
            lines.append("input: " + _code_inline(signature(main_symbol)))
    if symbol.target is not None and origin.path is not None:
        lines.append(f"declared in `{Path(origin.path).name}`")
    return "\n\n".join(lines)


def describe_use(use: ast.UseStmt | ast.UseOneOfStmt) -> str:
    if isinstance(use, ast.UseOneOfStmt):
        names = ", ".join(f"`{candidate.name}`" for candidate in use.candidates)
        return _code(f"use one of … as {use.label}") + f"\n\ncandidates: {names}"
    lines = [_code(f"use {format_expr(use.value)}")]
    if use.budget is not None:
        lines.append(
            f"budget: {use.budget.text()} ({use.budget.character_limit()} characters at most)"
        )
    else:
        lines.append("budget: none (the whole value)")
    lines.append(f"label: {use.label}" if use.label is not None else "label: the expression")
    return "\n\n".join(lines)


def describe_generate(generate: ast.GenerateExpr) -> str:
    """The options as written and what the answer must look like."""
    options = ", ".join(
        f"{prop.key}: {format_expr(prop.value)}"
        for prop in generate.options.properties
        if prop.key != "input"
    )
    lines = [_code(f"generate({{ {options} }})" if options else "generate")]
    if generate.return_shape is not None:
        attempts = generate.options.attempts
        tries = f", up to {attempts:g} attempts" if attempts is not None else ""
        lines.append(f"answer checked against `{shape_text(generate.return_shape)}`{tries}")
    else:
        lines.append("free-form: the model's text is the result")
    return "\n\n".join(lines)


def _plain(value: ast.Expr) -> str:
    return value.value if isinstance(value, ast.StringExpr) else format_expr(value)


def _code(text: str) -> str:
    return f"```agentscript\n{text}\n```"


def _code_inline(text: str) -> str:
    return f"`{text}`"
