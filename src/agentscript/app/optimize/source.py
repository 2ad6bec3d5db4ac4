"""The optimized program as source: the program's own text with the winning picks written in,
so the result is reviewed as a diff and lives in the program, not in a file beside it.

At each changed `use one of` the `selected` mark moves to the winning candidate, and a comment
above the statement cites the held-out evidence; a changed model rewrites the URI of every
`llm` import of the entry file, with the same comment. Nothing else changes.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from agentscript.app.evals.configurations import use_one_of_statements
from agentscript.app.optimize.space import Trial
from agentscript.lang import ast


@dataclass(frozen=True, slots=True)
class Rewrite:
    """A file of the program and its optimized text."""

    path: Path
    before: str
    after: str

    def diff(self, root: Path) -> str:
        name = _relative(self.path, root)
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                f"a/{name}",
                f"b/{name}",
            )
        )


def rewrite(program: ast.Program, baseline: Trial, winner: Trial, evidence: str) -> list[Rewrite]:
    """The program's files that `winner` changes, with `evidence` in the comment at each
    changed site (the held-out scores)."""
    changed = {label for label, pick in winner.picks if baseline.pick(label) != pick}
    nodes: dict[Path, list[ast.UseOneOfStmt | ast.ImportDecl]] = {}
    for agent in program.agents:
        own = agent.source_path or program.source_path
        for stmt in _use_one_ofs(agent):
            if own is not None and stmt.label in changed:
                nodes.setdefault(Path(own), []).append(stmt)
    if winner.model != baseline.model and winner.model is not None and program.source_path:
        llms = [decl for decl in program.imports if decl.resource_kind == "llm"]
        nodes.setdefault(Path(program.source_path), []).extend(llms)
    rewrites = []
    for file, changed_nodes in nodes.items():
        before = file.read_text(encoding="utf-8")
        edits: list[tuple[int, int, str]] = []
        for node in changed_nodes:
            if isinstance(node, ast.UseOneOfStmt):
                edits += _select(before, node, winner.pick(node.label), evidence)
            else:
                edits += _model(before, node, winner.model or "", evidence)
        after = before
        # From the end, so earlier offsets stay right.
        for start, end, text in sorted(edits, reverse=True):
            after = after[:start] + text + after[end:]
        rewrites.append(Rewrite(file, before, after))
    return rewrites


def _select(
    text: str, stmt: ast.UseOneOfStmt, pick: str, evidence: str
) -> list[tuple[int, int, str]]:
    edits = [_comment(text, stmt.range.start_offset, f"optimized: {stmt.label} = {pick}", evidence)]
    for candidate in stmt.candidates:
        start, end = candidate.range.start_offset, candidate.range.end_offset
        if candidate.selected and candidate.name != pick:
            body = text[start:end]
            edits.append((start, end, body[: body.rfind("selected")].rstrip()))
        elif candidate.name == pick and not candidate.selected:
            edits.append((end, end, " selected"))
    return edits


def _model(
    text: str, decl: ast.ImportDecl, model: str, evidence: str
) -> list[tuple[int, int, str]]:
    start, end = decl.range.start_offset, decl.range.end_offset
    quoted = text.find(f'"{decl.uri}"', start, end)
    return [
        _comment(text, start, f"optimized: model {model}", evidence),
        (quoted, quoted + len(decl.uri) + 2, f'"{model}"'),
    ]


def _comment(text: str, offset: int, what: str, evidence: str) -> tuple[int, int, str]:
    """A `//` line above the line holding `offset`, indented as that line is."""
    line_start = text.rfind("\n", 0, offset) + 1
    lead = text[line_start:offset]
    indent = lead if not lead.strip() else ""
    return (line_start, line_start, f"{indent}// {what} ({evidence})\n")


def _use_one_ofs(agent: ast.AgentDecl) -> list[ast.UseOneOfStmt]:
    found = [stmt for stmt in agent.uses or () if isinstance(stmt, ast.UseOneOfStmt)]
    for function in agent.functions:
        found.extend(use_one_of_statements(function.body))
    return found


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.name
