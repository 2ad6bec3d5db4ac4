"""Learning after a run: the learner a run's configuration asks for, wired to the configured
memory service.

The journal calls the learner (agentscript.learn.run_memory.RunLearner) once a journaled run
has ended; this module decides which memory database it writes to and which model, if any,
rewrites the experiences it distils. It is imported when a learning run starts, so it imports
nothing heavy itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscript.learn.run_memory import LearnModel, RunLearner

if TYPE_CHECKING:
    from agentscript.app.configuration import RunConfig
    from agentscript.lang import ast
    from agentscript.memory.service import MemoryService
    from agentscript.runtime.ports import LlmProvider

# `RunConfig.learn_model` value that refines with the model the program itself used.
PROGRAM_MODEL = "program"


def learner_for(config: RunConfig, database: str | Path | None = None) -> RunLearner:
    """The learner a run's configuration asks for. The memory database is `database`, else the
    run's `memory_db` (which `memory://` tools open too), else `$AGENTSCRIPT_MEMORY_DB`, else
    `~/.agentscript/memory.db`, decided now, when the run starts.

    `config.learn_model`: None keeps the rules' text; "program" rewrites with the program's
    own model when the run talks to a live one (the real router, or a provider handed in as
    `config.model`; never the mock, a dry run or a replay); any other text is a model URI;
    a provider is used as it is."""
    chosen = config.learn_model
    learn_model: LearnModel | None = None
    if chosen == PROGRAM_MODEL:
        if not isinstance(config.model, str):
            learn_model = LearnModel(sandboxed_run, llm=config.model)
        elif config.model == "real" and config.replay is None:
            learn_model = LearnModel(sandboxed_run, environ=config.environ)
    elif isinstance(chosen, str):
        learn_model = LearnModel(sandboxed_run, uri=chosen, environ=config.environ)
    elif chosen is not None:
        learn_model = LearnModel(sandboxed_run, llm=chosen)
    target = database if database is not None else config.memory_db
    # A run that talks to no live model learns into the bare service, so memory.yml's models
    # (lazy compaction, re-ranking) are never called on behalf of a mock or a replay.
    offline = config.model in ("mock", "dry-run") or config.replay is not None
    return RunLearner(
        target if target is not None else _default_database(),
        learn_model,
        None if offline else open_learning_memory,
    )


def sandboxed_run(
    program: ast.Program,
    input_value: Any,
    *,
    llm: LlmProvider | None,
    environ: Mapping[str, str] | None,
    max_calls: int,
) -> Any:
    """The learn port's sandboxed run (agentscript.learn.ports.SandboxedRunner): the program's
    own model or the real router, mock tools and memory, no journal, at most `max_calls`."""
    from agentscript.app.configuration import RunConfig
    from agentscript.app.run import run

    config = RunConfig(
        model=llm if llm is not None else "real",
        environ=environ,
        journal=False,
        learn=False,
        mock_tools=True,
        mock_memory=True,
        max_calls=max_calls,
    )
    return run(program, input_value, config).value


def open_learning_memory(workspace: str | None, database: str | Path) -> MemoryService:
    """The configured memory service the learner writes the run's memory and lessons to."""
    from agentscript.app.memory_service import open_memory_service

    return open_memory_service(workspace, database=database)


def _default_database() -> Path:
    """MemoryService.open's default database, decided the same way, but without importing the
    memory service, which would cost every run's start more than the run itself."""
    configured = os.environ.get("AGENTSCRIPT_MEMORY_DB")
    return Path(configured) if configured else Path.home() / ".agentscript" / "memory.db"
