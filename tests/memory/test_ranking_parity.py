"""SQLite and PostgreSQL rank alike: the same entries, remembered in the same order on the same
clock, recalled with the same queries, come back with the same scores and relevances in the same
order and the same totals (issue 26). Entries are told apart by their keys, since each store
draws its own ids (and breaks ties of equal scores by them)."""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from agentscript.memory import FixedClock, MemoryService
from memsvc_support import START

pytest_plugins = ["memsvc_support"]

# A small vocabulary, so entries share words in every proportion (common and rare terms, ties).
WORDS = (
    "deploy build ship release rollback canary staging cluster node queue worker retry "
    "timeout latency budget invoice refund ticket billing login password token cache index "
    "schema migration backup restore alert pager incident review design meeting coffee"
).split()
SPEAKERS = ("Ada", "Grace", "Linus")


def remembered(seed: int, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    items = []
    for number in range(count):
        session = f"s{number // 12}"
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14)))
        item: dict[str, Any] = {
            "text": f"{rng.choice(SPEAKERS)}: {text}",
            "kind": "episodic",
            "key": f"turn-{number}",
            "event_time": f"2026-0{1 + number % 9}-1{number % 10}T10:00:00Z",
            "source": {"session": session},
        }
        if rng.random() < 0.2:
            item["tags"] = [rng.choice(WORDS)]
        items.append(item)
    return items


def queries(seed: int, count: int) -> list[str]:
    rng = random.Random(seed + 1)
    return [" ".join(rng.sample(WORDS, rng.randint(1, 4))) for _ in range(count)]


def ranked(memory: MemoryService, query: str) -> tuple[list[tuple[Any, ...]], int]:
    found = memory.recall(query, limit=25, body_chars=0)
    return [(hit["key"], hit["score"], hit["relevance"]) for hit in found["results"]], found[
        "total"
    ]


@pytest.mark.parametrize("seed", [1, 2])
def test_sqlite_and_postgresql_rank_alike(seed: int, tmp_path: Path, memory_postgres: Any) -> None:
    stores = {
        "sqlite": tmp_path / "memory.db",
        "postgres": str(memory_postgres.socket_uri(f"t{uuid.uuid4().hex[:12]}")),
    }
    results: dict[str, list[Any]] = {}
    for name, database in stores.items():
        memory = MemoryService.open(None, database=database, clock=FixedClock(START))
        try:
            for start in range(0, 240, 40):  # batches, then one by one
                memory.remember_many(remembered(seed, 240)[start : start + 40])
            for item in remembered(seed + 100, 20):
                item["key"] = "late-" + item["key"]
                memory.remember(**item)
            results[name] = [ranked(memory, query) for query in queries(seed, 40)]
        finally:
            memory.close()
    assert any(hits for hits, _ in results["sqlite"])  # the queries find something
    for query, left, right in zip(
        queries(seed, 40), results["sqlite"], results["postgres"], strict=True
    ):
        assert left[1] == right[1], f"{query}: totals"
        assert [hit[1:] for hit in left[0]] == [hit[1:] for hit in right[0]], query
        assert untied(left[0]) == untied(right[0]), query


def untied(hits: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The hits with equal scores in key order (each store breaks ties by its own ids), the
    last group of equal scores left out (the limit may cut it at different entries)."""
    if not hits:
        return []
    kept = [hit for hit in hits if hit[1] != hits[-1][1]]
    return sorted(kept, key=lambda hit: (-hit[1], hit[0]))
