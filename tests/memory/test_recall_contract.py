"""The seed's recall contract, on SQLite and PostgreSQL: `total` counts the matches before the
limit, mode `global-first` lists global hits first, field precedence tag > title > body holds
for entries matching alike whatever their age, and equal scores are ordered by accessed_at, then
by id, never by chance."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from agentscript.memory import FixedClock, MemoryConfig, MemoryService
from agentscript.memory.recall import RecallTuning, precedence_margin
from agentscript.memory.store import FieldWeights

pytest_plugins = ["memsvc_support"]


@pytest.fixture
def memory_backend(each_memory_backend: str) -> str:
    return each_memory_backend


def ids(found: dict) -> list[str]:
    return [hit["id"] for hit in found["results"]]


# --------------------------------------------------------------------------------- total


def test_total_counts_every_match_before_the_limit(memory: MemoryService) -> None:
    # More matches than the ranking's pool (100), so the total is counted, not the pool's size.
    memory.remember_many([{"text": f"Deploy note {n}\nship build {n}"} for n in range(130)])
    memory.remember_many([{"text": f"Unrelated {n}"} for n in range(5)])
    found = memory.recall("deploy", limit=5)
    assert (found["count"], found["total"]) == (5, 130)
    assert found.total == 130
    few = memory.recall("ship build 7", limit=3)
    assert (few["count"], few["total"]) == (3, 130)
    # Without words: every entry the filters let through.
    assert memory.recall("", limit=2)["total"] == 135
    assert memory.recall("zebra")["total"] == 0


def test_total_counts_within_the_filters(memory: MemoryService) -> None:
    memory.remember_many(
        [{"text": f"Deploy step {n}", "kind": "episodic"} for n in range(4)]
        + [{"text": f"Deploy rule {n}", "tags": ["ops"]} for n in range(3)]
    )
    archived = memory.remember("Deploy rule that went stale")
    memory.forget(archived["id"])
    assert memory.recall("deploy")["total"] == 7
    assert memory.recall("deploy", kind="episodic")["total"] == 4
    assert memory.recall("deploy", tags=["ops"], limit=1)["total"] == 3
    assert memory.recall("deploy", include_archived=True)["total"] == 8


# -------------------------------------------------------------------------- global-first


def test_global_first_lists_every_global_hit_before_the_workspace(
    open_memory: Callable[..., MemoryService],
) -> None:
    first = open_memory(config=MemoryConfig(scope="global-first"))
    pooled = open_memory()
    strong = first.remember("Staging\nstaging staging", tags=["staging"])["id"]
    weak = first.remember(
        "Team notes\nlong notes where staging comes up once among many other words",
        scope="global",
    )["id"]
    also_global = first.remember("Staging host is blue", scope="global")["id"]
    found = first.recall("staging")
    assert set(ids(found)[:2]) == {weak, also_global}
    assert ids(found)[2] == strong
    assert [hit["scope"] for hit in found["results"]] == ["global", "global", first.workspace]
    assert found["total"] == 3
    # The limit keeps the first of that order.
    assert set(ids(first.recall("staging", limit=2))) == {weak, also_global}
    # In the default mode the same entries are ranked together: the strong one leads.
    assert ids(pooled.recall("staging"))[0] == strong


# ---------------------------------------------------------------------- field precedence


def test_a_tag_hit_outranks_a_title_hit_outranks_a_body_hit_whatever_their_age(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    """Entries of equal length holding the word once, each in another field; the body hit is
    the newest and the tag hit the oldest, so recency would favour the reverse order."""
    in_tag = memory.remember("alpha gamma", title="notes one", tags=["deploy"])["id"]
    memory_clock.advance(timedelta(days=10))
    in_title = memory.remember("alpha gamma", title="deploy two", tags=["misc"])["id"]
    memory_clock.advance(timedelta(days=10))
    in_body = memory.remember("deploy gamma", title="notes three", tags=["misc"])["id"]
    assert ids(memory.recall("deploy")) == [in_tag, in_title, in_body]


def test_no_tuning_may_let_recency_overturn_field_precedence() -> None:
    margin = precedence_margin(FieldWeights())
    assert 1.05 < margin < 1.08
    RecallTuning(recency_weight=margin - 1.0 - 0.001)
    with pytest.raises(ValueError, match="could overturn field precedence"):
        RecallTuning(recency_weight=margin - 1.0)
    with pytest.raises(ValueError, match="could overturn field precedence"):
        RecallTuning(weights=FieldWeights(tags=1.0, title=1.0, body=1.0))


# ------------------------------------------------------------------------------ ties


def test_equal_scores_go_to_the_most_recently_recalled_then_by_id(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    tied = [
        memory.remember("deploy", title=f"note {name}", kind="knowledge")["id"]
        for name in ("bravo", "delta", "kilo", "oscar")
    ]
    by_id = sorted(tied)
    # Never recalled: equal accessed_at, so ids decide, the same way every time.
    assert ids(memory.recall("deploy")) == by_id
    assert ids(memory.recall("deploy")) == by_id
    memory_clock.advance(timedelta(minutes=5))
    picked = ids(memory.recall("kilo"))
    assert len(picked) == 1
    memory_clock.advance(timedelta(minutes=5))
    assert ids(memory.recall("deploy")) == [*picked, *(i for i in by_id if i != picked[0])]
    # The limit keeps the most recently recalled of the tied entries.
    memory_clock.advance(timedelta(minutes=5))
    assert ids(memory.recall("oscar"))
    oscar = [i for i in tied if memory.get(i)["title"] == "note oscar"]
    assert ids(memory.recall("deploy", limit=1)) == oscar


def test_the_tie_order_survives_the_store_closing(
    open_memory: Callable[..., MemoryService], memory_clock: FixedClock
) -> None:
    """Pending accessed_at moments are written on close, so the order holds for the next
    process."""
    memory = open_memory()
    words = {memory.remember("deploy", title=f"note {word}")["id"]: word for word in ("ab", "cd")}
    later = max(words)
    memory_clock.advance(timedelta(minutes=1))
    assert ids(memory.recall(words[later])) == [later]
    memory.close()
    assert ids(open_memory().recall("deploy")) == [later, min(words)]
