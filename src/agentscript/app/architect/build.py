"""The `agentscript architect` use cases: check an AgentSpec file, build a program from it, or
have a model design the spec from a plain-language request.

Building is the original's pipeline: validate, compile, then check the generated source as
`agentscript check` would; the first stage that fails is named with its diagnostics and
nothing is written. A file that cannot be read or is not a JSON object is an `AppError`.
A request runs the packaged `architect.as` (a model writes the spec, `host://architect`
validates, the model repairs, the spec is compiled and checked) and writes its source only when
the analysis passed.
"""

from __future__ import annotations

import re
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
    _write(output, compiled["source"])
    return Built(output=output)


def _write(output: Path, source: str) -> None:
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(source, encoding="utf-8")
    except OSError as problem:
        raise AppError(f"Cannot write '{output}': {problem.strerror or problem}") from None


# The program a request runs, and the model it uses when none is named (the original's).
ARCHITECT_PROGRAM = Path(__file__).with_name("architect.as")
DEFAULT_MODEL = "ollama://localhost:11434/qwen3.6"


@dataclass(frozen=True, slots=True)
class Designed:
    """What the architect program answered, and where its source went (None: not written,
    because the program it designed did not check clean)."""

    value: Any
    output: Path | None


def design_from_request(
    request: str, output: Path, model: str = DEFAULT_MODEL, responses: str | None = None
) -> Designed:
    """Run the architect program on `request` with `model` (it designs and is the generated
    agent's model), or with the mock (`responses`: "" for shape defaults, or a script file);
    write the program to `output` when it checks clean."""
    from agentscript.app.configuration import RunConfig
    from agentscript.app.run import run

    mock = responses is not None
    config = RunConfig(
        model="mock" if mock else "real",
        responses=responses or None,
        models=[] if mock else [model],
        workspace=Path.cwd(),
        journal=False,
        learn=False,
    )
    arguments = {"request": request, "target_name": agent_name_for(output), "model_uri": model}
    value = run(ARCHITECT_PROGRAM, arguments, config).value
    if not (isinstance(value, dict) and value.get("analysis_ok") is True and value.get("source")):
        return Designed(value, None)
    _write(output, value["source"])
    return Designed(value, output)


def agent_name_for(output: Path) -> str:
    """The agent name a program file suggests: `docs-helper.as` → `DocsHelper`."""
    words = [word for word in re.split(r"[^A-Za-z0-9_]+", output.stem) if word]
    name = "".join(word[0].upper() + word[1:] for word in words) or "GeneratedAgent"
    return name if name[0].isupper() else f"Agent{name}"
