"""Timeline compaction: ended buckets of episodic memory become day, week, month, year summaries.

A day summary replaces the episodic entries of one local day, a week summary the day summaries
of its ISO week, a month the week summaries whose Monday falls in it, a year its months. Each is
written by `MemoryService.write_summary`, which stores the summary (its `archive_ref` naming the
sources) and archives the sources in one transaction: a crash leaves either both or neither.
Facts and knowledge are never compacted.

The rules, in the order they are applied to a bucket:

- only buckets that have *settled* are summarised: the bucket has ended by the service's clock,
  and so has every bucket below that belongs to it (a month waits for its last week, which may
  end days after the month does);
- a bucket waits while anything below it is still unsummarised (a failed day keeps its week
  open, so no week summary silently lacks a day);
- each bucket is tried at most once per run, and runs repeat passes day → week → month → year
  until a pass finds nothing new, so one run builds the whole chain;
- at most one caller summarises a bucket at a time in a process (a claim), and across processes
  the store's one-active-summary-per-bucket constraint lets only the first write land; losing
  that race is `skipped`, not an error;
- an empty or failed summary writes nothing and is reported as `failed` with the reason.

`compact` is the explicit run (`agentscript memory compact`); `LazyCompaction` is the hook that
lets reads (recall, browse, stats, digest) run a small, bounded pass first, and
`BackgroundCompaction` the one that hands a read's model work to a worker thread instead.
Without a model, summaries are extractive (summarizer.ExtractiveSummarizer, marked in their
`source.reason`); a run with a model rewrites each in place (same id, same sources).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, Literal

from agentscript.memory.entries import EXTRACTIVE_MARK, Entry, is_extractive, require_level
from agentscript.memory.errors import CONFLICT, MemoryServiceError
from agentscript.memory.scopes import parse_scope
from agentscript.memory.service import MemoryService
from agentscript.memory.store import EntryFilter, MemoryStore
from agentscript.memory.summarizer import BucketSummarizer, ExtractiveSummarizer, Summarizer
from agentscript.memory.timeline import (
    CHILD_LEVEL,
    LEVELS,
    Clock,
    Level,
    bucket_bounds,
    bucket_days,
    bucket_of,
    bucket_start_keys,
    require_bucket,
)
from agentscript.runtime.ports import LlmProvider
from agentscript.runtime.usage import Usage

Status = Literal["written", "skipped", "failed", "planned"]
# (scope, level, bucket): what one summary covers.
BucketKey = tuple[str, Level, str]
PARENT_LEVEL: dict[Level, Level | None] = {
    "day": "week",
    "week": "month",
    "month": "year",
    "year": None,
}
# Lazy compaction: model calls one read may make, how often a read looks for work at all, and
# how long a bucket whose summary failed is left alone before a read tries it again.
DEFAULT_LAZY_SUMMARIES = 2
DEFAULT_LAZY_INTERVAL_SECONDS = 60.0
DEFAULT_RETRY_AFTER_SECONDS = 600.0
# Extractive summaries cost no call, so a read may write many (a backlog of 100 days is a few
# milliseconds each); the background worker's model calls per pass before it looks again.
EXTRACTIVE_SUMMARIES_PER_READ = 50
DEFAULT_BACKGROUND_SUMMARIES = 8
_NOTE_FAILURES = 3


@dataclass(frozen=True, slots=True)
class BucketOutcome:
    """What happened to one bucket. `sources` is how many entries the summary covers (or would);
    `summary_id` the summary written; `replaces` the summary it rebuilt; `reason` why a bucket
    was skipped or failed."""

    scope: str
    level: Level
    bucket: str
    status: Status
    sources: int = 0
    summary_id: str | None = None
    replaces: str | None = None
    reason: str | None = None

    @property
    def key(self) -> BucketKey:
        return (self.scope, self.level, self.bucket)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "level": self.level,
            "bucket": self.bucket,
            "status": self.status,
            "sources": self.sources,
            "summary_id": self.summary_id,
            "replaces": self.replaces,
            "reason": self.reason,
        }


@dataclass(slots=True)
class CompactionReport:
    """Every bucket a run looked at, in the order it did. `complete` is False when a lazy pass
    stopped at its budget with work left; `usage` is what the model calls cost."""

    scopes: tuple[str, ...]
    levels: tuple[Level, ...]
    dry_run: bool
    outcomes: list[BucketOutcome] = field(default_factory=list)
    complete: bool = True
    usage: Usage = field(default_factory=Usage)

    def having(self, status: Status) -> list[BucketOutcome]:
        return [outcome for outcome in self.outcomes if outcome.status == status]

    @property
    def written(self) -> list[BucketOutcome]:
        return self.having("written")

    @property
    def skipped(self) -> list[BucketOutcome]:
        return self.having("skipped")

    @property
    def failed(self) -> list[BucketOutcome]:
        return self.having("failed")

    @property
    def planned(self) -> list[BucketOutcome]:
        return self.having("planned")

    def note(self) -> str | None:
        """One sentence about failed summaries, for the `note` of a read; None when none."""
        failed = self.failed
        if not failed:
            return None
        listed = "; ".join(
            f"{item.level} {item.bucket} of {item.scope}: {item.reason}"
            for item in failed[:_NOTE_FAILURES]
        )
        more = f"; and {len(failed) - _NOTE_FAILURES} more" if len(failed) > _NOTE_FAILURES else ""
        return (
            f"memory compaction failed for {len(failed)} bucket(s), which keep their entries "
            f"unsummarised: {listed}{more}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "scopes": list(self.scopes),
            "levels": list(self.levels),
            "complete": self.complete,
            "written": len(self.written),
            "skipped": len(self.skipped),
            "failed": len(self.failed),
            "planned": len(self.planned),
            "usage": self.usage.to_json(),
            "buckets": [outcome.to_dict() for outcome in self.outcomes],
        }


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """A bucket about to be summarised (`start`) or finished (`done`, with its outcome).
    `total` is an estimate that grows when a run finds more than it planned."""

    stage: Literal["start", "done"]
    scope: str
    level: Level
    bucket: str
    done: int
    total: int
    outcome: BucketOutcome | None = None


Progress = Callable[[ProgressEvent], None]


# --------------------------------------------------------------------------- bucket rules


def parent_bucket(bucket: str) -> str | None:
    """The bucket one level up that `bucket` rolls into (the one holding its first day)."""
    parent = PARENT_LEVEL[require_bucket(bucket)]
    return None if parent is None else bucket_start_keys(bucket)[parent]


def ancestor_bucket(bucket: str, level: Level) -> str | None:
    """The `level` bucket that `bucket` rolls into, step by step: a day belongs to its week,
    and through it to the month the week's Monday falls in (which may not be the day's)."""
    current: str | None = bucket
    while current is not None and require_bucket(current) != level:
        current = parent_bucket(current)
    return current


def settled_at(bucket: str, clock: Clock) -> datetime:
    """When nothing more can roll into `bucket`: its end, or, when later, the end of its last
    child. A month's last week belongs to it and ends after it unless the month ends on a
    Sunday; a year likewise waits for December's last week."""
    level = require_bucket(bucket)
    end = bucket_bounds(bucket, clock)[1]
    child = CHILD_LEVEL[level]
    if child is None:
        return end
    last_day = bucket_days(bucket)[1] - timedelta(days=1)
    return max(end, settled_at(bucket_of(child, last_day), clock))


# --------------------------------------------------------------------------- claims


class _Claims:
    """The buckets being summarised in this process, so two threads (two reads, or a read and
    an explicit run) never ask the model for the same summary at once. Across processes the
    store's constraint decides; this only saves the model call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: set[tuple[str, str, str, str]] = set()

    @contextmanager
    def hold(self, key: tuple[str, str, str, str]) -> Iterator[bool]:
        with self._lock:
            taken = key not in self._held
            if taken:
                self._held.add(key)
        try:
            yield taken
        finally:
            if taken:
                with self._lock:
                    self._held.discard(key)


_CLAIMS = _Claims()


def _store_identity(store: MemoryStore) -> str:
    """Services opened on the same database file share claims; other stores are their own."""
    path = getattr(store, "path", None)
    if isinstance(path, str | Path):
        return str(Path(path).resolve())
    return f"store-{id(store)}"


# --------------------------------------------------------------------------- runs


@dataclass(slots=True)
class _Pending:
    bucket: str
    sources: int
    summary_id: str | None


class _Run:
    """One compaction run over some scopes and levels; see the module docstring for the rules.
    `limit` caps model calls (lazy passes); `exclude` names buckets to leave alone (lazy passes
    skip recent failures)."""

    def __init__(
        self,
        service: MemoryService,
        summarizer: BucketSummarizer | None,
        scopes: tuple[str, ...],
        levels: tuple[Level, ...],
        *,
        dry_run: bool,
        progress: Progress | None = None,
        limit: int | None = None,
        exclude: frozenset[BucketKey] = frozenset(),
        stop: Callable[[], bool] = lambda: False,
    ) -> None:
        self.service = service
        self.summarizer = summarizer
        self.scopes = scopes
        self.levels = levels
        self.dry_run = dry_run
        self.progress = progress
        self.limit = limit
        self.exclude = exclude
        self.stop = stop
        self.identity = _store_identity(service.store)
        self.report = CompactionReport(scopes, levels, dry_run)
        self.attempted: dict[BucketKey, BucketOutcome] = {}
        self.waiting: dict[BucketKey, BucketOutcome] = {}
        # Dry runs: the buckets they would summarise, and the sources those summaries would
        # add one level up, so the plan shows the whole chain a real run would build.
        self.planned: set[BucketKey] = set()
        self.simulated: dict[BucketKey, int] = {}
        self.pending: dict[tuple[str, Level], list[dict[str, Any]]] = {}
        self.calls = 0
        self.total = 0

    def run(self) -> CompactionReport:
        if self.progress is not None and not self.dry_run:
            estimate = _Run(
                self.service,
                None,
                self.scopes,
                self.levels,
                dry_run=True,
                exclude=self.exclude,
            ).run()
            self.total = len(estimate.planned)
        while self._pass():
            if self.dry_run:
                break
        self.report.outcomes = [
            *self.attempted.values(),
            *(item for key, item in self.waiting.items() if key not in self.attempted),
        ]
        return self.report

    def _pass(self) -> bool:
        """One pass over every scope and level; True when it tried a bucket it had not tried
        before (so another pass may find more), False when stable or out of budget."""
        before = len(self.attempted)
        self.pending.clear()
        for scope in self.scopes:
            for level in self.levels:
                if not self._level(scope, level):
                    self.report.complete = False
                    return False
        return len(self.attempted) > before

    def _level(self, scope: str, level: Level) -> bool:
        now = self.service.clock.now()
        blocked: dict[str, str] | None = None
        for item in self._candidates(scope, level):
            key: BucketKey = (scope, level, item.bucket)
            if key in self.attempted or key in self.exclude:
                continue
            if settled_at(item.bucket, self.service.clock) > now:
                continue
            if blocked is None:
                blocked = self._blocked(scope, level)
            below = blocked.get(item.bucket)
            if below is not None:
                self.waiting[key] = BucketOutcome(
                    scope,
                    level,
                    item.bucket,
                    "skipped",
                    item.sources,
                    reason=f"waits for {below}, which is not summarised yet",
                )
                continue
            if self._out_of_budget():
                return False
            self.waiting.pop(key, None)
            self.attempted[key] = self._one(scope, level, item)
        return self._upgrade_level(scope, level)

    def _out_of_budget(self) -> bool:
        return self.stop() or (self.limit is not None and self.calls >= self.limit)

    def _upgrade_level(self, scope: str, level: Level) -> bool:
        """With a model, rewrite the extractive summaries of `level` (written while no model
        was configured) from their archived sources; False when out of budget."""
        if self.dry_run or self.summarizer is None or self.summarizer.method != "model":
            return True
        extractive = [
            entry
            for entry in self.service.store.select(
                EntryFilter(scopes=(scope,), kinds=("summary",), levels=(level,))
            )
            if is_extractive(entry)
        ]
        for summary in sorted(extractive, key=lambda entry: entry.bucket):
            key: BucketKey = (scope, level, summary.bucket)
            if key in self.attempted or key in self.exclude:
                continue
            if self._out_of_budget():
                return False
            self.attempted[key] = self._upgrade(scope, level, summary)
        return True

    def _upgrade(self, scope: str, level: Level, summary: Entry) -> BucketOutcome:
        bucket = summary.bucket
        with _CLAIMS.hold((self.identity, scope, level, bucket)) as held:
            if not held:
                return BucketOutcome(
                    scope, level, bucket, "skipped", reason="another caller is summarising it"
                )
            sources = self.service.summary_sources(summary.id, scope)
            if not sources:
                return BucketOutcome(
                    scope,
                    level,
                    bucket,
                    "skipped",
                    summary_id=summary.id,
                    reason="its sources are gone (timeline.archive: delete): kept as it is",
                )
            assert self.summarizer is not None
            self.calls += 1
            try:
                text = self.summarizer.summarize(
                    level, bucket, sources, None, clock=self.service.clock
                )
            except MemoryServiceError as error:
                return BucketOutcome(
                    scope, level, bucket, "failed", len(sources), reason=error.message
                )
            self.report.usage.add(text.usage)
            try:
                self.service.rewrite_summary(
                    summary.id,
                    scope,
                    title=text.title,
                    body=text.body,
                    reason=f"{level} compaction",
                    only_if_extractive=True,
                )
            except MemoryServiceError as error:
                return BucketOutcome(
                    scope,
                    level,
                    bucket,
                    "skipped",
                    len(sources),
                    replaces=summary.id,
                    reason=f"the summary changed while it was rewritten: {error.message}",
                )
        return BucketOutcome(
            scope, level, bucket, "written", len(sources), summary.id, replaces=summary.id
        )

    def _candidates(self, scope: str, level: Level) -> list[_Pending]:
        found = {
            item["bucket"]: _Pending(item["bucket"], item["sources"], item["summary_id"])
            for item in self._pending_of(scope, level)
        }
        for (where, unit, bucket), added in self.simulated.items():
            if (where, unit) != (scope, level):
                continue
            if bucket in found:
                found[bucket].sources += added
            else:
                current = self._current_summary(scope, level, bucket)
                found[bucket] = _Pending(bucket, added, current.id if current else None)
        # Keys of one level sort in time order (2026-05-04, 2026-W19, 2026-05, 2026).
        return [found[bucket] for bucket in sorted(found)]

    def _blocked(self, scope: str, level: Level) -> dict[str, str]:
        """The `level` buckets that still have unsummarised buckets below them (at the levels
        this run builds), each with the first such bucket, for the reason."""
        blocked: dict[str, str] = {}
        for lower in self.levels[: self.levels.index(level)]:
            for item in self._pending_of(scope, lower):
                if (scope, lower, item["bucket"]) in self.planned:
                    continue
                above = ancestor_bucket(item["bucket"], level)
                if above is not None:
                    blocked.setdefault(above, f"{lower} {item['bucket']}")
        return blocked

    def _pending_of(self, scope: str, level: Level) -> list[dict[str, Any]]:
        """`pending_buckets`, asked once per pass until something is written: a read with
        nothing to compact costs one question per scope and level."""
        key = (scope, level)
        if key not in self.pending:
            self.pending[key] = self.service.pending_buckets(scope, level)
        return self.pending[key]

    def _one(self, scope: str, level: Level, item: _Pending) -> BucketOutcome:
        self._emit("start", scope, level, item.bucket)
        if self.dry_run:
            outcome = BucketOutcome(
                scope, level, item.bucket, "planned", item.sources, replaces=item.summary_id
            )
            self.planned.add((scope, level, item.bucket))
            parent = PARENT_LEVEL[level]
            if parent is not None and parent in self.levels and item.summary_id is None:
                above = (scope, parent, bucket_start_keys(item.bucket)[parent])
                self.simulated[above] = self.simulated.get(above, 0) + 1
        else:
            outcome = self._summarise(scope, level, item.bucket)
            self.pending.clear()
        self._emit("done", scope, level, item.bucket, outcome)
        return outcome

    def _summarise(self, scope: str, level: Level, bucket: str) -> BucketOutcome:
        with _CLAIMS.hold((self.identity, scope, level, bucket)) as held:
            if not held:
                return BucketOutcome(
                    scope,
                    level,
                    bucket,
                    "skipped",
                    reason="another caller in this process is summarising it",
                )
            sources = self.service.compaction_sources(scope, level, bucket)
            if not sources:
                return BucketOutcome(
                    scope,
                    level,
                    bucket,
                    "skipped",
                    reason="nothing left to summarise: another compactor wrote it",
                )
            previous = self._current_summary(scope, level, bucket)
            replaces = previous.id if previous is not None else None
            assert self.summarizer is not None, "only dry runs go without a summarizer"
            self.calls += 1
            try:
                summary = self.summarizer.summarize(
                    level, bucket, sources, previous, clock=self.service.clock
                )
            except MemoryServiceError as error:
                return BucketOutcome(
                    scope,
                    level,
                    bucket,
                    "failed",
                    len(sources),
                    replaces=replaces,
                    reason=error.message,
                )
            self.report.usage.add(summary.usage)
            try:
                written = self.service.write_summary(
                    scope,
                    level,
                    bucket,
                    title=summary.title,
                    body=summary.body,
                    source_ids=[entry.id for entry in sources],
                    source={"reason": self._reason(level)},
                    replaces=replaces,
                )
            except MemoryServiceError as error:
                if error.code == CONFLICT:
                    return BucketOutcome(
                        scope,
                        level,
                        bucket,
                        "skipped",
                        len(sources),
                        replaces=replaces,
                        reason=f"the bucket changed while it was summarised: {error.message}",
                    )
                return BucketOutcome(
                    scope,
                    level,
                    bucket,
                    "failed",
                    len(sources),
                    replaces=replaces,
                    reason=f"the summary could not be stored: {error.message}",
                )
        return BucketOutcome(scope, level, bucket, "written", len(sources), written["id"], replaces)

    def _reason(self, level: Level) -> str:
        extractive = self.summarizer is not None and self.summarizer.method == "extractive"
        return f"{level} compaction{EXTRACTIVE_MARK if extractive else ''}"

    def _current_summary(self, scope: str, level: Level, bucket: str) -> Entry | None:
        found = self.service.store.select(
            EntryFilter(
                scopes=(scope,), kinds=("summary",), levels=(level,), bucket=(level, bucket)
            )
        )
        return found[0] if found else None

    def _emit(
        self,
        stage: Literal["start", "done"],
        scope: str,
        level: Level,
        bucket: str,
        outcome: BucketOutcome | None = None,
    ) -> None:
        if self.progress is None:
            return
        done = len(self.attempted) + (1 if stage == "done" else 0)
        self.total = max(self.total, done + (1 if stage == "start" else 0))
        self.progress(ProgressEvent(stage, scope, level, bucket, done, self.total, outcome))


def compaction_levels(
    service: MemoryService, levels: Iterable[str] | None = None
) -> tuple[Level, ...]:
    """The levels a run builds, day first: memory.yml's `timeline` unless given."""
    if levels is None:
        return service.config.timeline.levels
    wanted = {require_level(level, "levels") for level in levels}
    return tuple(level for level in LEVELS if level in wanted)


def compact(
    service: MemoryService,
    summarizer: BucketSummarizer | None,
    *,
    scope: str | None = None,
    levels: Iterable[str] | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> CompactionReport:
    """Summarise every settled bucket with unsummarised entries, day → week → month → year,
    until nothing more is pending; returns what happened to each bucket.

    `scope`: one scope, else every scope the service reads (the workspace and global).
    `levels`: the levels to build, else memory.yml's. `dry_run`: list what would be
    summarised, including the weeks and months those summaries would complete, without
    calling the model or writing. Without a summarizer the summaries are extractive (no model;
    a later run with a model rewrites them, as it rewrites any it finds). `progress` is called
    before and after each bucket. Failures are outcomes, never exceptions; store errors
    that stop the run are raised.
    """
    if summarizer is None and not dry_run:
        summarizer = ExtractiveSummarizer()
    scopes = (parse_scope(scope),) if scope is not None else service.scopes_for().read
    run = _Run(
        service,
        summarizer,
        scopes,
        compaction_levels(service, levels),
        dry_run=dry_run,
        progress=progress,
    )
    return run.run()


# --------------------------------------------------------------------------- lazy compaction


class LazyCompaction:
    """The read hook of a MemoryService: before a read, summarise what has settled in the
    scopes it reads, so the read sees summaries instead of stale day-by-day entries.

    A read must stay a read: at most `max_summaries` model calls per read (a backlog is
    worked off over several reads, or at once by `agentscript memory compact`); no look for
    work more often than every `interval` seconds per set of scopes, unless the last pass was
    cut short; a bucket whose summary failed is left alone for `retry_after` seconds; and no
    exception escapes, so a read never fails because compaction did. What happened comes back
    as the read's `compaction` field (with a `note` when a summary failed), or not at all when
    nothing was written or failed.
    """

    def __init__(
        self,
        service: MemoryService,
        summarizer: BucketSummarizer,
        *,
        max_summaries: int = DEFAULT_LAZY_SUMMARIES,
        interval: float = DEFAULT_LAZY_INTERVAL_SECONDS,
        retry_after: float = DEFAULT_RETRY_AFTER_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
        stop: Callable[[], bool] = lambda: False,
    ) -> None:
        if max_summaries < 1:
            raise ValueError("max_summaries must be at least 1")
        self.service = service
        self.summarizer = summarizer
        self.max_summaries = max_summaries
        self.interval = interval
        self.retry_after = retry_after
        self._monotonic = monotonic
        self._stop = stop
        self._lock = threading.Lock()
        self._looked: dict[tuple[str, ...], float] = {}
        self._failed: dict[BucketKey, float] = {}

    def __call__(self, scopes: tuple[str, ...]) -> dict[str, Any] | None:
        levels = self.service.config.timeline.levels
        if not levels:
            return None
        now = self._monotonic()
        with self._lock:
            last = self._looked.get(scopes)
            if last is not None and now - last < self.interval:
                return None
            self._looked[scopes] = now
            self._failed = {
                key: when for key, when in self._failed.items() if now - when < self.retry_after
            }
            resting = frozenset(self._failed)
        try:
            report = _Run(
                self.service,
                self.summarizer,
                scopes,
                levels,
                dry_run=False,
                limit=self.max_summaries,
                exclude=resting,
                stop=self._stop,
            ).run()
        except Exception as error:  # a read must never fail because its compaction did
            detail = getattr(error, "message", None) or str(error) or type(error).__name__
            return {"error": detail, "note": f"memory compaction did not run: {detail}"}
        with self._lock:
            for outcome in report.failed:
                self._failed[outcome.key] = now
            if not report.complete:
                self._looked.pop(scopes, None)
        if not report.written and not report.failed:
            return None
        result = report.to_dict()
        note = report.note()
        if note is not None:
            result["note"] = note
        return result


class BackgroundCompaction:
    """The read hook for model compaction: a read that may find work schedules it on this
    service's one worker thread and returns at once, so no read waits on a model.

    The worker runs `LazyCompaction` passes (the same budget, interval and rest after a
    failure) until the scopes asked for are done. Across processes, the worker first takes the
    store's compaction lock (a file beside a SQLite database, taken without waiting): at most
    one worker per store summarises at a time, and each re-reads what is left once it holds
    the lock, so concurrent processes make one model call per summary. A process whose worker
    finds the lock taken leaves the work to the holder. Failures reach the next read as its
    `compaction.note`. `close` stops the worker between two summaries.
    """

    def __init__(
        self,
        service: MemoryService,
        summarizer: BucketSummarizer,
        *,
        max_summaries: int = DEFAULT_BACKGROUND_SUMMARIES,
        interval: float = DEFAULT_LAZY_INTERVAL_SECONDS,
        retry_after: float = DEFAULT_RETRY_AFTER_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stopping = threading.Event()
        self._passes = LazyCompaction(
            service,
            summarizer,
            max_summaries=max_summaries,
            interval=interval,
            retry_after=retry_after,
            monotonic=monotonic,
            stop=self._stopping.is_set,
        )
        self._lock_path = _worker_lock_path(service.store)
        self._lock = threading.Lock()
        self._wanted: list[tuple[str, ...]] = []
        self._thread: threading.Thread | None = None
        self._notes: list[str] = []

    def __call__(self, scopes: tuple[str, ...]) -> dict[str, Any] | None:
        with self._lock:
            notes, self._notes = self._notes, []
            if not self._stopping.is_set():
                if scopes not in self._wanted:
                    self._wanted.append(scopes)
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._work, name="memory-compaction", daemon=True
                    )
                    self._thread.start()
        if not notes:
            return None
        return {"background": True, "note": "; ".join(notes)}

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the worker is idle; False when it is still busy after `timeout`."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def close(self, timeout: float = 30.0) -> None:
        """Stop the worker after the summary it is writing, waiting up to `timeout`."""
        self._stopping.set()
        self.wait(timeout)

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._wanted or self._stopping.is_set():
                    self._thread = None
                    return
                scopes = self._wanted.pop(0)
            with _worker_lock(self._lock_path) as held:
                result = self._passes(scopes) if held else None
            if result is not None and "note" in result:
                with self._lock:
                    self._notes.append(result["note"])
            if result is not None and not result.get("complete", True):
                with self._lock:
                    if scopes not in self._wanted:
                        self._wanted.append(scopes)


def _worker_lock_path(store: MemoryStore) -> Path | None:
    """The file whose lock makes one compaction worker per database file, or None for a
    store without one (PostgreSQL: there the in-process claims and the store's one active
    summary per bucket keep summaries single, but two processes may both ask the model)."""
    path = getattr(store, "path", None)
    if isinstance(path, str | Path):
        return Path(f"{path}.compaction.lock")
    return None


@contextmanager
def _worker_lock(path: Path | None) -> Iterator[bool]:
    if path is None:
        yield True
        return
    from filelock import FileLock, Timeout

    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        yield False
        return
    try:
        yield True
    finally:
        lock.release()


class CompactionHooks:
    """Several read hooks in order, their reports merged: the extractive pass that keeps a
    read's view summarised at once, then the background model worker that rewrites it."""

    def __init__(self, *hooks: Callable[[tuple[str, ...]], dict[str, Any] | None]) -> None:
        self.hooks = hooks

    def __call__(self, scopes: tuple[str, ...]) -> dict[str, Any] | None:
        reports = [report for hook in self.hooks if (report := hook(scopes)) is not None]
        if not reports:
            return None
        merged = dict(reports[0])
        notes = [report["note"] for report in reports if "note" in report]
        if notes:
            merged["note"] = "; ".join(notes)
        return merged

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every background worker among the hooks is idle (see
        BackgroundCompaction.wait)."""
        return all(
            hook.wait(timeout) for hook in self.hooks if isinstance(hook, BackgroundCompaction)
        )


def enable_compaction(
    service: MemoryService,
    llm: LlmProvider | None,
    *,
    background: bool = True,
    max_summaries: int = DEFAULT_LAZY_SUMMARIES,
    interval: float = DEFAULT_LAZY_INTERVAL_SECONDS,
    retry_after: float = DEFAULT_RETRY_AFTER_SECONDS,
    monotonic: Callable[[], float] = time.monotonic,
) -> Callable[[tuple[str, ...]], dict[str, Any] | None] | None:
    """Install compaction on `service`'s reads; returns the hook (None when memory.yml
    enables no level).

    Without a model (memory.yml names none, or `llm` is None) reads write extractive
    summaries, which cost no call. With one, reads still write extractive summaries at once,
    and the model rewrites them on the background worker (`background=False` runs the model
    inside the read instead, for tests and one-shot tools). The worker stops when the
    service closes.
    """
    config = service.config
    if not config.timeline.levels:
        return None
    passes = partial(
        LazyCompaction, service, interval=interval, retry_after=retry_after, monotonic=monotonic
    )
    extractive = passes(ExtractiveSummarizer(), max_summaries=EXTRACTIVE_SUMMARIES_PER_READ)
    hook: Callable[[tuple[str, ...]], dict[str, Any] | None]
    if config.timeline.model is None or llm is None:
        hook = extractive
    elif not background:
        hook = passes(Summarizer.from_config(config, llm), max_summaries=max_summaries)
    else:
        worker = BackgroundCompaction(
            service,
            Summarizer.from_config(config, llm),
            interval=interval,
            retry_after=retry_after,
            monotonic=monotonic,
        )
        service.on_close.insert(0, worker.close)
        hook = CompactionHooks(extractive, worker)
    service.before_read = hook
    return hook
