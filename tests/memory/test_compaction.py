"""Timeline compaction: buckets, the day → week → month → year chain, idempotency, concurrent and
killed compactors, lazy compaction on reads, the summarizer's prompt and `memory compact`.

Models are fakes (memsvc_compaction_support.py) or the scripted mock; clocks are frozen; each
test has its own database. Compactor processes are forked by the support module run as a
script; a compactor is SIGKILLed either at a point it announces (inside the model call, or
right after a summary was written) or at a moment drawn from a seeded generator.
"""

from __future__ import annotations

import io
import json
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner
from pytest_httpserver import HTTPServer

from agentscript.cli.memory_compact import compact_command
from agentscript.memory import FixedClock, MemoryConfig, MemoryService, MemoryServiceError
from agentscript.memory.compaction import (
    LazyCompaction,
    ancestor_bucket,
    compact,
    enable_compaction,
    settled_at,
)
from agentscript.memory.config import TimelineConfig, parse_config
from agentscript.memory.errors import STORE_FAILURE
from agentscript.memory.summarizer import Summarizer
from agentscript.providers.llm.mock import ScriptedLlm
from agentscript.runtime.ports import GenerateRequest, GenerateResponse
from memsvc_compaction_support import (
    EchoModel,
    FailingModel,
    all_summaries,
    assert_consistent,
)

pytest_plugins = ["memsvc_support"]

SUPPORT = Path(__file__).parents[1] / "support" / "memsvc_compaction_support.py"
MODEL = "openai://gpt-4.1-mini"
WITH_MODEL = MemoryConfig(timeline=TimelineConfig(model=MODEL))
PARIS = ZoneInfo("Europe/Paris")
PROCESS_TIMEOUT_SECONDS = 600
RACERS = 4
RANDOM_KILLS = 12
LATEST_KILL_SECONDS = 0.005


def summarizer(model: Any = None, **options: Any) -> Summarizer:
    return Summarizer(model if model is not None else EchoModel(), MODEL, **options)


def episode(memory: MemoryService, when: str, text: str | None = None, **options: Any) -> str:
    result = memory.remember(
        text or f"Episode on {when}", kind="episodic", event_time=when, **options
    )
    return str(result["id"])


def shape(report: Any) -> list[tuple[str, str, str]]:
    return [(item.level, item.bucket, item.status) for item in report.outcomes]


def scope_of(memory: MemoryService) -> str:
    assert memory.workspace is not None
    return memory.workspace


# ------------------------------------------------------------------------- bucket rules


@pytest.mark.parametrize(
    ("bucket", "level", "expected"),
    [
        ("2025-12-31", "week", "2026-W01"),
        ("2025-12-31", "month", "2025-12"),
        # 1 January 2026 is a Thursday of week 2026-W01, whose Monday is in December 2025.
        ("2026-01-01", "month", "2025-12"),
        ("2026-01-01", "year", "2025"),
        ("2027-01-01", "week", "2026-W53"),
        ("2027-01-01", "year", "2026"),
        # Friday 1 May 2026 is in week 2026-W18, which starts on Monday 27 April.
        ("2026-05-01", "month", "2026-04"),
        ("2026-W18", "month", "2026-04"),
        ("2026-05", "year", "2026"),
        ("2026", "month", None),
    ],
)
def test_buckets_roll_up_through_the_week_their_day_is_in(
    bucket: str, level: str, expected: str | None
) -> None:
    assert ancestor_bucket(bucket, level) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("bucket", "settled"),
    [
        ("2026-05-04", datetime(2026, 5, 5)),
        ("2026-W19", datetime(2026, 5, 11)),
        # April's last week (2026-W18, 27 April – 3 May) belongs to April and ends on 4 May.
        ("2026-04", datetime(2026, 5, 4)),
        # May 2026 ends on a Sunday: its last week ends with it.
        ("2026-05", datetime(2026, 6, 1)),
        # December 2025's last week is 2026-W01, which ends on 5 January 2026.
        ("2025", datetime(2026, 1, 5)),
    ],
)
def test_a_bucket_settles_when_its_last_child_has_ended(bucket: str, settled: datetime) -> None:
    clock = FixedClock(datetime(2026, 1, 1), PARIS)
    assert settled_at(bucket, clock) == settled.replace(tzinfo=PARIS)


# ------------------------------------------------------------------------- what is pending


def test_only_ended_days_of_episodic_entries_are_compacted(memory: MemoryService) -> None:
    monday = episode(memory, "2026-05-04T08:00", "Standup: release 2.3 is on track")
    episode(memory, "2026-05-05", "Tuesday review")
    today = episode(memory, "2026-05-06", "Today is not over")
    fact = memory.remember("Deploys go through make release", kind="fact", key="deploy")
    knowledge = memory.remember("Run make check first", event_time="2026-05-04")
    model = EchoModel()

    report = compact(memory, summarizer(model))

    assert shape(report) == [
        ("day", "2026-05-04", "written"),
        ("day", "2026-05-05", "written"),
    ]
    assert model.calls == ["day", "day"]
    for identifier in (today, fact["id"], knowledge["id"]):
        assert not memory.get(identifier)["archived"]
    assert memory.get(monday)["archived"]
    # Week 19 (4–10 May) has not ended: its day summaries wait for it.
    assert memory.pending_buckets(scope_of(memory), "week") == []


def test_days_and_their_end_are_local_time(open_memory: Callable[..., MemoryService]) -> None:
    clock = FixedClock(datetime(2026, 5, 5, 22, 30, tzinfo=UTC), PARIS)
    memory = open_memory(clock=clock)
    # 22:30 UTC on 4 May is 00:30 on 5 May in Paris.
    episode(memory, "2026-05-04T22:30:00Z", "Late-night hotfix")

    report = compact(memory, summarizer())

    # At 22:30 UTC on 5 May it is already 6 May in Paris: the Paris day 5 May has ended.
    assert shape(report) == [("day", "2026-05-05", "written")]
    summary = memory.get(report.outcomes[0].summary_id or "")
    assert summary["event_time"] == "2026-05-04T22:00:00.000Z"


def test_one_run_builds_the_whole_chain_across_a_year_boundary(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    memory_clock.set(datetime(2025, 12, 1, tzinfo=UTC))
    for day in ("2025-12-29", "2025-12-31", "2026-01-01", "2026-01-05", "2026-02-03"):
        episode(memory, day)
    memory_clock.set(datetime(2027, 2, 1, tzinfo=UTC))
    model = EchoModel()

    report = compact(memory, summarizer(model))

    assert shape(report) == [
        ("day", "2025-12-29", "written"),
        ("day", "2025-12-31", "written"),
        ("day", "2026-01-01", "written"),
        ("day", "2026-01-05", "written"),
        ("day", "2026-02-03", "written"),
        ("week", "2026-W01", "written"),
        ("week", "2026-W02", "written"),
        ("week", "2026-W06", "written"),
        ("month", "2025-12", "written"),
        ("month", "2026-01", "written"),
        ("month", "2026-02", "written"),
        ("year", "2025", "written"),
        ("year", "2026", "written"),
    ]
    written = {(item.level, item.bucket): item for item in report.outcomes}
    # Week 2026-W01 holds 29 and 31 December and 1 January, and rolls into December 2025.
    assert written["week", "2026-W01"].sources == 3
    december = memory.get(written["month", "2025-12"].summary_id or "")
    assert december["archive_ref"] == [written["week", "2026-W01"].summary_id]
    year = memory.get(written["year", "2026"].summary_id or "")
    assert year["archive_ref"] == [
        written["month", "2026-01"].summary_id,
        written["month", "2026-02"].summary_id,
    ]
    active = memory.recall(limit=50)["results"]
    assert sorted((hit["level"], hit["bucket"]) for hit in active) == [
        ("year", "2025"),
        ("year", "2026"),
    ]
    assert report.usage.input_tokens == 10 * len(report.outcomes)
    assert_consistent(memory, scope_of(memory), set())


def test_a_month_waits_for_its_last_week_which_starts_in_it(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    memory_clock.set(datetime(2026, 4, 1, tzinfo=UTC))
    episode(memory, "2026-04-15")  # week 2026-W16
    episode(memory, "2026-04-29")  # week 2026-W18: 27 April – 3 May
    episode(memory, "2026-05-02")  # also 2026-W18, so also April's
    memory_clock.set(datetime(2026, 5, 2, 12, tzinfo=UTC))

    early = compact(memory, summarizer())

    # April has ended, but its week 2026-W18 has not: April is not summarised yet.
    assert shape(early) == [
        ("day", "2026-04-15", "written"),
        ("day", "2026-04-29", "written"),
        ("week", "2026-W16", "written"),
    ]
    memory_clock.set(datetime(2026, 5, 4, 9, tzinfo=UTC))

    late = compact(memory, summarizer())

    assert shape(late) == [
        ("day", "2026-05-02", "written"),
        ("week", "2026-W18", "written"),
        ("month", "2026-04", "written"),
    ]
    april = memory.get(late.outcomes[-1].summary_id or "")
    assert april["archive_ref"] == [early.outcomes[-1].summary_id, late.outcomes[1].summary_id]


def test_a_summary_lists_and_archives_its_sources(memory: MemoryService) -> None:
    first = episode(memory, "2026-05-04T08:00", "Standup: ship 2.3", tags=["team"])
    second = episode(
        memory, "2026-05-04T16:00", "Rolled back 2.3 after the cache bug", tags=["ops"]
    )
    model = ScriptedLlm(
        {"MemoryCompactor.day": ["# **Title: Release 2.3 rolled back**\n\n- cache bug in `2.3`"]}
    )

    report = compact(memory, summarizer(model))

    (outcome,) = report.written
    summary = memory.get(outcome.summary_id or "")
    assert summary["title"] == "Release 2.3 rolled back"
    assert summary["body"] == "- cache bug in `2.3`"
    assert summary["archive_ref"] == [first, second]
    assert summary["tags"] == ["team", "ops"]
    assert summary["source"] == {"reason": "day compaction"}
    for identifier in (first, second):
        source = memory.get(identifier)
        assert source["archived"]
        assert source["archive_reason"] == f"summarised in {outcome.summary_id}"
    assert_consistent(memory, scope_of(memory), {first, second})


def test_a_second_run_writes_nothing_and_calls_no_model(memory: MemoryService) -> None:
    episode(memory, "2026-05-04")
    compact(memory, summarizer())
    model = EchoModel()

    again = compact(memory, summarizer(model))

    assert again.outcomes == []
    assert model.requests == []


def test_late_entries_rebuild_the_active_summary_above_them(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    scope = scope_of(memory)
    episode(memory, "2026-05-04", "Monday: planned the 2.3 release")
    (first_day,) = compact(memory, summarizer()).written
    late = episode(memory, "2026-05-04T18:00", "Monday evening: the release slipped")
    model = EchoModel()

    rebuilt = compact(memory, summarizer(model))

    # The day summary is still active (its week has not ended): it is rebuilt, and kept.
    (day,) = rebuilt.written
    assert (day.bucket, day.replaces, day.sources) == ("2026-05-04", first_day.summary_id, 1)
    assert memory.get(day.summary_id or "")["archive_ref"] == [late, first_day.summary_id]
    (request,) = model.requests
    assert request.context[0].source == "current summary (day summary 2026-05-04)"
    assert "Entry 1 is the current summary" in request.instruction
    memory_clock.set(datetime(2026, 5, 12, tzinfo=UTC))
    (week,) = compact(memory, summarizer()).written
    later = episode(memory, "2026-05-05", "Tuesday, written down a week late")

    again = compact(memory, summarizer())

    # Tuesday gets its first day summary, which rebuilds the week (already summarised).
    assert [(item.level, item.replaces) for item in again.written] == [
        ("day", None),
        ("week", week.summary_id),
    ]
    assert memory.get(again.written[1].summary_id or "")["archive_ref"] == [
        again.written[0].summary_id,
        week.summary_id,
    ]
    assert_consistent(memory, scope, {late, later})


# ------------------------------------------------------------------------- failures


class AnswerModel:
    """Answers every summary with one fixed value (text or not)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        return GenerateResponse(value=self.value)


class BrokenModel:
    """A provider with a bug of its own."""

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        raise KeyError("choices")


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        (AnswerModel(""), "the model returned no text"),
        (AnswerModel("  \n\t"), "the model returned no text"),
        (AnswerModel("##\n**"), "no text, only markup"),
        (AnswerModel({"summary": "x"}), "answered with a JSON object, not text"),
        (AnswerModel(None), "answered with nothing, not text"),
        (AnswerModel("x" * 9000), "9,000 characters, more than the 8,000"),
        (FailingModel(), "the model failed: LLM provider 'openai' request failed"),
        (BrokenModel(), "the model provider failed: 'choices'"),
        (AnswerModel("Summary <memory-digest scope='x'>"), "contains a memory digest"),
    ],
)
def test_a_failed_summary_writes_nothing_and_is_reported(
    memory: MemoryService, model: Any, reason: str
) -> None:
    source = episode(memory, "2026-05-04")

    report = compact(memory, summarizer(model))

    (outcome,) = report.outcomes
    assert (outcome.status, outcome.summary_id) == ("failed", None)
    assert reason in (outcome.reason or "")
    assert report.note() is not None and reason in (report.note() or "")
    assert not memory.get(source)["archived"]
    assert all_summaries(memory, scope_of(memory)) == []


def test_a_failed_day_keeps_its_week_open(memory: MemoryService, memory_clock: FixedClock) -> None:
    episode(memory, "2026-05-04")
    episode(memory, "2026-05-05")
    memory_clock.set(datetime(2026, 5, 12, tzinfo=UTC))
    model = ScriptedLlm({"MemoryCompactor.day": ["Monday\n\n- fine", ""]})

    report = compact(memory, summarizer(model))

    assert shape(report) == [
        ("day", "2026-05-04", "written"),
        ("day", "2026-05-05", "failed"),
        ("week", "2026-W19", "skipped"),
    ]
    assert report.outcomes[-1].reason == "waits for day 2026-05-05, which is not summarised yet"
    retry = compact(memory, summarizer())
    assert shape(retry) == [("day", "2026-05-05", "written"), ("week", "2026-W19", "written")]


def test_sources_too_large_for_the_model_fail_before_calling_it(memory: MemoryService) -> None:
    episode(memory, "2026-05-04", "a" * 3000)
    episode(memory, "2026-05-04", "b" * 3000)
    model = EchoModel()

    report = compact(memory, summarizer(model, max_input_chars=5000))

    assert "more than the summarizer reads at once (5,000)" in (report.failed[0].reason or "")
    assert model.requests == []


# ------------------------------------------------------------------------- dry runs


def test_a_dry_run_plans_the_chain_without_a_model_and_writes_nothing(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    episode(memory, "2026-04-29")
    episode(memory, "2026-05-04")
    memory_clock.set(datetime(2026, 6, 2, tzinfo=UTC))
    before = memory.stats()
    model = FailingModel()

    plan = compact(memory, summarizer(model), dry_run=True)
    without = compact(memory, None, dry_run=True)

    assert model.calls == 0
    assert memory.stats() == before
    assert shape(plan) == shape(without)
    assert [(item.level, item.bucket, item.sources) for item in plan.outcomes] == [
        ("day", "2026-04-29", 1),
        ("day", "2026-05-04", 1),
        ("week", "2026-W18", 1),
        ("week", "2026-W19", 1),
        ("month", "2026-04", 1),
        ("month", "2026-05", 1),
    ]
    assert {item.status for item in plan.outcomes} == {"planned"}
    real = compact(memory, summarizer())
    assert [(item.level, item.bucket) for item in real.written] == [
        (item.level, item.bucket) for item in plan.outcomes
    ]


def test_without_a_summarizer_compaction_is_extractive_and_a_model_upgrades_it(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    episode(memory, "2026-05-04", "Deployed 2.3", tags=["deploy"])
    episode(memory, "2026-05-05", "Rolled back 2.3", key="release.state")
    memory_clock.set(datetime(2026, 5, 11, 9, tzinfo=UTC))

    first = compact(memory, None)

    assert shape(first) == [
        ("day", "2026-05-04", "written"),
        ("day", "2026-05-05", "written"),
        ("week", "2026-W19", "written"),
    ]
    week_id = first.written[-1].summary_id
    assert week_id is not None
    week = memory.get(week_id)
    assert week["source"] == {"reason": "week compaction, extractive"}
    # A week of extractive days still lists what happened in them.
    assert "  - [00:00] Deployed 2.3 #deploy" in week["body"]
    assert "`release.state` Rolled back 2.3" in week["body"]
    model = EchoModel()

    upgraded = compact(memory, summarizer(model))

    # Only the active summary is rewritten (its days are archived in it), in place.
    assert shape(upgraded) == [("week", "2026-W19", "written")]
    assert model.calls == ["week"]
    rewritten = memory.get(week_id)
    assert rewritten["source"] == {"reason": "week compaction"}
    assert rewritten["title"] == "week summary"
    assert rewritten["archive_ref"] == week["archive_ref"]
    assert compact(memory, summarizer(model)).written == []
    assert model.calls == ["week"]
    with pytest.raises(MemoryServiceError, match="levels must be one of day, week, month, year"):
        compact(memory, summarizer(), levels=["hour"])


# ------------------------------------------------------------------------- concurrency


def test_threads_never_summarise_one_bucket_twice(
    open_memory: Callable[..., MemoryService],
) -> None:
    first = open_memory()
    second = open_memory()
    episode(first, "2026-05-04")
    entered = threading.Event()
    release = threading.Event()

    def hold(request: GenerateRequest) -> None:
        entered.set()
        release.wait(PROCESS_TIMEOUT_SECONDS)

    holder = EchoModel(on_call=hold)
    results: list[Any] = []
    thread = threading.Thread(target=lambda: results.append(compact(first, summarizer(holder))))
    thread.start()
    try:
        assert entered.wait(PROCESS_TIMEOUT_SECONDS)
        other = EchoModel()
        meanwhile = compact(second, summarizer(other))
    finally:
        release.set()
        thread.join(PROCESS_TIMEOUT_SECONDS)

    assert shape(meanwhile) == [("day", "2026-05-04", "skipped")]
    assert meanwhile.outcomes[0].reason == "another caller in this process is summarising it"
    assert other.requests == []
    assert shape(results[0]) == [("day", "2026-05-04", "written")]
    assert len(all_summaries(first, scope_of(first))) == 1


def test_concurrent_processes_write_each_summary_exactly_once(tmp_path: Path) -> None:
    database = tmp_path / "memory.db"
    moment = datetime(2026, 6, 2, tzinfo=UTC)
    memory = MemoryService.open(None, database=database, clock=FixedClock(moment))
    acknowledged = set()
    for offset in range(60):
        day = datetime(2026, 1, 5, tzinfo=UTC) + timedelta(days=offset)
        for hour in (9, 15):
            acknowledged.add(episode(memory, day.replace(hour=hour).isoformat()))
    plan = {item.key for item in compact(memory, None, scope="global", dry_run=True).outcomes}

    raced = subprocess.run(
        [sys.executable, str(SUPPORT), "race", str(database), moment.isoformat(), str(RACERS)],
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_SECONDS,
    )

    assert raced.returncode == 0, raced.stdout + raced.stderr
    reports = [
        json.loads(line.removeprefix("report "))
        for line in raced.stdout.splitlines()
        if line.startswith("report ")
    ]
    assert len(reports) == RACERS
    writes = Counter(
        ("global", item["level"], item["bucket"])
        for report in reports
        for item in report["buckets"]
        if item["status"] == "written"
    )
    assert set(writes) == plan
    assert set(writes.values()) == {1}
    assert all(report["failed"] == 0 for report in reports)
    assert len(all_summaries(memory, "global")) == len(plan)
    assert_consistent(memory, "global", acknowledged)
    assert compact(memory, summarizer(), scope="global").outcomes == []
    memory.close()


# ------------------------------------------------------------------------- SIGKILL


class Zygote:
    """The compactor processes of one test, and what they acknowledged."""

    def __init__(self, database: Path, moment: datetime) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(SUPPORT), "zygote", str(database), moment.isoformat()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.written: list[str] = []

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def read_until(self, marker: str) -> list[str]:
        """Lines up to the one starting with `marker`, collecting `written` acknowledgements."""
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            if not line:
                stderr = self.process.stderr.read() if self.process.stderr else ""
                raise AssertionError(f"the zygote stopped: {stderr}")
            kind, _, rest = line.strip().partition(" ")
            if kind == "written":
                self.written.append(rest)
            elif kind == "error":
                raise AssertionError(f"compactor failed: {line}")
            if kind == marker:
                return rest.split(" ")

    def kill(self) -> int:
        self.send("kill")
        return int(self.read_until("ended")[1])

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=PROCESS_TIMEOUT_SECONDS)


def test_killed_compactors_leave_no_half_summary(tmp_path: Path) -> None:
    database = tmp_path / "memory.db"
    moment = datetime(2026, 6, 2, tzinfo=UTC)
    memory = MemoryService.open(None, database=database, clock=FixedClock(moment))
    acknowledged = set()
    for offset in range(100):
        day = datetime(2026, 1, 5, 12, tzinfo=UTC) + timedelta(days=offset)
        acknowledged.add(episode(memory, day.isoformat(), f"Day {offset}: shipped build {offset}"))
    zygote = Zygote(database, moment)
    moments = random.Random(20260602)
    try:
        zygote.send("go model")
        level, bucket = zygote.read_until("summarising")
        assert zygote.kill() == -signal.SIGKILL
        assert (level, bucket) == ("day", "2026-01-05")
        assert all_summaries(memory, "global") == []
        assert_consistent(memory, "global", acknowledged)

        zygote.send("go between")
        zygote.read_until("written")
        assert zygote.kill() == -signal.SIGKILL
        assert len(all_summaries(memory, "global")) == 1
        assert_consistent(memory, "global", acknowledged | set(zygote.written))

        for _ in range(RANDOM_KILLS):
            # Killed after a few summaries, plus a moment, so the kill can land anywhere in
            # the next one: listing, in the model, or inside its transaction.
            zygote.send("go free")
            zygote.read_until("started")
            for _ in range(moments.randint(1, 4)):
                zygote.read_until("written")
            time.sleep(moments.uniform(0, LATEST_KILL_SECONDS))
            assert zygote.kill() == -signal.SIGKILL
            assert_consistent(memory, "global", acknowledged | set(zygote.written))
    finally:
        zygote.close()
    rest = compact(memory, summarizer(), scope="global")
    assert rest.failed == []
    assert rest.written, "the compactors finished everything: no kill landed mid-run"
    for level in ("day", "week", "month", "year"):
        assert memory.pending_buckets("global", level) == []
    assert_consistent(memory, "global", acknowledged | set(zygote.written))
    memory.close()


# ------------------------------------------------------------------------- lazy compaction


class Ticker:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


DAY_ANSWERS = {
    "MemoryCompactor.day": [
        "Deploy of 2.3 on Monday\n\n- deployed 2.3 with `make release`",
        "Cache bug on Tuesday\n\n- rolled back 2.3",
    ],
    "MemoryCompactor.week": ["Week of the 2.3 release\n\n- deployed, then rolled back"],
}


def test_recall_and_digest_compact_ended_buckets_first(
    open_memory: Callable[..., MemoryService], memory_clock: FixedClock
) -> None:
    memory = open_memory(config=WITH_MODEL)
    first = episode(memory, "2026-05-04", "Deployed 2.3 with make release")
    episode(memory, "2026-05-05", "Rolled back 2.3 after the cache bug")
    hook = enable_compaction(memory, ScriptedLlm(DAY_ANSWERS), background=False, interval=0)
    assert isinstance(hook, LazyCompaction) and memory.before_read is hook

    recalled = memory.recall("deploy 2.3")

    assert recalled["compaction"]["written"] == 2
    assert "note" not in recalled
    # Compaction ran before the search: the day summary is found, its archived source is not.
    levels = [(hit["level"], hit["kind"]) for hit in recalled["results"]]
    assert ("day", "summary") in levels and (None, "episodic") not in levels
    assert memory.get(first)["archived"]
    again = memory.recall("deploy")
    assert "compaction" not in again
    memory_clock.set(datetime(2026, 5, 11, 9, tzinfo=UTC))

    digest = memory.digest()

    assert digest["compaction"]["written"] == 1
    assert "- [week summary 2026-W19] Week of the 2.3 release" in digest["text"]
    assert "[day summary" not in digest["text"]


def test_browse_and_stats_compact_too(
    open_memory: Callable[..., MemoryService],
) -> None:
    memory = open_memory(config=WITH_MODEL)
    episode(memory, "2026-05-04")
    enable_compaction(memory, ScriptedLlm(DAY_ANSWERS), background=False, interval=0)

    browsed = memory.browse()

    assert browsed["compaction"]["written"] == 1
    assert browsed["groups"][0]["entries"][0]["kind"] == "summary"
    episode(memory, "2026-05-05")
    stats = memory.stats()
    assert stats["compaction"]["written"] == 1
    assert stats["scopes"][0]["by_level"]["day"] == 2


def test_without_a_model_reads_write_extractive_summaries(memory: MemoryService) -> None:
    source = episode(memory, "2026-05-04T09:30", "Deployed 2.3\nwith make release")
    hook = enable_compaction(memory, EchoModel())
    assert isinstance(hook, LazyCompaction) and memory.before_read is hook

    recalled = memory.recall("deployed")

    assert recalled["compaction"]["written"] == 1
    (hit,) = recalled["results"]
    summary = memory.get(hit["id"])
    assert (summary["kind"], summary["level"], summary["bucket"]) == (
        "summary",
        "day",
        "2026-05-04",
    )
    assert summary["source"] == {"reason": "day compaction, extractive"}
    assert summary["title"] == "Monday 4 May 2026: 1 entry"
    assert "Extractive summary, written without a model" in summary["body"]
    assert "- [09:30] Deployed 2.3: with make release" in summary["body"]
    assert memory.get(source)["archived"]
    with pytest.raises(MemoryServiceError, match="compaction needs a model") as error:
        Summarizer.from_config(memory.config, EchoModel())
    assert error.value.code == "invalid_config"


def test_reads_never_fail_because_compaction_did(
    open_memory: Callable[..., MemoryService],
) -> None:
    memory = open_memory(config=WITH_MODEL)
    source = episode(memory, "2026-05-04", "Deployed 2.3")
    model = FailingModel()
    ticker = Ticker()
    enable_compaction(
        memory, model, background=False, interval=0, retry_after=600, monotonic=ticker
    )

    recalled = memory.recall("deployed")

    assert [hit["id"] for hit in recalled["results"]] == [source]
    assert recalled["compaction"]["failed"] == 1
    assert recalled["note"].startswith("memory compaction failed for 1 bucket(s)")
    assert "connection refused" in recalled["note"]
    assert not memory.get(source)["archived"]
    # A failed bucket rests: the next reads do not ask the model again until retry_after.
    assert "compaction" not in memory.recall("deployed")
    assert "compaction" not in memory.digest()
    assert model.calls == 1
    ticker.now += 601
    assert memory.stats()["compaction"]["failed"] == 1
    assert model.calls == 2


def test_a_read_survives_a_store_failure_in_its_compaction(
    open_memory: Callable[..., MemoryService], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = open_memory(config=WITH_MODEL)
    source = episode(memory, "2026-05-04")
    enable_compaction(memory, EchoModel(), background=False, interval=0)

    def broken(scope: str, level: str) -> list[dict[str, Any]]:
        raise MemoryServiceError(STORE_FAILURE, "memory database: disk I/O error")

    monkeypatch.setattr(memory, "pending_buckets", broken)

    recalled = memory.recall("query without matches", limit=5)

    assert recalled["results"] == []
    assert recalled["note"] == "memory compaction did not run: memory database: disk I/O error"
    assert memory.browse()["total_entries"] == 1
    assert not memory.get(source)["archived"]


def test_a_read_makes_a_bounded_number_of_model_calls(
    open_memory: Callable[..., MemoryService], memory_clock: FixedClock
) -> None:
    days_only = TimelineConfig(model=MODEL, week=False, month=False, year=False)
    memory = open_memory(config=MemoryConfig(timeline=days_only))
    for day in ("2026-05-01", "2026-05-02", "2026-05-03"):
        episode(memory, day)
    model = EchoModel()
    ticker = Ticker()
    enable_compaction(
        memory, model, max_summaries=2, background=False, interval=60, monotonic=ticker
    )

    first = memory.recall()
    # Cut short with work left: the next read goes on at once, whatever the interval.
    second = memory.recall()
    third = memory.recall()

    assert (first["compaction"]["written"], first["compaction"]["complete"]) == (2, False)
    assert (second["compaction"]["written"], second["compaction"]["complete"]) == (1, True)
    assert "compaction" not in third
    assert model.calls == ["day", "day", "day"]
    # The last pass was complete: within the interval a read does not look for work at all.
    episode(memory, "2026-05-04")
    memory_clock.set(datetime(2026, 5, 11, tzinfo=UTC))
    assert "compaction" not in memory.recall()
    ticker.now += 61
    assert memory.recall()["compaction"]["written"] == 1


# ------------------------------------------------------------------------- summarizer


def test_the_request_is_a_free_form_generate_with_the_sources_in_order(
    memory: MemoryService,
) -> None:
    first = episode(memory, "2026-05-04T07:15", "Standup\nShip 2.3 today", tags=["team"])
    episode(memory, "2026-05-04T16:00", "Deploy: `make release` in /srv/app")
    long_body = "x" * 50
    episode(memory, "2026-05-04T18:00", f"Notes\n{long_body}")
    sources = memory.compaction_sources(scope_of(memory), "day", "2026-05-04")
    maker = Summarizer(EchoModel(), MODEL, max_output_tokens=700, max_source_chars=30)

    request = maker.request("day", "2026-05-04", sources, clock=memory.clock)

    assert (request.agent_name, request.function_name, request.call_key) == (
        "MemoryCompactor",
        "day",
        "MemoryCompactor.day",
    )
    assert request.return_shape is None and request.schema is None
    assert request.model is not None and request.model.uri == MODEL
    assert request.max_output_tokens == 700
    assert [item.source for item in request.context] == [
        "episodic, 2026-05-04 07:15 #team",
        "episodic, 2026-05-04 16:00",
        "episodic, 2026-05-04 18:00",
    ]
    assert request.context[0].text == "Standup\nShip 2.3 today"
    assert request.context[2].text == f"Notes\n{long_body}"[:30] + " […cut]"
    assert sources[0].id == first
    message = request.built.final_user_message
    assert message.startswith("Context:\n[1] episodic, 2026-05-04 07:15 #team:\n")
    assert "Write the day summary of Monday 4 May 2026 (2026-05-04)" in message
    assert "exactly as written" in message and "Open items" in message
    assert "never invent" in message
    assert request.built.system.startswith("You are MemoryCompactor.")


def test_the_week_template_shapes_week_summaries_only(memory: MemoryService) -> None:
    config = parse_config(
        "timeline:\n  model: ollama://llama3.1\n  week_template: |\n    ## Shipped\n    ## Blocked\n"
    )
    maker = Summarizer.from_config(config, EchoModel())
    day = episode(memory, "2026-05-04")
    sources = memory.compaction_sources(scope_of(memory), "day", "2026-05-04")
    summary = memory.write_summary(
        scope_of(memory), "day", "2026-05-04", title="Monday", body="B", source_ids=[day]
    )
    weekly = memory.compaction_sources(scope_of(memory), "week", "2026-W19")

    week = maker.request("week", "2026-W19", weekly).instruction
    daily = maker.request("day", "2026-05-04", sources).instruction

    assert [entry.id for entry in weekly] == [summary["id"]]
    assert "Follow this outline for the week:\n## Shipped\n## Blocked" in week
    assert "combine them into one account of the whole week" in week
    assert "outline" not in daily


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("timeline: {model: gpt-4.1-mini}", "timeline.model: LLM URI must use an explicit"),
        ("timeline: {model: 'bard://x'}", "Unsupported LLM provider protocol 'bard'"),
        ("timeline: {model: 4}", "timeline.model: Input should be a valid string"),
    ],
)
def test_the_model_in_memory_yml_is_checked(text: str, message: str) -> None:
    with pytest.raises(MemoryServiceError, match=message) as error:
        parse_config(text)
    assert error.value.code == "invalid_config"
    assert error.value.field == "timeline.model"


# ------------------------------------------------------------------------- the command


@pytest.fixture
def compact_workspace(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace and a database whose memory holds two days of January 2020 (long ended,
    so the real clock of the command finds them), and no memory.yml yet."""
    workspace = tmp_path / "app"
    workspace.mkdir()
    database = tmp_path / "memory.db"
    with MemoryService.open(workspace, database=database) as memory:
        episode(memory, "2020-01-06", "Monday: deployed 2.3")
        episode(memory, "2020-01-07", "Tuesday: rolled back 2.3")
    return workspace, database


def invoke(workspace: Path, database: Path, *args: str) -> Any:
    return CliRunner().invoke(
        compact_command, ["--workspace", str(workspace), "--db", str(database), *args]
    )


def test_the_command_plans_then_compacts_with_a_scripted_model(
    compact_workspace: tuple[Path, Path], tmp_path: Path
) -> None:
    workspace, database = compact_workspace
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"MemoryCompactor": ["Summary\n\n- what happened"] * 5}))

    planned = invoke(workspace, database, "--dry-run")
    ran = invoke(workspace, database, "--mock", str(answers), "--json")
    again = invoke(workspace, database, "--mock", str(answers))

    assert planned.exit_code == 0, planned.output
    assert planned.stdout.splitlines()[0].startswith("planned  day   2020-01-06  ")
    assert planned.stdout.splitlines()[-1] == "5 summaries would be written (dry run)"
    assert ran.exit_code == 0, ran.output
    report = json.loads(ran.stdout)
    assert [(item["level"], item["status"]) for item in report["buckets"]] == [
        ("day", "written"),
        ("day", "written"),
        ("week", "written"),
        ("month", "written"),
        ("year", "written"),
    ]
    # Piped, progress is one plain line per bucket on stderr.
    assert ran.stderr.splitlines()[0].startswith("[1/5] written  day   2020-01-06")
    assert again.stdout == "Nothing to compact: no ended bucket holds unsummarised entries\n"


def test_the_command_without_a_model_writes_extractive_summaries(
    compact_workspace: tuple[Path, Path],
) -> None:
    workspace, database = compact_workspace

    result = invoke(workspace, database, "--json")

    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["written"] >= 1 and report["failed"] == 0
    with MemoryService.open(workspace, database=database) as memory:
        summaries = memory.recall("", kind="summary")["results"]
        assert summaries
        for hit in summaries:
            assert memory.get(hit["id"])["source"]["reason"].endswith(", extractive")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--dry-run", "--mock"), "Use either --dry-run or --mock, not both"),
        (
            ("--dry-run", "--scope", "relative/path"),
            "scope 'relative/path' must be 'global' or an absolute workspace path",
        ),
    ],
)
def test_the_command_reports_bad_calls_in_one_line(
    compact_workspace: tuple[Path, Path], args: tuple[str, ...], message: str
) -> None:
    workspace, database = compact_workspace

    result = invoke(workspace, database, *args)

    assert result.exit_code == 1
    assert message in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_the_command_reports_an_invalid_memory_yml(compact_workspace: tuple[Path, Path]) -> None:
    workspace, database = compact_workspace
    (workspace / ".agentscript").mkdir()
    (workspace / ".agentscript" / "memory.yml").write_text("timeline: {model: gpt-4}\n")

    result = invoke(workspace, database, "--dry-run")

    assert result.exit_code == 1
    assert result.stderr.startswith(str(workspace / ".agentscript" / "memory.yml"))
    assert "timeline.model" in result.stderr


def test_failed_summaries_make_the_command_fail(compact_workspace: tuple[Path, Path]) -> None:
    workspace, database = compact_workspace

    result = invoke(workspace, database, "--mock")

    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert [line.split()[:3] for line in lines[:2]] == [
        ["failed", "day", "2020-01-06"],
        ["failed", "day", "2020-01-07"],
    ]
    assert lines[0].endswith(": the model returned no text")
    assert lines[2:] == ["0 written, 0 skipped, 2 failed"]
    with MemoryService.open(workspace, database=database) as memory:
        assert all_summaries(memory, scope_of(memory)) == []


def test_the_command_asks_the_model_in_memory_yml(
    compact_workspace: tuple[Path, Path],
    httpserver: HTTPServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workspace, database = compact_workspace
    (workspace / ".agentscript").mkdir()
    (workspace / ".agentscript" / "memory.yml").write_text(f"timeline: {{model: '{MODEL}'}}\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", httpserver.url_for("/v1"))
    completion = {
        "choices": [{"message": {"content": "Release week\n\n- deployed 2.3"}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20},
    }
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_json(completion)

    result = invoke(workspace, database)

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == (
        "5 written, 0 skipped, 0 failed; 500 input and 100 output tokens"
    )
    bodies = [json.loads(request.get_data()) for request, _ in httpserver.log]
    assert [body["model"] for body in bodies] == ["gpt-4.1-mini"] * 5
    assert bodies[0]["max_completion_tokens"] == 1500
    assert "Monday: deployed 2.3" in bodies[0]["messages"][1]["content"]


class TerminalStream(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_progress_bar(
    compact_workspace: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    workspace, database = compact_workspace
    terminal = TerminalStream()
    monkeypatch.setattr(sys, "stderr", terminal)

    arguments = ["--workspace", str(workspace), "--db", str(database), "--dry-run"]
    code = compact_command.main(arguments, standalone_mode=False)

    assert code == 0
    drawn = terminal.getvalue()
    assert "\x1b[" in drawn and "year 2020" in drawn and "5/5" in drawn
    assert "[1/" not in drawn  # no plain lines at a terminal
    assert "5 summaries would be written" in capsys.readouterr().out
