"""The `agentscript architect` use cases: check an AgentSpec file, or build a program from it.

Building is the original's pipeline: validate, compile, then check the generated source as
`agentscript check` would; the first stage that fails is named with its diagnostics and
nothing is written. A file that cannot be read or is not a JSON object is an `AppError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentscript.app.architect.analyze import analyze_source
from agentscript.app.architect.compile import compile_spec
from agentscript.app.architect.diagnostics import SpecDiagnostic
from agentscript.app.architect.spec import as_draft
from agentscript.app.architect.validate import validate_spec
from agentscript.app.errors import AppError
from agentscript.runtime.bounded_input import USER_FILE_LIMIT, UnusableInput, read_regular_text
from agentscript.runtime.jsjson import parse

# The spec did not validate, or the source compiled from it did not check clean.
Stage = Literal["validate", "analyze"]


@dataclass(frozen=True, slots=True)
class Built:
    """What building a spec came to: the source written to `output` (no `stage`), or the
    stage that failed and its diagnostics."""

    output: Path | None = None
    stage: Stage | None = None
    diagnostics: list[SpecDiagnostic] = field(default_factory=list)


def read_spec(path: Path) -> dict[str, Any]:
    """The AgentSpec draft in a JSON file (AppError naming the file for anything else: a
    missing file, a FIFO or a device, text that is not JSON or not an object)."""
    try:
        text = read_regular_text(path, USER_FILE_LIMIT, "AgentSpec file")
    except UnusableInput as problem:
        raise AppError(str(problem)) from None
    try:
        parsed = parse(text)
    except ValueError as problem:
        raise AppError(f"Failed to read AgentSpec '{path}': {problem}") from None
    draft = as_draft(parsed)
    if draft is None:
        raise AppError(f"AgentSpec '{path}' must contain a JSON object")
    return draft


def check_spec_file(path: Path) -> dict[str, Any]:
    """`{ok, diagnostics}` for the spec in `path`."""
    return validate_spec(read_spec(path))


def build_spec_file(path: Path, output: Path) -> Built:
    """Compile the spec in `path` and write the program to `output` once it checks clean."""
    compiled = compile_spec(read_spec(path))
    if not compiled["ok"]:
        return Built(stage="validate", diagnostics=compiled["diagnostics"])
    analysis = analyze_source(compiled["source"])
    if not analysis["ok"]:
        return Built(stage="analyze", diagnostics=analysis["diagnostics"])
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(compiled["source"], encoding="utf-8")
    except OSError as problem:
        raise AppError(f"Cannot write '{output}': {problem.strerror or problem}") from None
    return Built(output=output)
