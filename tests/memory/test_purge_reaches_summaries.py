"""Forget and purge reach summaries: purging an entry removes every summary that drew on it, up
the levels, and brings their other sources back so compaction writes them anew without it (the
secret is gone from the database files too); forgetting a summary brings its sources back
instead of hiding them for good. On SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentscript.memory import FixedClock, MemoryService
from agentscript.memory.compaction import compact

pytest_plugins = ["memsvc_support"]
SECRET = "hunter2zebra"


@pytest.fixture
def memory_backend(each_memory_backend: str) -> str:
    return each_memory_backend


def compacted_week(memory: MemoryService, clock: FixedClock) -> dict[str, str]:
    ids = {
        "secret": memory.remember(
            f"Deploy token is {SECRET}", kind="episodic", event_time="2026-05-04T09:00"
        )["id"],
        "monday": memory.remember("Deployed 2.3", kind="episodic", event_time="2026-05-04T10:00")[
            "id"
        ],
        "tuesday": memory.remember(
            "Rolled back 2.3", kind="episodic", event_time="2026-05-05T10:00"
        )["id"],
    }
    clock.set(datetime(2026, 5, 11, 9, tzinfo=UTC))
    report = compact(memory, None, levels=["day", "week"])
    assert [(item.level, item.bucket) for item in report.written] == [
        ("day", "2026-05-04"),
        ("day", "2026-05-05"),
        ("week", "2026-W19"),
    ]
    for item in report.written:
        assert item.summary_id is not None
        ids[f"{item.level} {item.bucket}"] = item.summary_id
    return ids


def everything(memory: MemoryService) -> list[dict[str, object]]:
    return memory.recall("", include_archived=True, limit=100)["results"]


def test_a_purged_secret_leaves_every_summary_and_compaction_rebuilds_them(
    open_memory: Callable[..., MemoryService], memory_clock: FixedClock
) -> None:
    memory = open_memory()
    ids = compacted_week(memory, memory_clock)
    assert SECRET in memory.get(ids["week 2026-W19"])["body"]

    purged = memory.forget(ids["secret"], purge=True)

    assert purged["archived"] is True and purged["purged"] == [ids["secret"]]
    assert purged["summaries_removed"] == sorted([ids["day 2026-05-04"], ids["week 2026-W19"]])
    # Monday's other entry and Tuesday's day summary are active again.
    assert purged["restored"] == sorted([ids["monday"], ids["day 2026-05-05"]])
    assert memory.recall(SECRET, include_archived=True)["results"] == []
    assert all(SECRET not in str(hit) for hit in everything(memory))
    assert memory.check()["findings"] == []

    rebuilt = compact(memory, None, levels=["day", "week"])

    assert [(item.level, item.bucket) for item in rebuilt.written] == [
        ("day", "2026-05-04"),
        ("week", "2026-W19"),
    ]
    week = memory.get(rebuilt.written[-1].summary_id or "")
    assert "Deployed 2.3" in week["body"] and "Rolled back 2.3" in week["body"]
    assert all(SECRET not in str(hit) for hit in everything(memory))
    assert memory.check()["ok"]


def test_forgetting_a_summary_brings_its_sources_back_for_compaction(
    open_memory: Callable[..., MemoryService], memory_clock: FixedClock
) -> None:
    memory = open_memory()
    ids = compacted_week(memory, memory_clock)

    forgotten = memory.forget(ids["week 2026-W19"], reason="wrong")

    assert forgotten["archived"] is True
    assert forgotten["restored"] == sorted([ids["day 2026-05-04"], ids["day 2026-05-05"]])
    assert memory.check()["findings"] == []
    again = compact(memory, None, levels=["day", "week"])
    assert [(item.level, item.bucket) for item in again.written] == [("week", "2026-W19")]


def test_the_purged_secret_is_not_in_the_sqlite_files(
    open_memory: Callable[..., MemoryService],
    memory_clock: FixedClock,
    memory_database: str | Path,
    memory_backend: str,
) -> None:
    if memory_backend != "sqlite":
        pytest.skip("a file check needs the SQLite file")
    memory = open_memory()
    ids = compacted_week(memory, memory_clock)
    memory.forget(ids["secret"], purge=True)
    compact(memory, None, levels=["day", "week"])
    memory.close()
    database = Path(memory_database)
    files = [path for path in database.parent.iterdir() if path.name.startswith(database.name)]
    assert database in files
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path.name
