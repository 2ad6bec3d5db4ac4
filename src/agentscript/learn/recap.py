"""A structural recap of recent runs: how many, how they ended, by workspace and program.

Reflection and autonomous runs are given it so an agent can notice patterns across runs ("the
report program keeps failing") without reading any of them. It is built from the journal's run
records alone: counts, statuses, run ids, times and program file names, never an input, a
prompt, a value, an error message or a file's contents. No model is involved and the same
journal, window and clock always give the same recap.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any

from agentscript.learn.journal import Journal, effective_status
from agentscript.learn.journal_store import RunRecord, RunStatus

# How far back reflection's recap looks before the run it reflects on.
RECAP_WINDOW_SECONDS = 24 * 3600.0
STATUSES: tuple[RunStatus, ...] = ("ok", "error", "interrupted", "running")


@dataclass(frozen=True, slots=True)
class ProgramRecap:
    """The runs of one program (and entry) in one workspace."""

    workspace: str | None
    program: str
    entry: str | None
    counts: dict[str, int]
    events: int
    last_run: str
    last_status: RunStatus
    last_at: float

    @property
    def runs(self) -> int:
        return sum(self.counts.values())

    def line(self) -> str:
        """`- /work/app: report.as: 3 runs (2 ok, 1 error), 41 events; last 2027… error at …`"""
        name = self.program + (f" {self.entry}" if self.entry else "")
        return (
            f"- {self.workspace or '(no workspace)'}: {name}: {_plural(self.runs, 'run')} "
            f"({_counts(self.counts)}), {_plural(self.events, 'event')}; last {self.last_run} "
            f"{self.last_status} at {_iso(self.last_at)}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "workspace": self.workspace,
            "program": self.program,
            "entry": self.entry,
            "runs": self.runs,
            **{status: self.counts.get(status, 0) for status in STATUSES},
            "events": self.events,
            "last_run": self.last_run,
            "last_status": self.last_status,
            "last_at": _iso(self.last_at),
        }


@dataclass(frozen=True, slots=True)
class Recap:
    """The runs active between `since` and `until`, in total and per program."""

    since: float
    until: float
    counts: dict[str, int]
    programs: tuple[ProgramRecap, ...]

    @property
    def runs(self) -> int:
        return sum(self.counts.values())

    @property
    def empty(self) -> bool:
        return not self.programs

    def lines(self) -> list[str]:
        head = f"Runs since {_iso(self.since)}: "
        if self.empty:
            return [head + "none"]
        return [head + f"{self.runs} ({_counts(self.counts)})"] + [
            program.line() for program in self.programs
        ]

    def text(self) -> str:
        return "\n".join(self.lines())

    def to_json(self) -> dict[str, Any]:
        return {
            "since": _iso(self.since),
            "until": _iso(self.until),
            "runs": self.runs,
            **{status: self.counts.get(status, 0) for status in STATUSES},
            "programs": [program.to_json() for program in self.programs],
        }


def recap(journal: Journal, since: float, now: float | None = None) -> Recap:
    """The runs of `journal` active at or after `since` (started, still going or ended then),
    up to `now` (the journal's clock by default), grouped by workspace, program and entry in
    that order. A run whose process is gone counts as interrupted."""
    until = journal.clock() if now is None else now
    groups: dict[tuple[str, str, str], list[tuple[RunRecord, RunStatus]]] = {}
    for run in journal.store.runs():
        last_sign = run.ended_at if run.ended_at is not None else run.heartbeat_at
        if last_sign < since or run.started_at > until:
            continue
        key = (run.workspace or "", _program(run.program), run.entry or "")
        groups.setdefault(key, []).append((run, effective_status(run, until)))
    programs = []
    totals: Counter[str] = Counter()
    for (workspace, program, entry), runs in sorted(groups.items()):
        counts = Counter(status for _, status in runs)
        totals.update(counts)
        last, last_status = max(runs, key=lambda item: (item[0].started_at, item[0].run_id))
        programs.append(
            ProgramRecap(
                workspace=workspace or None,
                program=program,
                entry=entry or None,
                counts={status: counts[status] for status in STATUSES if counts[status]},
                events=sum(run.events for run, _ in runs),
                last_run=last.run_id,
                last_status=last_status,
                last_at=last.ended_at if last.ended_at is not None else last.started_at,
            )
        )
    return Recap(
        since=since,
        until=until,
        counts={status: totals[status] for status in STATUSES if totals[status]},
        programs=tuple(programs),
    )


def _program(path: str | None) -> str:
    """A program's file name only: where it lies is not the recap's business."""
    return PurePath(path.replace("\\", "/")).name if path else "(no program)"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{counts[status]} {status}" for status in STATUSES if counts.get(status))


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
