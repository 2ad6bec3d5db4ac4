"""The run use case: check a program, build its providers, run it, journal it.

The CLI's `run`, the Python API's `agentscript.run`, autonomous windows and the refinement of
experiences all run programs through `run`; a resume (agentscript.app.resume) through
`run_program`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscript.app.programs import load
from agentscript.lang import ast
from agentscript.lang.checker import check_program
from agentscript.lang.errors import SemanticError
from agentscript.runtime.errors import AgentScriptError

if TYPE_CHECKING:
    from agentscript.app.configuration import RunConfig
    from agentscript.runtime.interpreter import RunResult


def run(
    program: ast.Program | str | Path,
    input: Any = None,
    config: RunConfig | None = None,
) -> RunResult:
    """Check, then run the entry function. Raises SemanticError if the program has errors, or an
    AgentScriptError (with `.trace` holding the trace so far) if the run fails."""
    if not isinstance(program, ast.Program):
        program = load(program)
    from agentscript.app.configuration import RunConfig

    return run_program(program, {} if input is None else input, config or RunConfig())


def run_program(
    program: ast.Program, input_value: Any, config: RunConfig, resumed_from: str | None = None
) -> RunResult:
    """`run` with everything given; the journal start names the run this one resumes."""
    from agentscript.app.model_choice import with_models

    program = with_models(program, config.models)
    diagnostics = [d for d in check_program(program) if d.severity == "error"]
    if diagnostics:
        raise SemanticError(diagnostics)
    # The runtime is imported here, not at module level: loading and checking stay fast.
    from agentscript.app.composition import build_run
    from agentscript.app.release_defaults import settle
    from agentscript.runtime.interpreter import execute

    config = settle(config, program.source_path)
    setup = build_run(config, program.source_path)
    journal = setup.journal
    if journal is not None:
        entry = (
            f"{config.agent or ''}.{config.function or ''}"
            if config.agent or config.function
            else None
        )
        journal.start_run(
            program.source_path,
            input_value,
            entry=entry,
            workspace=setup.workspace,
            resumed_from=resumed_from,
            models=config.models,
        )
    try:
        result = execute(program, input_value, setup.options)
    except AgentScriptError as error:
        if journal is not None:
            journal.finish_run("error", error=error, usage=error.spent)
            error.journal = journal
        raise
    except KeyboardInterrupt:
        if journal is not None:
            journal.finish_run("interrupted")
        raise
    except BaseException as error:
        if journal is not None:
            journal.finish_run("error", error=error)
        raise
    finally:
        setup.close()
    if journal is not None:
        journal.finish_run("ok", value=result.value, usage=result.usage)
        result.journal = journal
    return result
