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
lets reads (recall, browse, stats, digest) run a small, bounded pass first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from agentscript.memory.entries import Entry, require_level
from agentscript.memory.errors import CONFLICT, INVALID_ARGUMENT, MemoryServiceError
from agentscript.memory.scopes import parse_scope
from agentscript.memory.service import MemoryService
from agentscript.memory.store import EntryFilter, MemoryStore
from agentscript.memory.summarizer import Summarizer
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
        summarizer: Summarizer | None,
        scopes: tuple[str, ...],
        levels: tuple[Level, ...],
        *,
        dry_run: bool,
        progress: Progress | None = None,
        limit: int | None = None,
        exclude: frozenset[BucketKey] = frozenset(),
    ) -> None:
        self.service = service
        self.summarizer = summarizer
        self.scopes = scopes
        self.levels = levels
        self.dry_run = dry_run
        self.progress = progress
        self.limit = limit
        self.exclude = exclude
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
            if self.limit is not None and self.calls >= self.limit:
                return False
            self.waiting.pop(key, None)
            self.attempted[key] = self._one(scope, level, item)
        return True

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
                    source={"reason": f"{level} compaction"},
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
    summarizer: Summarizer | None,
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
    calling the model or writing (the summarizer may then be None). `progress` is called
    before and after each bucket. Failures are outcomes, never exceptions; store errors
    that stop the run are raised.
    """
    if summarizer is None and not dry_run:
        raise MemoryServiceError(
            INVALID_ARGUMENT,
            "compaction needs a model: set timeline.model in .agentscript/memory.yml",
            "summarizer",
        )
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
        summarizer: Summarizer,
        *,
        max_summaries: int = DEFAULT_LAZY_SUMMARIES,
        interval: float = DEFAULT_LAZY_INTERVAL_SECONDS,
        retry_after: float = DEFAULT_RETRY_AFTER_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_summaries < 1:
            raise ValueError("max_summaries must be at least 1")
        self.service = service
        self.summarizer = summarizer
        self.max_summaries = max_summaries
        self.interval = interval
        self.retry_after = retry_after
        self._monotonic = monotonic
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


def enable_lazy_compaction(
    service: MemoryService,
    llm: LlmProvider,
    *,
    max_summaries: int = DEFAULT_LAZY_SUMMARIES,
    interval: float = DEFAULT_LAZY_INTERVAL_SECONDS,
    retry_after: float = DEFAULT_RETRY_AFTER_SECONDS,
    monotonic: Callable[[], float] = time.monotonic,
) -> LazyCompaction | None:
    """Install lazy compaction on `service` with the model memory.yml names (`timeline.model`,
    asked through `llm`); returns the hook, or None, leaving reads as they are, when the
    file names no model or enables no level."""
    config = service.config
    if config.timeline.model is None or not config.timeline.levels:
        return None
    hook = LazyCompaction(
        service,
        Summarizer.from_config(config, llm),
        max_summaries=max_summaries,
        interval=interval,
        retry_after=retry_after,
        monotonic=monotonic,
    )
    service.before_read = hook
    return hook
