"""Carry out one job from the journal: run it, or take over the attempt a dead worker left.

Each attempt runs under a run id made from the job's id (jobs.attempt_run_id: the job's id,
then `ID-2`…), so the queue's replay of the job after a crash walks the same ids:

- an attempt the journal never saw is run now (resuming the attempt before it, if any);
- an attempt that ended `ok` or `error` is the job's outcome (an error of the program, a
  budget, a refused approval: never retried, as `runs resume` never retries them);
- an attempt `interrupted` (its process died) is resumed by the next attempt;
- an attempt still `running` belongs to a live process: this one waits for it to end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscript.app.queue.jobs import JobOutcome, RunJob, attempt_run_id, program_for

if TYPE_CHECKING:
    from agentscript.lang import ast
    from agentscript.runtime.ports import LlmProvider

# How often a worker looks again at an attempt another live process is running.
WAIT_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class WorkerPolicy:
    """How a worker carries out every attempt: `approve` answers calls that need approval
    (nobody is at a worker's terminal), `rerun_unfinished` runs again a call with effects that
    a dead attempt started and never finished (else the run fails saying so, as `runs resume`
    refuses it), and `wrap_model` goes around each attempt's real model (the limits every
    worker shares)."""

    approve: str | None = None
    rerun_unfinished: bool = False
    wrap_model: Callable[[LlmProvider], LlmProvider] | None = None


def carry_out(job: RunJob, job_id: str, policy: WorkerPolicy | None = None) -> JobOutcome:
    """The outcome of the job the queue knows as `job_id`."""
    policy = policy or WorkerPolicy()
    program = program_for(job)
    if isinstance(program, str):
        return JobOutcome(False, error=program)
    runs: list[str] = []
    previous: str | None = None
    number = 0
    while True:
        number += 1
        run_id = attempt_run_id(job_id, number)
        runs.append(run_id)
        state = _journaled(job, run_id)
        while state is not None and state[0] == "running":
            time.sleep(WAIT_SECONDS)
            state = _journaled(job, run_id)
        if state is None:
            return _attempt(job, program, run_id, previous, runs, policy)
        status, end = state
        if status == "ok":
            return JobOutcome(True, value=end.get("value"), runs=runs)
        if status == "error":
            return JobOutcome(False, error=str(end.get("error") or "the run failed"), runs=runs)
        previous = run_id  # interrupted: the next attempt resumes it


def _attempt(
    job: RunJob,
    program: ast.Program,
    run_id: str,
    previous: str | None,
    runs: list[str],
    policy: WorkerPolicy,
) -> JobOutcome:
    import agentscript
    from agentscript.app.resume import resume
    from agentscript.runtime.errors import AgentScriptError

    config = agentscript.RunConfig(
        run_id=run_id,
        workspace=job.workspace,
        approve=policy.approve,  # type: ignore[arg-type]
        rerun_unfinished=policy.rerun_unfinished,
        max_calls=job.max_calls,
        max_tokens=job.max_tokens,
        max_seconds=job.max_seconds,
        models=list(job.models),
        variants=dict(job.variants),
        agent=job.agent,
        function=job.function,
        wrap_real_model=policy.wrap_model,
    )
    try:
        if previous is None:
            result = agentscript.run(program, job.input, config)
        else:
            result = resume(previous, config)
    except AgentScriptError as error:
        located = error.located() if hasattr(error, "located") else str(error)
        return JobOutcome(False, error=located, runs=runs, usage=dict(error.spent or {}))
    return JobOutcome(True, value=result.value, runs=runs, usage=dict(result.usage))


def _journaled(job: RunJob, run_id: str) -> tuple[str, dict[str, Any]] | None:
    """The attempt's status and the data of its end, or None when the journal never saw it."""
    from agentscript.learn.journal import run_journal_path, shared_journal
    from agentscript.learn.journal_store import RUN_KIND

    journal = shared_journal(run_journal_path(job.workspace, Path(job.program).parent))
    record = journal.store.run(run_id)
    if record is None:
        return None
    status = journal.status(record)
    end: dict[str, Any] = {}
    if status in ("ok", "error"):
        for entry in journal.store.entries(run_id):
            if entry.kind == RUN_KIND and entry.phase == "end" and isinstance(entry.data, dict):
                end = entry.data
    return status, end
