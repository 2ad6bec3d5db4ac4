"""Recall's relevance: a number from 0 to 1 that means the same in every call, so a host can
tell the one right answer from padding even when every score is tiny."""

from __future__ import annotations

import pytest

from agentscript.memory import MemoryService, MemoryServiceError

pytest_plugins = ["memsvc_support"]


@pytest.fixture
def memory_backend(each_memory_backend: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL (memsvc_support.memory_database)."""
    return each_memory_backend


def common_words_everywhere(memory: MemoryService) -> str:
    """Twelve notes that each hold one of "team", "weekly", "notes" (so every one of the
    three is held by most entries and weighs BM25's floor), and the one note that holds all
    three; returns its id."""
    words = ["team", "weekly", "notes"]
    for index in range(12):
        memory.remember(f"Entry {index}\n{words[index % 3]} {words[(index + 1) % 3]} item")
    return str(memory.remember("Friday sync\nteam weekly notes")["id"])


def test_the_right_hit_reads_1_and_padding_reads_low_when_every_score_is_tiny(
    memory: MemoryService,
) -> None:
    right = common_words_everywhere(memory)
    found = memory.recall("team weekly notes", limit=20)["results"]
    assert all(hit["score"] < 1e-4 for hit in found)  # BM25 cannot tell them apart
    by_id = {hit["id"]: hit["relevance"] for hit in found}
    assert by_id.pop(right) == 1.0
    assert by_id and all(value == pytest.approx(2 / 3, abs=0.001) for value in by_id.values())


def test_a_rare_word_carries_the_weight_of_a_query(memory: MemoryService) -> None:
    for index in range(10):
        memory.remember(f"Trip {index}\nThe user went to the city for the weekend")
    berlin = memory.remember("Home\nThe user lives in Berlin")["id"]
    found = {hit["id"]: hit["relevance"] for hit in memory.recall("user city Berlin")["results"]}
    assert found[berlin] > 0.9
    assert max(value for key, value in found.items() if key != berlin) < 0.1


def test_min_relevance_leaves_out_the_weak_hits(memory: MemoryService) -> None:
    right = common_words_everywhere(memory)
    found = memory.recall("team weekly notes", min_relevance=0.9)
    assert [hit["id"] for hit in found["results"]] == [right]
    with pytest.raises(MemoryServiceError, match="min_relevance must be a number from 0 to 1"):
        memory.recall("team", min_relevance=2)


def test_a_recall_without_words_has_no_relevance(memory: MemoryService) -> None:
    memory.remember("Deploy with make release")
    (hit,) = memory.recall("")["results"]
    assert hit["relevance"] is None


def test_a_turn_found_through_its_neighbours_alone_reads_0(memory: MemoryService) -> None:
    source = {"session": "s1"}
    memory.remember("We talked about the lighthouse", kind="episodic", source=source)
    follow_up = memory.remember("It sounds lovely", kind="episodic", source=source)["id"]
    found = {hit["id"]: hit["relevance"] for hit in memory.recall("lighthouse")["results"]}
    assert found[follow_up] == 0.0
