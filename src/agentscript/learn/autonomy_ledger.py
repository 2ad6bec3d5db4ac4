"""The autonomy ledger: one JSON line per unattended run, so autonomy can be measured.

A run nobody watches must still leave an account of what it cost and whether it achieved
anything; "it ran" is not enough. Each `AutonomyRun` records its kind, task, start, duration,
tokens, tool calls and one of four outcomes (`done`, `no-update`, `blocked`, `error`), so a
heartbeat that keeps answering "(no update)" or a desire that keeps hitting its budget shows up
in `agentscript autonomy summary` instead of passing for success.

The ledger is a JSONL file at `<workspace>/.agentscript/autonomy/runs.jsonl`. Processes append
to it under a cross-process lock and trim it to its newest `MAX_LINES` lines under the same
lock, so concurrent schedulers neither lose nor tear lines. Recording never fails a run: a
ledger that cannot be written is reported as a problem. Reading skips lines it cannot parse,
so one damaged line costs one record, not the summary.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

# Where a workspace keeps its ledger, and how many runs it keeps (the oldest go first).
LEDGER_FILE = Path(".agentscript") / "autonomy" / "runs.jsonl"
MAX_LINES = 2000
# The lock is held only for one append and trim: a writer that waits longer than this gives up
# (and reports it) rather than hold up its run, and a lock older than LOCK_STALE is a crash.
LOCK_TIMEOUT = 2.0
LOCK_STALE = 60.0
# How many runs the summary lists, newest first, and how wide its bars are.
RECENT_RUNS = 10
BAR_WIDTH = 30
DAY_SECONDS = 86_400.0
# Notes are one line; a long error message is cut to this many characters.
NOTE_LIMIT = 300

# The windows `agentscript autonomy run` runs; a reflection on a run is recorded too.
WindowKind = Literal["idle", "heartbeat", "review", "desire"]
Kind = Literal[WindowKind, "reflect"]
Outcome = Literal["done", "no-update", "blocked", "error"]
WINDOW_KINDS: tuple[WindowKind, ...] = get_args(WindowKind)
KINDS: tuple[Kind, ...] = (*WINDOW_KINDS, "reflect")
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)

Clock = Callable[[], float]


def ledger_path(workspace: str | Path) -> Path:
    return Path(workspace) / LEDGER_FILE


def one_line(text: str, limit: int = NOTE_LIMIT) -> str:
    """`text` on one line, cut to `limit` characters: notes are for a table, not a log."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class AutonomyRun:
    """One unattended run: what it was for, what it cost and how it ended.

    `started_at` is seconds since the epoch here and an ISO 8601 UTC time in the file.
    """

    kind: Kind
    started_at: float
    duration_ms: int
    input_tokens: int
    output_tokens: int
    tool_calls: int
    outcome: Outcome
    note: str = ""
    task: str | None = None
    # A reflection's count of proposed operations (None for the other kinds), for the
    # histogram across reflections.
    operations: int | None = None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind}
        if self.task is not None:
            data["task"] = self.task
        data.update(
            started_at=iso_time(self.started_at),
            duration_ms=self.duration_ms,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            tool_calls=self.tool_calls,
            outcome=self.outcome,
            note=self.note,
        )
        if self.operations is not None:
            data["operations"] = self.operations
        return data

    @classmethod
    def from_json(cls, data: Any) -> AutonomyRun:
        """The run a ledger line holds; ValueError when any field is missing or wrong."""
        if not isinstance(data, dict):
            raise ValueError("a ledger line must hold a JSON object")
        kind = data.get("kind")
        outcome = data.get("outcome")
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}")
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}")
        task = data.get("task")
        note = data.get("note", "")
        if (task is not None and not isinstance(task, str)) or not isinstance(note, str):
            raise ValueError("task and note must be strings")
        started = data.get("started_at")
        if not isinstance(started, str):
            raise ValueError("started_at must be an ISO 8601 time")
        return cls(
            kind=kind,
            started_at=datetime.fromisoformat(started).timestamp(),
            duration_ms=_count(data, "duration_ms"),
            input_tokens=_count(data, "input_tokens"),
            output_tokens=_count(data, "output_tokens"),
            tool_calls=_count(data, "tool_calls"),
            outcome=outcome,
            note=note,
            task=task,
            operations=_count(data, "operations") if "operations" in data else None,
        )


def _count(data: dict[str, Any], name: str) -> int:
    value = data.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a whole number of at least 0")
    return value


def iso_time(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class KindSummary:
    """Runs of one kind (or of all kinds, as `total`) in the summary window."""

    kind: str
    runs: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    outcomes: dict[Outcome, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "runs": self.runs,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "outcomes": dict(self.outcomes),
        }


@dataclass(frozen=True, slots=True)
class AutonomySummary:
    """What the ledger says about the last `days` days: per kind, in total, and the newest runs."""

    days: float
    since: float
    kinds: list[KindSummary]
    total: KindSummary
    recent: list[AutonomyRun]
    # Reflections by how many operations they proposed (0 → how many reflections, …): many at
    # 0 after substantial runs is the under-reflection seed 004 asks to see.
    operation_counts: dict[int, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "days": self.days,
            "since": iso_time(self.since),
            "kinds": [kind.to_json() for kind in self.kinds],
            "total": self.total.to_json(),
            "recent": [run.to_json() for run in self.recent],
            "operation_counts": {str(count): runs for count, runs in self.operation_counts.items()},
        }


def summarize(runs: Sequence[AutonomyRun], days: float, since: float) -> AutonomySummary:
    """Counts, tokens and outcomes per kind (in `KINDS` order, only kinds that ran), and the
    `RECENT_RUNS` newest runs. `runs` must already be limited to the window."""
    per_kind: dict[str, list[AutonomyRun]] = {}
    for run in runs:
        per_kind.setdefault(run.kind, []).append(run)
    newest = sorted(runs, key=lambda run: run.started_at, reverse=True)
    return AutonomySummary(
        days=days,
        since=since,
        kinds=[_tally(kind, per_kind[kind]) for kind in KINDS if kind in per_kind],
        total=_tally("total", runs),
        recent=newest[:RECENT_RUNS],
        operation_counts=operation_histogram(runs),
    )


def operation_histogram(runs: Sequence[AutonomyRun]) -> dict[int, int]:
    """How many reflections proposed 0, 1, 2… operations, every count up to the largest."""
    counts = [
        run.operations for run in runs if run.kind == "reflect" and run.operations is not None
    ]
    if not counts:
        return {}
    return {size: counts.count(size) for size in range(max(counts) + 1)}


def _tally(kind: str, runs: Sequence[AutonomyRun]) -> KindSummary:
    outcomes: dict[Outcome, int] = dict.fromkeys(OUTCOMES, 0)
    for run in runs:
        outcomes[run.outcome] += 1
    return KindSummary(
        kind=kind,
        runs=len(runs),
        input_tokens=sum(run.input_tokens for run in runs),
        output_tokens=sum(run.output_tokens for run in runs),
        outcomes=outcomes,
    )


class Ledger:
    """The JSONL ledger at `path`; its lock file is `<path>.lock`."""

    def __init__(
        self, path: str | Path, *, max_lines: int = MAX_LINES, clock: Clock = time.time
    ) -> None:
        if max_lines < 1:
            raise ValueError(f"max_lines must be at least 1, got {max_lines}")
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.max_lines = max_lines
        self.clock = clock

    @classmethod
    def for_workspace(
        cls, workspace: str | Path, *, max_lines: int = MAX_LINES, clock: Clock = time.time
    ) -> Ledger:
        return cls(ledger_path(workspace), max_lines=max_lines, clock=clock)

    def append(self, run: AutonomyRun) -> str | None:
        """Add `run` as one line, trimming the oldest beyond `max_lines`. Returns None, or the
        problem that kept it from being recorded: the run it describes has already happened,
        and a ledger that cannot be written must not turn it into a failure."""
        # The lock module brings in the journal; reading the ledger (and the CLI) need neither.
        from agentscript.learn.locks import LockTimeout, file_lock

        line = json.dumps(run.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with file_lock(self.lock_path, timeout=LOCK_TIMEOUT, stale_after=LOCK_STALE):
                self._write(line.encode("utf-8"))
                self._trim()
        except (OSError, LockTimeout) as problem:  # a busy lock, a full disk, a read-only dir
            return f"Cannot record the autonomous run in {self.path}: {problem}"
        return None

    def _write(self, data: bytes) -> None:
        """Append `data` with O_APPEND, after a newline if a crashed writer left a torn last
        line, so the new record never fuses with it."""
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(descriptor).st_size
            if size and _last_byte(self.path, size) != b"\n":
                data = b"\n" + data
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view) :]
        finally:
            os.close(descriptor)

    def _trim(self) -> None:
        """Keep the newest `max_lines` lines. The new file replaces the old one atomically, so
        a reader without the lock sees one or the other, never half of each."""
        data = self.path.read_bytes()
        if data.count(b"\n") <= self.max_lines:
            return
        kept = data.splitlines(keepends=True)[-self.max_lines :]
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            temporary.write_bytes(b"".join(kept))
            os.replace(temporary, self.path)
        finally:
            temporary.unlink(missing_ok=True)

    def read(self, since: float | None = None) -> list[AutonomyRun]:
        """The recorded runs in file order, those started before `since` left out. Lines that
        are not a valid record are skipped; a missing ledger has no runs."""
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return []
        runs: list[AutonomyRun] = []
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                run = AutonomyRun.from_json(json.loads(line))
            except ValueError:  # not JSON (JSONDecodeError is a ValueError) or not a record
                continue
            if since is None or run.started_at >= since:
                runs.append(run)
        return runs

    def summary(self, days: float = 7.0) -> AutonomySummary:
        """The runs of the last `days` days, as `agentscript autonomy summary` prints them."""
        since = self.clock() - days * DAY_SECONDS
        return summarize(self.read(since), days, since)

    def last_started(self, kind: Kind) -> float | None:
        """When the newest run of `kind` started, if there is one."""
        starts = [run.started_at for run in self.read() if run.kind == kind]
        return max(starts) if starts else None


def _last_byte(path: Path, size: int) -> bytes:
    with path.open("rb") as handle:
        handle.seek(size - 1)
        return handle.read(1)


# ----------------------------------------------------------------------------- plain text


def format_summary(summary: AutonomySummary, needs_you: Sequence[str] = ()) -> str:
    """The summary as plain text: a table per kind, a bar per outcome, the newest runs, and
    what is waiting for the user. Used in pipes and files; a terminal gets the rich version."""
    lines = [f"Autonomous runs, last {summary.days:g} days (since {utc_minute(summary.since)} UTC)"]
    if summary.total.runs == 0:
        lines.append("(no runs)")
    else:
        lines += ["", *_columns(kind_rows(summary), KIND_NUMBERS)]
        lines += ["", "Outcomes", *_bars(summary.total)]
        lines += ["", f"Last {len(summary.recent)} runs"]
        lines += _columns(recent_rows(summary), RECENT_NUMBERS)
    if summary.operation_counts:
        lines += ["", "Operations per reflection", *operation_bars(summary.operation_counts)]
    if needs_you:
        lines += ["", *(f"needs you: {item}" for item in needs_you)]
    return "\n".join(lines)


KIND_COLUMNS = ("KIND", "RUNS", "DONE", "NO-UPDATE", "BLOCKED", "ERROR", "IN TOKENS", "OUT TOKENS")
RECENT_COLUMNS = ("STARTED (UTC)", "KIND", "OUTCOME", "TIME", "TOKENS", "TOOLS", "TASK / NOTE")
# Which columns hold numbers (aligned right).
KIND_NUMBERS = frozenset(range(1, len(KIND_COLUMNS)))
RECENT_NUMBERS = frozenset({3, 4, 5})


def kind_rows(summary: AutonomySummary) -> list[tuple[str, ...]]:
    """The per-kind table (header first, total last), shared by the plain and rich output."""
    rows: list[tuple[str, ...]] = [KIND_COLUMNS]
    for tally in [*summary.kinds, summary.total]:
        rows.append(
            (
                tally.kind,
                str(tally.runs),
                *(str(tally.outcomes[outcome]) for outcome in OUTCOMES),
                f"{tally.input_tokens:,}",
                f"{tally.output_tokens:,}",
            )
        )
    return rows


def recent_rows(summary: AutonomySummary) -> list[tuple[str, ...]]:
    """The newest runs (header first), shared by the plain and rich output."""
    rows: list[tuple[str, ...]] = [RECENT_COLUMNS]
    for run in summary.recent:
        about = ": ".join(part for part in (run.task, run.note) if part)
        rows.append(
            (
                utc_minute(run.started_at),
                run.kind,
                run.outcome,
                f"{run.duration_ms / 1000:.1f}s",
                f"{run.tokens:,}",
                str(run.tool_calls),
                about or "-",
            )
        )
    return rows


def bar_length(count: int, largest: int, width: int = BAR_WIDTH) -> int:
    """Bars are scaled to the largest count; any count above zero shows at least one mark."""
    if count <= 0 or largest <= 0:
        return 0
    return max(1, round(width * count / largest))


def _bars(total: KindSummary) -> list[str]:
    largest = max(total.outcomes.values())
    label = max(len(outcome) for outcome in OUTCOMES)
    return [
        f"{outcome.ljust(label)}  {'#' * bar_length(count, largest):<{BAR_WIDTH}}  {count}"
        for outcome, count in total.outcomes.items()
    ]


def operation_bars(histogram: dict[int, int], mark: str = "#") -> list[str]:
    """`  0  ###…  3`: one bar per operation count, scaled to the most common count."""
    largest = max(histogram.values())
    label = len(str(max(histogram)))
    return [
        f"{size:>{label}}  {mark * bar_length(runs, largest):<{BAR_WIDTH}}  {runs}"
        for size, runs in histogram.items()
    ]


def _columns(rows: Sequence[Sequence[str]], numbers: frozenset[int]) -> list[str]:
    """Aligned columns two spaces apart, the `numbers` columns aligned right."""
    widths = [max(len(row[index]) for row in rows) for index in range(len(rows[0]))]
    return [
        "  ".join(
            cell.rjust(width) if index in numbers else cell.ljust(width)
            for index, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


def utc_minute(at: float) -> str:
    """`2027-01-15 08:00`: the summary shows times to the minute, in UTC."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M")
