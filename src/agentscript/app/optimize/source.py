"""The optimized program as source: the program's own text with the winning picks written in,
so the result is reviewed as a diff and lives in the program, not in a file beside it.

At each changed `use one of` the `selected` mark moves to the winning candidate, and a comment
above the statement cites the held-out evidence; a changed instruction is written in place of
the old one, and worked examples as a labelled `use` before the generate, with the same
comment; a changed model rewrites the URI of every `llm` import of the entry file, with the
same comment. Nothing else changes.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from agentscript.app.evals.configurations import use_one_of_statements
from agentscript.app.optimize.prompt_sites import Edit, apply_edits, prompt_edits
from agentscript.app.optimize.space import SearchSpace, Trial
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


def rewrite(
    program: ast.Program, space: SearchSpace, baseline: Trial, winner: Trial, evidence: str
) -> list[Rewrite]:
    """The program's files that `winner` changes, with `evidence` in the comment at each
    changed site (the held-out scores)."""
    changed = {label for label, pick in winner.picks if baseline.pick(label) != pick}
    prompt_changes = winner.prompt_changes(space)
    nodes: dict[Path, list[ast.UseOneOfStmt | ast.ImportDecl]] = {}
    for agent in program.agents:
        own = agent.source_path or program.source_path
        for stmt in _use_one_ofs(agent):
            if own is not None and stmt.label in changed:
                nodes.setdefault(Path(own), []).append(stmt)
    if winner.model != baseline.model and winner.model is not None and program.source_path:
        llms = [decl for decl in program.imports if decl.resource_kind == "llm"]
        nodes.setdefault(Path(program.source_path), []).extend(llms)
    if prompt_changes and program.source_path:
        nodes.setdefault(Path(program.source_path), [])
    rewrites = []
    for file, changed_nodes in nodes.items():
        before = file.read_text(encoding="utf-8")
        edits: list[Edit] = []
        for node in changed_nodes:
            if isinstance(node, ast.UseOneOfStmt):
                edits += _select(before, node, winner.pick(node.label), evidence)
            else:
                edits += _model(before, node, winner.model or "", evidence)
        if program.source_path and file == Path(program.source_path):
            for change in prompt_changes:
                what = [
                    "a proposed instruction" if change.instruction is not None else "",
                    "worked examples" if change.examples is not None else "",
                ]
                comment = f"optimized: {' and '.join(w for w in what if w)} ({evidence})"
                edits += prompt_edits(change, comment)
        rewrites.append(Rewrite(file, before, apply_edits(before, edits)))
    return rewrites


def _select(text: str, stmt: ast.UseOneOfStmt, pick: str, evidence: str) -> list[Edit]:
    edits = [_comment(text, stmt.range.start_offset, f"optimized: {stmt.label} = {pick}", evidence)]
    for candidate in stmt.candidates:
        start, end = candidate.range.start_offset, candidate.range.end_offset
        if candidate.selected and candidate.name != pick:
            body = text[start:end]
            edits.append((start, end, body[: body.rfind("selected")].rstrip()))
        elif candidate.name == pick and not candidate.selected:
            edits.append((end, end, " selected"))
    return edits


def _model(text: str, decl: ast.ImportDecl, model: str, evidence: str) -> list[Edit]:
    start, end = decl.range.start_offset, decl.range.end_offset
    quoted = text.find(f'"{decl.uri}"', start, end)
    return [
        _comment(text, start, f"optimized: model {model}", evidence),
        (quoted, quoted + len(decl.uri) + 2, f'"{model}"'),
    ]


def _comment(text: str, offset: int, what: str, evidence: str) -> Edit:
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
