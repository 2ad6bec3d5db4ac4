"""Learning from runs: what a run's configuration asks to learn, and when it is learned.

A run from the command line only queues itself for learning (`learning_request`, written with
its end, so the process exits without waiting for the memory service); the learning happens
when the workspace's memory is next read (`catch_up`, called by the Workspace, `memory://`
tools and `agentscript learn`; agentscript.learn.backlog does the work). A run whose learning
needs a live provider object (handed in from Python) cannot be queued: it learns before the
process exits, as the journal's background step (`learner_for`). Either way the learner
(agentscript.learn.run_memory.RunLearner) writes to the memory database decided when the run
started, rewriting experiences with the model the run asked for. Imported when a journaled
run starts, so it imports nothing heavy itself.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscript.app.configuration import learns_from

if TYPE_CHECKING:
    from agentscript.app.configuration import RunConfig
    from agentscript.lang import ast
    from agentscript.learn.backlog import BacklogReport
    from agentscript.learn.run_memory import RunLearner
    from agentscript.memory.service import MemoryService
    from agentscript.runtime.ports import LlmProvider

# `RunConfig.learn_model` value that refines with the model the program itself used.
PROGRAM_MODEL = "program"
# How often a long-lived reader looks for runs to learn from.
CATCH_UP_SECONDS = 1.0


def learner_for(config: RunConfig, database: str | Path | None = None) -> RunLearner:
    """The learner a run's configuration asks for. The memory database is `database`, else the
    run's `memory_db` (which `memory://` tools open too), else `$AGENTSCRIPT_MEMORY_DB`, else
    `~/.agentscript/memory.db`, decided now, when the run starts.

    `config.learn_model`: None keeps the rules' text; "program" rewrites with the program's
    own model when the run talks to a live one (the real router, or a provider handed in as
    `config.model`; never the mock, a dry run or a replay); any other text is a model URI;
    a provider is used as it is."""
    from agentscript.learn.run_memory import LearnModel, RunLearner

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
    return RunLearner(
        target if target is not None else _default_database(),
        learn_model,
        None if _offline(config) else open_learning_memory,
        distil=learns_from(config),
    )


def learning_request(config: RunConfig) -> dict[str, Any] | None:
    """What to learn from a run of `config` with, as JSON data kept in the journal's learning
    backlog: the memory database, the learn model (a URI or "program") and whether the run
    was offline, and whether experiences are distilled (False: the run memory only); None when
    the learning needs a provider object that cannot be kept."""
    if not isinstance(config.model, str) or not (
        config.learn_model is None or isinstance(config.learn_model, str)
    ):
        return None
    if config.learn_model is not None and config.environ is not None:
        return None  # the environment that reaches the model is not kept in the journal
    return {
        "database": database_label(config.memory_db),
        "learn_model": config.learn_model,
        "offline": _offline(config),
        "live": config.model == "real" and config.replay is None,
        "distil": learns_from(config),
    }


def learner_from_request(request: dict[str, Any]) -> RunLearner:
    """The learner a queued run's request asks for (see `learning_request`)."""
    from agentscript.learn.run_memory import LearnModel, RunLearner

    chosen = request.get("learn_model")
    learn_model: LearnModel | None = None
    if chosen == PROGRAM_MODEL:
        if request.get("live"):
            learn_model = LearnModel(sandboxed_run)
    elif isinstance(chosen, str):
        learn_model = LearnModel(sandboxed_run, uri=chosen)
    database = str(request["database"])
    return RunLearner(
        database,
        learn_model,
        None if request.get("offline") else open_learning_memory,
        # Requests queued before `distil` existed were all made to learn.
        distil=bool(request.get("distil", True)),
    )


def catch_up(workspace: str | Path, database: str | Path | None = None) -> BacklogReport:
    """Learn from the runs in the workspace's journal that wait to be learned into the memory
    `database` (None: the default one), before that memory is read."""
    from agentscript.learn.backlog import BacklogReport, learn_backlog
    from agentscript.learn.journal import journal_path

    path = journal_path(workspace)
    if not path.is_file():
        return BacklogReport()
    wanted = database_label(database)

    def learner_for(request: dict[str, Any]) -> RunLearner | None:
        if request.get("database") != wanted:
            return None
        return learner_from_request(request)

    from agentscript.learn.journal import Journal

    journal = Journal.open(path)
    try:
        return learn_backlog(journal, learner_for, path.parent / "learning-locks")
    finally:
        journal.close()


class LearningBeforeReads:
    """The memory service's read hook that first learns from the runs waiting in the
    workspace's journal (at most once every `interval` seconds, so a long-lived reader such
    as the MCP server stays current without paying on every read), then runs the hook that
    was there before (lazy compaction). `problems` keeps what went wrong."""

    def __init__(
        self,
        service: MemoryService,
        journals: list[Path],
        database: str | Path | None,
        interval: float = CATCH_UP_SECONDS,
    ) -> None:
        self.journals = journals
        self.database = database
        self.interval = interval
        self.problems: list[str] = []
        self._previous = service.before_read
        self._last: float | None = None
        service.before_read = self

    def __call__(self, scopes: tuple[str, ...]) -> dict[str, Any] | None:
        if self._last is None or time.monotonic() - self._last >= self.interval:
            self.catch_up()
        return self._previous(scopes) if self._previous is not None else None

    def catch_up(self) -> None:
        """Learn from the waiting runs now."""
        self._last = time.monotonic()
        for workspace in self.journals:
            self.problems += catch_up(workspace, self.database).problems


@dataclass(frozen=True, slots=True)
class LearnNowReport:
    """What `agentscript learn` did, and how many approval policy rules the user's repeated
    approvals now suggest (`agentscript learn proposals` shows them)."""

    backlog: BacklogReport
    proposals: int

    def to_json(self) -> dict[str, Any]:
        return {**self.backlog.to_json(), "proposals": self.proposals}


def learn_now(workspace: str | Path | None, database: str | Path | None = None) -> LearnNowReport:
    """`agentscript learn`: catch up the workspace (which must exist) at once."""
    from agentscript.app.lessons import policy_proposals
    from agentscript.app.workspace import Workspace

    root = Workspace(workspace).root
    backlog = catch_up(root, database)
    return LearnNowReport(backlog, len(policy_proposals(root).proposals))


def database_label(database: str | Path | None) -> str:
    """The memory database as the backlog names it: a URI as it is, a file as an absolute
    path (the default one when None), so a run and a later reader agree on it."""
    if database is None:
        return str(_default_database().absolute())
    text = str(database)
    return text if "://" in text else str(Path(text).absolute())


def _offline(config: RunConfig) -> bool:
    """A run that talks to no live model learns into the bare service, so memory.yml's models
    (lazy compaction, re-ranking) are never called on behalf of a mock or a replay."""
    return config.model in ("mock", "dry-run") or config.replay is not None


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
