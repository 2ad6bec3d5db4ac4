"""The SQLite store's ranking (sqlite_ranking.py): the best entries found without scoring
every match must be exactly the best of every entry's score, ties included, float for float."""

from __future__ import annotations

import heapq
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscript.memory import MemoryService, sqlite_postings, sqlite_ranking
from agentscript.memory.store import FieldWeights
from postings_support import indexed

# Skewed on purpose: a few words most entries hold, a few only some do, so that the rarest
# terms alone decide the best and the common ones are looked up, or not, for a few entries.
COMMON = ("the", "make", "like")
RARE = ("kiln", "glaze", "fern", "dune")
WORDS = COMMON * 6 + RARE
WEIGHTS = FieldWeights().as_tuple()

entries_strategy = st.lists(
    st.tuples(
        st.sampled_from(("/a", "/b")),
        st.lists(st.lists(st.sampled_from(WORDS), max_size=5), min_size=5, max_size=5),
    ),
    min_size=1,
    max_size=80,
)


@pytest.fixture
def postings(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(tmp_path / "postings.db", isolation_level=None)
    for statement in sqlite_postings.SCHEMA:
        connection.execute(statement)
    yield connection
    connection.close()


def fill(connection: sqlite3.Connection, entries: list[tuple[str, list[list[str]]]]) -> None:
    connection.execute("BEGIN")
    sqlite_postings.clear(connection)
    items = [indexed(seq, scope, fields) for seq, (scope, fields) in enumerate(entries, 1)]
    sqlite_postings.add(connection, items[: len(items) // 2])
    sqlite_postings.pack(connection)  # half in blocks, half in the tail
    sqlite_postings.add(connection, items[len(items) // 2 :])
    connection.execute("COMMIT")


def assert_best_of(every: dict[int, float], best: sqlite_ranking.Best, wanted: int) -> None:
    """`best` holds every entry scoring at least the `wanted`-th best of `every`, with the
    very same score, and nothing that matches nothing."""
    floor = heapq.nlargest(wanted, every.values())[-1] if every else 0.0
    assert {seq for seq, score in every.items() if score >= floor} <= best.scores.keys()
    assert all(every[seq] == score for seq, score in best.scores.items())


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    entries=entries_strategy,
    terms=st.lists(st.sampled_from(COMMON + RARE), min_size=1, max_size=5, unique=True),
    wanted=st.integers(min_value=1, max_value=12),
    scopes=st.sampled_from([("/a",), ("/a", "/b")]),
)
def test_the_best_found_are_the_best_of_every_score_ties_included(
    postings: sqlite3.Connection,
    entries: list[tuple[str, list[list[str]]]],
    terms: list[str],
    wanted: int,
    scopes: tuple[str, ...],
) -> None:
    fill(postings, entries)
    reader = sqlite_postings.PostingsReader()
    every = sqlite_ranking.scores(postings, terms, scopes, WEIGHTS, reader)
    best = sqlite_ranking.best(postings, terms, scopes, WEIGHTS, reader, wanted=wanted)
    assert_best_of(every, best, wanted)
    assert set(sqlite_ranking.matched(postings, terms, scopes, reader).tolist()) == every.keys()


def test_common_terms_are_looked_up_only_for_entries_that_can_still_win(
    postings: sqlite3.Connection,
) -> None:
    # 200 entries hold "the"; 3 also hold "kiln" (rare, so worth far more): those 3 are the
    # best 3, and no entry holding "the" alone needs a score.
    entries = [("/a", [[], [], [], ["the", "make"], []]) for _ in range(200)]
    for seq in (17, 99, 150):
        entries[seq - 1] = ("/a", [[], [], [], ["the", "kiln"], []])
    fill(postings, entries)
    reader = sqlite_postings.PostingsReader()
    every = sqlite_ranking.scores(postings, ["the", "kiln", "make"], ("/a",), WEIGHTS, reader)
    best = sqlite_ranking.best(
        postings, ["the", "kiln", "make"], ("/a",), WEIGHTS, reader, wanted=3
    )
    assert not best.every
    assert best.scores == {seq: every[seq] for seq in (17, 99, 150)}
    assert_best_of(every, best, 3)


def test_a_common_term_held_often_enough_still_wins(postings: sqlite3.Connection) -> None:
    # "kiln" is rare but sits in three long entries; "the", held by a third of the entries, is
    # twice in the tags of one short entry, which so scores best. Taking the rare term first
    # must not stop before the common one could still overtake it.
    entries = [("/a", [[], [], [], ["pot"] * 6, []]) for _ in range(100)]
    for seq in range(30):
        entries[seq] = ("/a", [[], [], [], ["the", *["pot"] * 6], []])
    entries[5] = ("/a", [["the", "the"], [], [], [], []])
    for seq in (60, 70, 80):
        entries[seq] = ("/a", [[], [], [], ["kiln", *["pot"] * 30], []])
    fill(postings, entries)
    reader = sqlite_postings.PostingsReader()
    every = sqlite_ranking.scores(postings, ["the", "kiln"], ("/a",), WEIGHTS, reader)
    assert max(every, key=every.__getitem__) == 6
    best = sqlite_ranking.best(postings, ["the", "kiln"], ("/a",), WEIGHTS, reader, wanted=1)
    assert 6 in best.scores
    assert_best_of(every, best, 1)


def test_entries_tied_with_the_last_place_are_all_kept(postings: sqlite3.Connection) -> None:
    # Ten identical entries hold the rare term: asking for the best 2 keeps all ten (ties go
    # by accessed_at and id, which the store decides).
    entries = [("/a", [[], [], [], ["the"], []]) for _ in range(100)]
    for seq in range(40, 50):
        entries[seq] = ("/a", [[], [], [], ["the", "kiln"], []])
    fill(postings, entries)
    reader = sqlite_postings.PostingsReader()
    best = sqlite_ranking.best(postings, ["kiln", "the"], ("/a",), WEIGHTS, reader, wanted=2)
    assert sorted(best.scores) == list(range(41, 51))
    assert len(set(best.scores.values())) == 1


def test_a_recall_whose_best_are_archived_looks_further_down(tmp_path: Path) -> None:
    """The store's search asks for the best of a pool; when its filter turns some away
    (archived entries), it asks again for more, so the results are the best that pass."""
    with MemoryService.open(None, database=tmp_path / "memory.db") as memory:
        memory.remember_many(
            {"text": f"the pottery class met again, week {number}", "scope": "/p"}
            for number in range(150)
        )
        kiln = [
            result["id"]
            for result in memory.remember_many(
                {"text": f"the kiln fired the pottery, batch {number}", "scope": "/p"}
                for number in range(12)
            )
        ]
        for identifier in kiln[:10]:
            memory.forget(identifier, scope="/p")
        found = memory.recall("kiln pottery", scope="/p", limit=5)
    assert {hit["id"] for hit in found["results"][:2]} == set(kiln[10:])
    assert found["total"] == 152
