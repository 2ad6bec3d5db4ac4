"""Learning from runs later: the journal's backlog of ended runs that nobody learned from yet.

A journaled run does not learn on its way out: its end and its learning request are written
in one transaction (JournalSink.learning_request), and the process exits. Whoever next reads
what the runs teach (the memory service of the workspace, `memory://` tools, `agentscript
learn`) calls `learn_backlog` first, which, for each queued run, adds it to the task graph
with its execution trace, hands both to the learner the request asks for (run memory and
experiences, agentscript.learn.run_memory), and takes the run out of the backlog. Like
compaction in the memory service, the work is done lazily and exactly once: a run is only
taken out after it was learned from, and each run is learned under its own lock, so processes
catching up at the same time split the backlog instead of doing it twice. Nothing here raises:
what goes wrong is returned as problems, and the run stays in the journal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentscript.learn.journal import Journal, Learner
from agentscript.learn.journal_store import file_safe_run_id
from agentscript.learn.locks import LockTimeout, file_lock

# Makes the learner a queued run's request asks for, or None to leave the run queued (a
# request for another memory database than the reader's).
LearnerFor = Callable[[dict[str, Any]], Learner | None]


@dataclass(slots=True)
class BacklogReport:
    """What one catch-up did: runs learned from, runs left for another reader or process."""

    learned: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"learned": self.learned, "left": self.left, "problems": self.problems}


def learn_backlog(journal: Journal, learner_for: LearnerFor, lock_dir: Path) -> BacklogReport:
    """Learn from every queued run of `journal` whose request `learner_for` accepts, oldest
    first. `lock_dir` holds the per-run locks (beside the journal)."""
    report = BacklogReport()
    try:
        queued = journal.store.backlog()
    except Exception as problem:  # a reader must never fail because the journal is broken
        report.problems.append(f"Learning backlog of {journal.store.location}: {problem}")
        return report
    for run_id, request in queued:
        learner = learner_for(request)
        if learner is None:
            report.left.append(run_id)
            continue
        try:
            with file_lock(lock_dir / f"{file_safe_run_id(run_id)}.lock", timeout=0):
                _learn_one(journal, run_id, learner, report)
        except LockTimeout:
            report.left.append(run_id)  # another process is learning it right now
    return report


def _learn_one(journal: Journal, run_id: str, learner: Learner, report: BacklogReport) -> None:
    try:
        if run_id not in {queued for queued, _ in journal.store.backlog()}:
            return  # learned by another process since the backlog was read
        run = journal.store.run(run_id)
        if run is None:
            journal.store.learned(run_id)
            return
        entries = journal.store.entries(run_id)
        trace = journal.learn(run, entries)
        report.problems += learner(journal, run, entries, trace)
        journal.store.learned(run_id)
        report.learned.append(run_id)
    except Exception as problem:  # the run stays queued for the next reader
        report.problems.append(f"Learning from run {run_id} failed: {problem}")
