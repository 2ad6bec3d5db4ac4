"""The generates whose prompt an optimizer may change, and the source edits that change it.

A site is a `generate` of the entry file whose `input` is a string literal: its instruction can
be replaced by a proposed one, and worked examples can be put before it as a labelled `use`
with a budget. Both are edits of the program's own text, so a trial's program is ordinary
source (parsed and checked like any other) and the winner is reviewed as a diff. Generates
whose instruction is computed, or that sit inside a `parallel for` (whose body keeps a scope of
its own), are not sites: their prompts are left as written.

A site is named as the trace names the call (`Agent.function`), with the file and the line of
the generate: `triage.as#Triage.__main:10`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from agentscript.lang import ast

# The label and budget of the worked examples a trial puts before a generate.
EXAMPLES_LABEL = "worked examples"
EXAMPLES_BUDGET = "1k"


@dataclass(frozen=True, slots=True)
class PromptSite:
    """A generate of the entry file with a literal instruction."""

    id: str
    agent: str
    function: str
    instruction: str
    shape: str
    # Offsets in the entry file: the instruction's literal (quotes included), and the start
    # of the line of the statement holding the generate (where examples go).
    literal: tuple[int, int]
    statement_line: int
    indent: str


def prompt_sites(program: ast.Program, text: str) -> list[PromptSite]:
    """The sites of `program`, whose entry file reads `text`, in source order."""
    entry = program.source_path
    file = os.path.basename(entry) if entry else "<source>"
    found = []
    for agent in program.agents:
        if agent.source_path not in (None, entry):
            continue  # an imported agent's file is not rewritten
        for function in agent.functions:
            for stmt, generate in _generates(function.body):
                literal = generate.options.input
                if not isinstance(literal, ast.StringExpr):
                    continue
                line_start = text.rfind("\n", 0, stmt.range.start_offset) + 1
                indent = text[line_start : stmt.range.start_offset]
                if indent.strip():
                    continue  # the statement does not begin its line: no place for examples
                found.append(
                    PromptSite(
                        id=f"{file}#{agent.name}.{function.name}:{generate.range.start.line}",
                        agent=agent.name,
                        function=function.name,
                        instruction=literal.value,
                        shape=_shape_text(generate.return_shape),
                        literal=(literal.range.start_offset, literal.range.end_offset),
                        statement_line=line_start,
                        indent=indent,
                    )
                )
    return found


@dataclass(frozen=True, slots=True)
class PromptChange:
    """What a trial changes at a site: a new instruction, worked examples put before it, or
    both (None: left as written)."""

    site: PromptSite
    instruction: str | None = None
    examples: str | None = None


# A source edit: replace text[start:end] with the string.
Edit = tuple[int, int, str]


def prompt_edits(change: PromptChange, comment: str | None = None) -> list[Edit]:
    """The edits of one site's change; `comment` goes on a `//` line above the statement."""
    site = change.site
    edits: list[Edit] = []
    if change.instruction is not None:
        edits.append((*site.literal, string_literal(change.instruction)))
    inserted = f"{site.indent}// {comment}\n" if comment else ""
    if change.examples is not None:
        label = string_literal(EXAMPLES_LABEL)
        shown = string_literal(change.examples)
        inserted += f"{site.indent}use {shown} < {EXAMPLES_BUDGET} as {label}\n"
    if inserted:
        edits.append((site.statement_line, site.statement_line, inserted))
    return edits


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """`text` with every edit made; edits must not overlap."""
    # From the end, so earlier offsets stay right.
    for start, end, replacement in sorted(edits, key=lambda edit: edit[:2], reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def edited_source(text: str, changes: Sequence[PromptChange]) -> str:
    """The entry file's text as a trial runs it."""
    return apply_edits(text, [edit for change in changes for edit in prompt_edits(change)])


def examples_text(examples: Sequence[tuple[object, object]]) -> str:
    """Worked examples as the prompt shows them: each input and the answer that was right."""
    lines = ["Worked examples (inputs, and answers that were judged right):"]
    for given, answer in examples:
        lines.append(f"Input: {_compact(given)}")
        lines.append(f"Answer: {_compact(answer)}")
    return "\n".join(lines)


def string_literal(text: str) -> str:
    """`text` as an AgentScript string literal (the lexer's escapes: \\n \\r \\t \\\\ \\")."""
    escaped = (
        text.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _shape_text(shape: ast.ShapeObjectExpr | None) -> str:
    """The output shape as a proposer reads it (`{ label: string, urgent: boolean }`)."""
    if shape is None:
        return "free text"
    fields = [f"{field.name}: {_type_text(field.type)}" for field in shape.fields]
    return "{ " + ", ".join(fields) + " }"


def _type_text(shape_type: ast.ShapeType) -> str:
    if isinstance(shape_type, ast.ChoiceShapeType):
        return " | ".join(json.dumps(value) for value in shape_type.values)
    if isinstance(shape_type, ast.ListShapeType):
        return f"list[{_type_text(shape_type.item_type)}]"
    return shape_type.name


def _generates(body: list[ast.Stmt]) -> Iterator[tuple[ast.Stmt, ast.GenerateExpr]]:
    """Each generate of a function body with the statement that holds it, nested bodies
    included (their statements hold their own generates)."""
    for stmt in body:
        for expr in _statement_expressions(stmt):
            for generate in _generates_in(expr):
                yield stmt, generate
        for name in ("then_body", "else_body", "body"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list):
                yield from _generates(inner)


def _statement_expressions(stmt: ast.Stmt) -> list[ast.Expr]:
    if isinstance(stmt, ast.AssignStmt):
        return [stmt.value]
    if isinstance(stmt, ast.ExprStmt):
        return [stmt.expr]
    if isinstance(stmt, ast.ReturnStmt | ast.UseStmt | ast.ConfigStmt):
        return [stmt.value]
    if isinstance(stmt, ast.IfStmt | ast.LoopUntilStmt):
        return [stmt.condition]
    if isinstance(stmt, ast.ForInStmt):
        return [stmt.iterable]
    return []


def _generates_in(expr: ast.Expr) -> Iterator[ast.GenerateExpr]:
    if isinstance(expr, ast.GenerateExpr):
        yield expr
        for prop in expr.options.properties:
            yield from _generates_in(prop.value)
        return
    for operand in ast.operand_expressions(expr):
        yield from _generates_in(operand)
