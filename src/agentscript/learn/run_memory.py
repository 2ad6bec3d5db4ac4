"""What the journal's background step does after a run: a run memory, then the run's lessons.

Every finished run (ok or error) leaves one episodic entry in the long-term memory service
(goal, outcome, tools, files, duration) under the key `run:<run id>` in the workspace scope, so
`recall` and the digest know what was done when; then its experiences are distilled (see
`experiences`). Both are idempotent per run. Nothing here can fail a run: the journal reports
what went wrong as its problems. A run imports this module when it starts, so it stays cheap:
the memory service and the rules are imported by the background step that uses them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscript.runtime.jsjson import escape_lone_surrogates

if TYPE_CHECKING:
    from agentscript.learn.execution_trace import TaskExecutionTrace
    from agentscript.learn.experiences import Refiner
    from agentscript.learn.journal import Journal
    from agentscript.learn.journal_store import JournalEntry, RunRecord
    from agentscript.learn.ports import SandboxedRunner
    from agentscript.memory.service import MemoryService
    from agentscript.runtime.ports import LlmProvider

RUN_MEMORY_REASON = "run-memory"
# Opens the memory service of a workspace on a database (the application layer passes the
# memory.yml-configured opener; the bare `MemoryService.open` is the default).
MemoryOpener = Callable[[str | None, "str | Path"], "MemoryService"]


def run_memory_key(run_id: str) -> str:
    return f"run:{run_id}"


def write_run_memory(
    service: MemoryService, run: RunRecord, trace: TaskExecutionTrace
) -> dict[str, Any]:
    """The run's episodic entry, written once: `{id, action}` with action `created`, or
    `exists` when the key already has a version (learning a run again adds nothing)."""
    from agentscript.learn.experiences import goal_text, signature_tag, task_signature

    key = run_memory_key(run.run_id)
    scope = service.workspace
    versions = service.history(key, scope=scope).versions
    if versions:
        return {"id": versions[0].entry.id, "action": "exists"}
    program = run.program.replace("\\", "/").rsplit("/", 1)[-1] if run.program else "program"
    task = goal_text(trace.goal, run.workspace)
    outcome = "succeeded" if trace.status == "ok" else "failed"
    title = f"{program} {outcome}" + (f": {task}" if task else "")
    tags = ["run", trace.status]
    signature = task_signature(run.program, run.entry)
    if signature:
        tags.append(signature_tag(signature))
    # Derived from the run's data, which may hold lone surrogates the memory service refuses:
    # they are kept as their escapes.
    written = service.remember(
        escape_lone_surrogates(run_memory_text(run, trace)),
        kind="episodic",
        key=key,
        title=escape_lone_surrogates(title[:120]),
        tags=[escape_lone_surrogates(tag) for tag in tags],
        scope=scope,
        event_time=datetime.fromtimestamp(run.started_at, UTC),
        source={"run": run.run_id, "reason": RUN_MEMORY_REASON},
    )
    return {"id": written.id, "action": written.action}


def run_memory_text(run: RunRecord, trace: TaskExecutionTrace) -> str:
    """The body of a run memory: only summaries the execution trace already holds."""
    from agentscript.learn.experiences import chain_text, goal_text

    program = run.program.replace("\\", "/").rsplit("/", 1)[-1] if run.program else "program"
    lines = [f"Run {run.run_id} of {program}" + (f" ({run.entry})" if run.entry else "")]
    task = goal_text(trace.goal, run.workspace)
    if task:
        lines.append(f"Goal: {task}")
    if trace.status == "ok":
        lines.append("Outcome: ok")
    else:
        lines.append(f"Outcome: {trace.status}: {trace.failure_reason}")
    tools = Counter(step["tool"] for step in trace.tool_chain)
    if tools:
        used = ", ".join(f"{tool} ×{count}" if count > 1 else tool for tool, count in tools.items())
        lines.append(
            f"Tools used: {used} (in order: {chain_text([s['tool'] for s in trace.tool_chain])})"
        )
    else:
        lines.append("Tools used: none")
    if trace.files:
        touched = ", ".join(
            f"{touch['path']} ({', '.join(touch['actions'])})" for touch in trace.files[:20]
        )
        lines.append(f"Files touched: {touched}")
    refused = [step["tool"] for step in trace.approval_trace if step["decision"] == "refused"]
    if refused:
        lines.append(f"Approvals refused: {', '.join(refused)}")
    if run.ended_at is not None:
        lines.append(f"Duration: {run.ended_at - run.started_at:.2f} s")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class LearnModel:
    """The model that rewrites new experiences: `llm` answers (None: the real model router
    with `environ`); `uri` names the model (None: the one the run's first generate used);
    `runner` runs the rewriting program (the application layer's sandboxed run)."""

    runner: SandboxedRunner
    llm: LlmProvider | None = None
    uri: str | None = None
    environ: Mapping[str, str] | None = None

    def refiner(self, entries: Sequence[JournalEntry]) -> Refiner | None:
        from agentscript.learn.experiences import Refiner

        uri = self.uri or program_model(entries)
        if uri is None and self.llm is None:
            return None
        if uri is None:
            return Refiner(self.llm, environ=self.environ, runner=self.runner)
        return Refiner(self.llm, uri, self.environ, runner=self.runner)


def program_model(entries: Sequence[JournalEntry]) -> str | None:
    """The model URI of the run's first generate, if it had one."""
    for entry in entries:
        if entry.kind != "generate" or not isinstance(entry.data, dict):
            continue
        context = entry.data.get("context")
        model = context.get("model") if isinstance(context, dict) else None
        if isinstance(model, dict) and isinstance(model.get("uri"), str):
            return str(model["uri"])
    return None


class RunLearner:
    """The journal's after-run step (`JournalSink.learner`): opens the memory database, writes
    the run memory (unless memory.yml says `auto_sink: false`), distils and stores the run's
    experiences (unless `distil` is False: a run told not to learn still leaves its run
    memory), and keeps the task graph up (learn/upkeep.py: decay and pruning, once a day).
    Runs that were interrupted are left alone. Returns the problems, one line each; never
    raises."""

    def __init__(
        self,
        database: str | Path,
        learn_model: LearnModel | None = None,
        open_memory: MemoryOpener | None = None,
        *,
        distil: bool = True,
    ) -> None:
        # A SQLite file or a PostgreSQL URI, as MemoryService.open takes it.
        self.database = database
        self.learn_model = learn_model
        self.open_memory = open_memory
        self.distil = distil

    def __call__(
        self,
        journal: Journal,
        run: RunRecord,
        entries: list[JournalEntry],
        trace: TaskExecutionTrace,
    ) -> list[str]:
        if trace.status not in ("ok", "error"):
            return []
        from agentscript.learn.experiences import learn_from_run
        from agentscript.learn.upkeep import keep_up

        problems: list[str] = []
        try:
            service = self._open(run.workspace)
        except Exception as problem:  # learning must never break the run it learns from
            return [f"Learning: the memory at {self.database} cannot be opened: {problem}"]
        with service:
            try:
                # memory.yml `auto_sink: false`: the workspace wants no run memories.
                if service.config.auto_sink:
                    write_run_memory(service, run, trace)
            except Exception as problem:
                problems.append(f"Learning: the run memory was not written: {problem}")
            if not self.distil:
                return problems
            try:
                refiner = self.learn_model.refiner(entries) if self.learn_model else None
                report = learn_from_run(
                    service, journal.graph, run, trace, entries, refiner=refiner
                )
                problems += [f"Learning: {problem}" for problem in report.problems]
            except Exception as problem:
                problems.append(f"Learning: experiences were not distilled: {problem}")
            try:
                keep_up(journal.graph, service)
            except Exception as problem:
                problems.append(f"Learning: the task graph's upkeep failed: {problem}")
        return problems

    def _open(self, workspace: str | None) -> MemoryService:
        if self.open_memory is not None:
            return self.open_memory(workspace, self.database)
        from agentscript.memory.service import MemoryService

        return MemoryService.open(workspace, database=self.database)
