"""The SQLite store's own text index (sqlite_postings.py) against FTS5 itself: the same BM25
scores, float for float, whatever was added, packed, merged and removed."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator, Sequence
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscript.memory import sqlite_postings, sqlite_ranking
from agentscript.memory.store import INDEXED_FIELDS
from postings_support import Twins, fts5_scores, indexed, scope_term

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
    """Pack every few postings, blocks of up to ten postings, written a few postings at a
    time and encoded fewer at a time, so a few entries exercise the blocks, the tail, the
    merges and a pack's runs together."""
    monkeypatch.setattr(sqlite_postings, "PACK_AT", 7)
    monkeypatch.setattr(sqlite_postings, "BLOCK_POSTINGS", 10)
    monkeypatch.setattr(sqlite_postings, "_WRITTEN_POSTINGS", 5)
    monkeypatch.setattr(sqlite_postings, "_ENCODED_POSTINGS", 2)


@pytest.fixture
def databases(tmp_path: Path) -> Iterator[tuple[sqlite3.Connection, sqlite3.Connection]]:
    """A connection holding the postings, and one holding an FTS5 table built the way the
    store's schema 2 built it (a scope term, then the fields, `ascii` tokenizer). Hypothesis
    runs every example of a test on the same two."""
    pair = Twins(tmp_path)
    yield pair.ours, pair.fts5
    READERS.pop(id(pair.ours), None)
    pair.close()


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
            "SELECT postings FROM memory_postings WHERE term = 'clay' ORDER BY first_seq"
        ).fetchall()
        return [size for (size,) in blocks], sqlite_postings.totals(ours).tail

    layouts = {}
    for seq in range(1, 31):
        sqlite_postings.add(ours, [indexed(seq, "/a", [[], [], [], ["clay"], []])])
        layouts[seq] = layout()
    # Packed at 7 into a block; at 14 with that one (no larger), cut at ten postings; at 21
    # with the rest (the full block is never merged); at 28 likewise.
    assert [layouts[seq] for seq in (6, 7, 14, 21, 30)] == [
        ([], 6),
        ([7], 0),
        ([10, 4], 0),
        ([10, 10, 1], 0),
        ([10, 10, 8], 2),
    ]
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


def test_packs_rewrite_each_posting_a_logarithmic_number_of_times(
    monkeypatch: pytest.MonkeyPatch, databases: tuple[sqlite3.Connection, sqlite3.Connection]
) -> None:
    """A term in every entry, packed every few entries: the blocks halve in size from the
    oldest to the newest, and each posting is written to a block about log2(n) times, not
    once per pack (as appending to the last block would)."""
    ours, _ = databases
    monkeypatch.setattr(sqlite_postings, "PACK_AT", 5)
    monkeypatch.setattr(sqlite_postings, "BLOCK_POSTINGS", 4_096)
    monkeypatch.setattr(sqlite_postings, "SMALL_SHARE", 2 * 4_096)  # no small blocks here
    written = []
    write_blocks = sqlite_postings._write_blocks

    def counted(connection: sqlite3.Connection, blocks: Sequence[sqlite_postings._Block]) -> None:
        written.extend(len(seqs) for _, _, seqs, _ in blocks)
        write_blocks(connection, blocks)

    monkeypatch.setattr(sqlite_postings, "_write_blocks", counted)
    entries = 2_000
    for seq in range(1, entries + 1):
        sqlite_postings.add(ours, [indexed(seq, "/a", [[], [], [], ["clay"], []])])
    sizes = [
        size
        for (size,) in ours.execute(
            "SELECT postings FROM memory_postings WHERE term = 'clay' ORDER BY first_seq"
        )
    ]
    assert sum(sizes) == entries
    assert all(earlier > later for earlier, later in pairwise(sizes)), sizes
    assert len(sizes) <= math.log2(entries) + 1
    packs = entries // 5
    assert packs * 5 < sum(written) <= entries * (math.log2(entries) + 1)
    assert sum(written) < entries * 12  # appending to one block would write ~packs²·5/2


def test_a_rare_term_keeps_one_small_block_across_packs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A term in one entry of each pack gets one block, merged with the new posting at each
    pack while they stay within BLOCK_POSTINGS / SMALL_SHARE (here 4), then a new one."""
    monkeypatch.setattr(sqlite_postings, "PACK_AT", 9)
    monkeypatch.setattr(sqlite_postings, "BLOCK_POSTINGS", 64)
    monkeypatch.setattr(sqlite_postings, "SMALL_SHARE", 16)
    twins = Twins(tmp_path)
    try:
        for seq in range(1, 22):
            twins.add(
                seq, "/a", [[], [], [], ["rare" if seq % 3 == 0 else f"w{seq}", "x", "y"], []]
            )
        sizes = twins.ours.execute(
            "SELECT postings FROM memory_postings WHERE term = 'rare' ORDER BY first_seq"
        ).fetchall()
        # Seven packs: merged into one of 4, then the next three into one of 3 (by halves, as
        # larger blocks merge, it would be 4, 2 and 1).
        assert sizes == [(4,), (3,)]
        assert twins.scores(["rare", "x"], ["/a"]) == twins.fts5_scores(["rare", "x"], ["/a"])
        assert sqlite_postings.problems(twins.ours, 21) == []
    finally:
        twins.close()


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


# ------------------------------------------------------------------- what a reader keeps


def _kept_equals_fresh(
    ours: sqlite3.Connection, reader: sqlite_postings.PostingsReader, terms: list[str]
) -> None:
    """The kept reader scores (and counts) as a reader that never read the file before."""
    for scopes in (("/a",), SCOPES):
        fresh = sqlite_postings.PostingsReader()
        assert sqlite_ranking.scores(ours, terms, scopes, WEIGHTS, reader) == (
            sqlite_ranking.scores(ours, terms, scopes, WEIGHTS, fresh)
        )
    with sqlite_postings.read_snapshot(ours):
        assert sqlite_postings.documents_holding(ours, terms, reader) == (
            sqlite_postings.documents_holding(ours, terms)
        )


def test_a_kept_reader_follows_appends_packs_and_removals(
    small_blocks: None, databases: tuple[sqlite3.Connection, sqlite3.Connection]
) -> None:
    ours, _ = databases
    reader = sqlite_postings.PostingsReader()
    items = [
        indexed(seq, SCOPES[seq % 2], [[], [], [], ["clay", WORDS[seq % 8]], []])
        for seq in range(1, 40)
    ]
    for item in items:
        sqlite_postings.add(ours, [item])  # the tail grows, packs every few entries
        _kept_equals_fresh(ours, reader, ["clay", "kiln", "fern"])
    for item in items[::5]:
        sqlite_postings.remove(ours, [item])  # from blocks and from the tail
        _kept_equals_fresh(ours, reader, ["clay", "kiln", "fern"])
    # Re-indexed out of seq order (a replace keeps the seq): a new generation.
    sqlite_postings.add(ours, [indexed(1, "/a", [[], [], [], ["kiln", "kiln"], []])])
    _kept_equals_fresh(ours, reader, ["clay", "kiln", "fern"])
    assert sqlite_postings.problems(ours, len(items) - len(items[::5]) + 1) == []


def test_a_reader_keeps_nothing_a_rollback_undoes(
    small_blocks: None, databases: tuple[sqlite3.Connection, sqlite3.Connection]
) -> None:
    """Inside a write the reader sees the write's own postings (packed or in the tail); once
    it is rolled back, and other entries took the same seqs, it scores only what is there."""
    ours, _ = databases
    reader = sqlite_postings.PostingsReader()
    for seq in range(1, 6):
        sqlite_postings.add(ours, [indexed(seq, "/a", [[], [], [], ["clay"], []])])
    _kept_equals_fresh(ours, reader, ["clay", "kiln"])
    for pack in (False, True):
        ours.execute("BEGIN IMMEDIATE")
        for seq in range(6, 9):
            sqlite_postings.add(ours, [indexed(seq, "/a", [[], [], [], ["kiln"], []])])
        if pack:
            sqlite_postings.pack(ours)
        inside = sqlite_ranking.scores(ours, ["kiln"], ("/a",), WEIGHTS, reader)
        assert set(inside) == {6, 7, 8}
        ours.execute("ROLLBACK")
        assert sqlite_ranking.scores(ours, ["kiln"], ("/a",), WEIGHTS, reader) == {}
    for seq in range(6, 9):  # the same seqs, other terms
        sqlite_postings.add(ours, [indexed(seq, "/a", [[], [], [], ["clay", "fern"], []])])
    assert set(sqlite_ranking.scores(ours, ["clay"], ("/a",), WEIGHTS, reader)) == set(range(1, 9))
    _kept_equals_fresh(ours, reader, ["clay", "kiln", "fern"])


def test_a_reader_keeps_at_most_its_bound_of_bytes(
    databases: tuple[sqlite3.Connection, sqlite3.Connection],
) -> None:
    ours, _ = databases
    sqlite_postings.add(
        ours,
        [indexed(seq, "/a", [[], [], [], [WORDS[seq % 8], "clay"], []]) for seq in range(1, 401)],
    )
    sqlite_postings.pack(ours)
    posting = 16  # an 8-byte seq and an 8-byte shape id
    reader = sqlite_postings.PostingsReader(cache_bytes=120 * posting)
    for term in WORDS:
        sqlite_ranking.scores(ours, [term], ("/a",), WEIGHTS, reader)
        assert reader.cached_bytes <= 120 * posting
    assert reader.cached_bytes == 100 * posting  # the last two terms of 50 postings each
    sqlite_ranking.scores(ours, ["clay"], ("/a",), WEIGHTS, reader)  # 400: never kept
    assert reader.cached_bytes == 100 * posting


def test_a_total_takes_the_postings_its_ranking_read_while_nothing_changed(
    small_blocks: None,
    databases: tuple[sqlite3.Connection, sqlite3.Connection],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A recall ranks, then counts its matches: the count takes what the ranking read, even
    with no cache at all, but never across a change of the file, nor from a write that was
    rolled back."""
    ours, _ = databases
    for seq in range(1, 41):
        sqlite_postings.add(ours, [indexed(seq, "/a", [[], [], [], ["clay", WORDS[seq % 8]], []])])
    reads: list[str] = []
    read_blocks = sqlite_postings._read_blocks

    def counted(connection: sqlite3.Connection, term: str, keys: tuple[int, ...]) -> object:
        reads.append(term)
        return read_blocks(connection, term, keys)

    monkeypatch.setattr(sqlite_postings, "_read_blocks", counted)
    reader = sqlite_postings.PostingsReader(cache_bytes=0)
    terms = ["clay", "kiln"]

    def ranked_then_counted() -> list[int]:
        sqlite_ranking.best(ours, terms, ("/a",), WEIGHTS, reader, wanted=3)
        reads.clear()
        return [int(seq) for seq in sqlite_ranking.matched(ours, terms, ("/a",), reader)]

    assert ranked_then_counted() == list(range(1, 41))
    assert reads == []  # nothing read again
    for _ in range(2):  # a count alone holds nothing: a query holds its ranking's reads only
        sqlite_ranking.matched(ours, ["fern"], ("/a",), reader)
    assert reads == ["fern", "fern"]
    sqlite_ranking.best(ours, terms, ("/a",), WEIGHTS, reader, wanted=3)
    sqlite_postings.add(ours, [indexed(41, "/a", [[], [], [], ["kiln"], []])])  # appended
    assert sqlite_ranking.matched(ours, terms, ("/a",), reader).tolist() == list(range(1, 42))
    sqlite_ranking.best(ours, terms, ("/a",), WEIGHTS, reader, wanted=3)
    sqlite_postings.remove(ours, [indexed(2, "/a", [[], [], [], ["clay", "east"], []])])
    assert 2 not in sqlite_ranking.matched(ours, terms, ("/a",), reader).tolist()
    # Read inside a write that is rolled back, then the same counts committed anew.
    ours.execute("BEGIN IMMEDIATE")
    sqlite_postings.add(ours, [indexed(42, "/a", [[], [], [], ["kiln"], []])])
    sqlite_ranking.best(ours, terms, ("/a",), WEIGHTS, reader, wanted=3)
    ours.execute("ROLLBACK")
    sqlite_postings.add(ours, [indexed(42, "/a", [[], [], [], ["fern"], []])])
    assert 42 not in sqlite_ranking.matched(ours, terms, ("/a",), reader).tolist()
