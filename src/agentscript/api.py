"""The Python API: load, check and run AgentScript programs. The CLI is built on these calls.

import agentscript
program = agentscript.load("examples/hello.as")
for problem in agentscript.check(program): print(problem.format())
result = agentscript.run(program, {"name": "Ada"}, agentscript.RunConfig(model="mock"))
print(result.value, result.trace)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscript.composition import RunConfig, build_run
from agentscript.lang import ast
from agentscript.lang.checker import check_program
from agentscript.lang.errors import Diagnostic, SemanticError
from agentscript.runtime.interpreter import RunResult, execute
from agentscript.runtime.loader import load_program, load_program_source

if TYPE_CHECKING:
    from agentscript.providers.llm.endpoints import ModelReport


def load(path: str | Path) -> ast.Program:
    """Read and parse a program file with everything it imports (ParseError, LoadError)."""
    return load_program(path)


def load_source(
    source: str, path: str | Path | None = None, base_dir: str | Path | None = None
) -> ast.Program:
    """Parse program text; `path` (or `base_dir`) anchors relative imports."""
    return load_program_source(
        source,
        source_path=str(Path(path).absolute()) if path is not None else None,
        base_dir=str(base_dir) if base_dir is not None else None,
    )


def check(program: ast.Program) -> list[Diagnostic]:
    """Static diagnostics; an empty list means the program is valid."""
    return check_program(program)


def models(program: ast.Program, environ: Mapping[str, str] | None = None) -> list[ModelReport]:
    """Each llm import of `program` resolved: protocol, model, endpoint, whether its key is set."""
    from agentscript.providers.llm.endpoints import report_model

    source = environ if environ is not None else os.environ
    return [
        report_model(decl.name, decl.uri, source)
        for decl in program.imports
        if decl.resource_kind == "llm"
    ]


def run(
    program: ast.Program | str | Path,
    input: Any = None,
    config: RunConfig | None = None,
) -> RunResult:
    """Check, then run the entry function. Raises SemanticError if the program has errors, or an
    AgentScriptError (with `.trace` holding the trace so far) if the run fails."""
    if not isinstance(program, ast.Program):
        program = load(program)
    diagnostics = [d for d in check_program(program) if d.severity == "error"]
    if diagnostics:
        raise SemanticError(diagnostics)
    setup = build_run(config or RunConfig())
    try:
        return execute(program, {} if input is None else input, setup.options)
    finally:
        setup.close()
