"""The SQLite store's own text index (sqlite_postings.py) against FTS5 itself: the same BM25
scores, float for float, whatever was added, packed, merged and removed."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscript.memory import sqlite_postings, sqlite_ranking
from agentscript.memory.store import INDEXED_FIELDS
from postings_support import fts5_scores, indexed, scope_term

WORDS = ("apple", "bowl", "clay", "dune", "east", "fern", "glaze", "kiln")
WEIGHTS = (4.0, 2.0, 2.0, 1.0, 0.35)
SCOPES = ("/a", "/b")

# One entry: a scope and, for each indexed field, its words.
entries_strategy = st.lists(
    st.tuples(
        st.sampled_from(SCOPES),
        st.lists(st.lists(st.sampled_from(WORDS), max_size=6), min_size=5, max_size=5),
    ),
    min_size=1,
    max_size=40,
)


# A ShapeBook per postings file, kept across the examples Hypothesis runs on it.
READERS: dict[int, sqlite_postings.PostingsReader] = {}


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pack every few postings, fill blocks up to ten postings (a 2-byte id each, after the
    typecode), merge every third block, so a few entries exercise the blocks, the tail and
    the merges together."""
    monkeypatch.setattr(sqlite_postings, "PACK_AT", 7)
    monkeypatch.setattr(sqlite_postings, "BLOCK_BYTES", 21)
    monkeypatch.setattr(sqlite_postings, "MERGE_AT", 3)


@pytest.fixture
def databases(tmp_path: Path) -> Iterator[tuple[sqlite3.Connection, sqlite3.Connection]]:
    """A connection holding the postings, and one holding an FTS5 table built the way the
    store's schema 2 built it (a scope term, then the fields, `ascii` tokenizer). Hypothesis
    runs every example of a test on the same two."""
    ours = sqlite3.connect(tmp_path / "postings.db", isolation_level=None)
    for statement in sqlite_postings.SCHEMA:
        ours.execute(statement)
    fts5 = sqlite3.connect(tmp_path / "fts5.db", isolation_level=None)
    fts5.execute(
        f"CREATE VIRTUAL TABLE terms USING fts5(scope_term, {', '.join(INDEXED_FIELDS)}, "
        "tokenize = 'ascii')"
    )
    yield ours, fts5
    READERS.pop(id(ours), None)
    ours.close()
    fts5.close()


@pytest.mark.usefixtures("small_blocks")
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    entries=entries_strategy,
    removed=st.sets(st.integers(min_value=1, max_value=40)),
    terms=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4, unique=True),
    scopes=st.sampled_from([("/a",), ("/b",), SCOPES]),
)
def test_scores_are_fts5_scores_float_for_float(
    databases: tuple[sqlite3.Connection, sqlite3.Connection],
    entries: list[tuple[str, list[list[str]]]],
    removed: set[int],
    terms: list[str],
    scopes: tuple[str, ...],
) -> None:
    ours, fts5 = databases
    ours.execute("BEGIN")
    sqlite_postings.clear(ours)
    fts5.execute("DELETE FROM terms")
    items = [indexed(seq, scope, fields) for seq, (scope, fields) in enumerate(entries, 1)]
    for item, (scope, fields) in zip(items, entries, strict=True):
        sqlite_postings.add(ours, [item])
        fts5.execute(
            f"INSERT INTO terms (rowid, scope_term, {', '.join(INDEXED_FIELDS)}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [item.seq, scope_term(scope), *(" ".join(words) for words in fields)],
        )
    gone = [item for item in items if item.seq in removed]
    sqlite_postings.remove(ours, gone)
    for item in gone:
        fts5.execute("DELETE FROM terms WHERE rowid = ?", (item.seq,))
    ours.execute("COMMIT")

    # The file's own reader, kept from example to example: it must follow what the file gains.
    reader = READERS.setdefault(id(ours), sqlite_postings.PostingsReader())
    assert sqlite_ranking.scores(ours, terms, scopes, WEIGHTS, reader) == fts5_scores(
        fts5, terms, scopes, WEIGHTS
    )
    assert sqlite_postings.problems(ours, len(items) - len(gone)) == []


def test_the_tail_is_packed_into_blocks_and_blocks_are_merged(
    small_blocks: None, databases: tuple[sqlite3.Connection, sqlite3.Connection]
) -> None:
    ours, _ = databases

    def layout() -> tuple[list[int], int]:
        blocks = ours.execute(
            "SELECT (length(shapes) - 1) / 2 FROM memory_postings WHERE term = 'clay' "
            "ORDER BY first_seq"
        ).fetchall()
        return [size for (size,) in blocks], sqlite_postings.totals(ours).tail

    for seq in range(1, 31):
        sqlite_postings.add(ours, [indexed(seq, "/a", [[], [], [], ["clay"], []])])
        if seq == 21:
            # Packed at 7 and 14 into one block (it held fewer than ten), at 21 into a second.
            assert layout() == ([14, 7], 0)
    # At 28 the third block merged all three.
    assert layout() == ([28], 2)
    assert set(
        sqlite_ranking.scores(ours, ["clay"], ("/a",), WEIGHTS, sqlite_postings.PostingsReader())
    ) == set(range(1, 31))
    assert (
        set(
            sqlite_ranking.scores(
                ours, ["clay"], ("/b",), WEIGHTS, sqlite_postings.PostingsReader()
            )
        )
        == set()
    )


def test_a_damaged_block_is_reported(
    databases: tuple[sqlite3.Connection, sqlite3.Connection],
) -> None:
    ours, _ = databases
    sqlite_postings.add(ours, [indexed(1, "/a", [[], [], [], ["clay", "kiln"], []])])
    sqlite_postings.pack(ours)
    assert sqlite_postings.problems(ours, 1) == []
    ours.execute("UPDATE memory_postings SET shapes = X'05' WHERE term = 'clay'")
    assert sqlite_postings.problems(ours, 1) == ["the text index has 1 damaged blocks of postings"]
    assert sqlite_postings.problems(ours, 2)[0].startswith("the text index holds 1 entries of 2")
