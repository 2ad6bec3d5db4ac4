"""The SQLite store's text index at its corners, held to FTS5's bm25() float for float: terms
most entries hold (the IDF floor), wide arrays (shape ids past 65,535, seq gaps past 65,535,
seqs past 2**32), long entries and other weights, blocks whose seq ranges overlap after
re-indexing, blocks emptied by removals; and what `problems` (verify) must and must not report.
"""

from __future__ import annotations

import math
import sqlite3
from array import array
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscript.memory import sqlite_postings
from agentscript.memory.store import BM25_MIN_IDF
from postings_support import Twins, body


@pytest.fixture
def twins(tmp_path: Path) -> Iterator[Twins]:
    pair = Twins(tmp_path)
    yield pair
    pair.close()


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pack every 7 postings, blocks of up to ten postings."""
    monkeypatch.setattr(sqlite_postings, "PACK_AT", 7)
    monkeypatch.setattr(sqlite_postings, "BLOCK_POSTINGS", 10)


def blocks(twins: Twins, term: str) -> list[tuple[int, int, str, str]]:
    """(first_seq, last_seq, seqs typecode, shapes typecode) of each block of `term`, whose
    arrays are in its row or in memory_posting_blocks."""
    rows = twins.ours.execute(
        "SELECT p.first_seq, p.last_seq, COALESCE(p.seqs, b.seqs), COALESCE(p.shapes, b.shapes) "
        "FROM memory_postings AS p LEFT JOIN memory_posting_blocks AS b ON b.block = p.block "
        "WHERE p.term = ? ORDER BY p.first_seq",
        (term,),
    ).fetchall()
    return [(first, last, chr(seqs[0]), chr(shapes[0])) for first, last, seqs, shapes in rows]


def test_terms_half_or_most_entries_hold_take_fts5s_idf_floor(twins: Twins) -> None:
    for seq in range(1, 11):
        words = ["clay"] * (seq <= 8) + ["kiln"] * (seq <= 5) + ["fern"] * (seq == 1)
        twins.add(seq, "/a", body(*words, "filler"))
    # clay: 8 of 10 (log < 0), kiln: 5 of 10 (log = 0): both score with IDF 1e-6.
    assert math.log((10 - 5 + 0.5) / (5 + 0.5)) == 0.0
    for terms in (["clay"], ["kiln"], ["clay", "kiln"], ["fern", "clay", "kiln"]):
        ours = twins.scores(terms, ["/a"])
        assert ours == twins.fts5_scores(terms, ["/a"])
    assert 0.0 < max(twins.scores(["clay", "kiln"], ["/a"]).values()) < 10 * BM25_MIN_IDF


def test_shape_ids_past_65535_are_stored_in_4_byte_arrays(twins: Twins) -> None:
    # Shapes nobody holds take the first 70,000 ids, so the entries' shapes come after.
    twins.ours.execute("BEGIN")
    twins.ours.executemany(
        "INSERT INTO memory_posting_shapes (shape) VALUES (?)",
        [(f"{length} 9 9 9 9 9",) for length in range(1_000_000, 1_070_000)],
    )
    twins.ours.execute("COMMIT")
    for seq in range(1, 9):
        twins.add(seq, "/a", body(*["clay"] * seq, "kiln"))
    sqlite_postings.pack(twins.ours)
    assert blocks(twins, "clay") == [(1, 8, "B", "I")]  # gaps of 1 take a byte
    assert twins.scores(["clay", "kiln"], ["/a"]) == twins.fts5_scores(["clay", "kiln"], ["/a"])
    assert sqlite_postings.problems(twins.ours, 8) == []


@pytest.mark.parametrize(
    ("seqs", "code"),
    [
        ([1, 2, 65_538, 65_539], "I"),  # a gap of 65,536
        ([5, 2**32 - 1, 2**32, 2**32 + 3], "I"),
        ([1, 2**32 + 1, 2**32 + 2], "q"),  # a gap of 2**32
        ([2**40, 2**40 + 1, 2**62, 2**63 - 1], "q"),  # seqs past 2**32, up to SQLite's last
    ],
)
def test_wide_seq_gaps_and_seqs_past_2_32(twins: Twins, seqs: list[int], code: str) -> None:
    entries = [
        twins.add(seq, "/a", body("clay", *["kiln"] * (n % 3))) for n, seq in enumerate(seqs)
    ]
    sqlite_postings.pack(twins.ours)
    # A small file's shape ids fit a byte.
    assert blocks(twins, "clay") == [(seqs[0], seqs[-1], code, "B")]
    assert twins.scores(["clay", "kiln"], ["/a"]) == twins.fts5_scores(["clay", "kiln"], ["/a"])
    # Out of the middle, then the first: the block is rewritten, its range shrinks.
    twins.remove([entries[1], entries[0]])
    assert blocks(twins, "clay")[0][:2] == (seqs[2], seqs[-1])
    assert twins.scores(["clay", "kiln"], ["/a"]) == twins.fts5_scores(["clay", "kiln"], ["/a"])
    assert sqlite_postings.problems(twins.ours, len(seqs) - 2) == []


def test_a_gap_of_exactly_65536_needs_4_bytes(twins: Twins) -> None:
    twins.add(1, "/a", body("clay"))
    twins.add(65_535 + 1, "/a", body("clay"))  # gap 65,535: 2 bytes
    sqlite_postings.pack(twins.ours)
    assert blocks(twins, "clay") == [(1, 65_536, "H", "B")]
    sqlite_postings.clear(twins.ours)
    twins.fts5.execute("DELETE FROM terms")
    twins.add(1, "/a", body("clay"))
    twins.add(65_536 + 1, "/a", body("clay"))
    sqlite_postings.pack(twins.ours)
    assert blocks(twins, "clay") == [(1, 65_537, "I", "B")]
    assert twins.scores(["clay"], ["/a"]) == twins.fts5_scores(["clay"], ["/a"])


# A field's words: one of a few words, repeated up to hundreds of times.
long_fields = st.lists(
    st.lists(
        st.tuples(st.sampled_from(("clay", "kiln", "fern")), st.integers(1, 400)), max_size=3
    ).map(lambda runs: [word for word, times in runs for _ in range(times)]),
    min_size=5,
    max_size=5,
)
weights = st.tuples(*[st.floats(0.0, 16.0, allow_subnormal=False)] * 5)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    entries=st.lists(
        st.tuples(st.sampled_from(("/a", "/b", "/c")), long_fields), min_size=1, max_size=12
    ),
    chosen=weights,
    scopes=st.sampled_from([("/a",), ("/a", "/c"), ("/c", "/b", "/a")]),
)
def test_long_entries_any_weights_several_scopes(
    tmp_path_factory: pytest.TempPathFactory,
    entries: list[tuple[str, list[list[str]]]],
    chosen: tuple[float, ...],
    scopes: tuple[str, ...],
) -> None:
    twins = Twins(tmp_path_factory.mktemp("long"))
    try:
        for seq, (scope, fields) in enumerate(entries, 1):
            twins.add(seq, scope, fields)
        if len(entries) % 2:
            sqlite_postings.pack(twins.ours)
        terms = ["fern", "clay", "kiln"]
        reader = sqlite_postings.PostingsReader()
        assert twins.scores(terms, scopes, chosen, reader) == twins.fts5_scores(
            terms, scopes, chosen
        )
        # The same reader, asked with the default weights and then these again, stays exact.
        assert twins.scores(terms, scopes, reader=reader) == twins.fts5_scores(terms, scopes)
        assert twins.scores(terms, scopes, chosen, reader) == twins.fts5_scores(
            terms, scopes, chosen
        )
    finally:
        twins.close()


@pytest.mark.usefixtures("small_blocks")
def test_reindexed_entries_make_overlapping_blocks_that_score_and_remove_right(
    twins: Twins,
) -> None:
    scopes = ("/a", "/b", "/c")
    entries = {
        seq: twins.add(seq, scopes[seq % 3], body("clay", *["kiln"] * (seq % 4)))
        for seq in range(1, 41)
    }
    sqlite_postings.pack(twins.ours)
    # Re-indexed with new text (a replace, a session neighbour's body changed): same seqs,
    # new postings in the tail, packed into a new block (merged with the latest), whose range
    # then spans the others.
    for seq in (2, 5, 11, 17):
        twins.remove([entries[seq]])
        entries[seq] = twins.add(seq, scopes[seq % 3], body("clay", "clay", "fern"))
    sqlite_postings.pack(twins.ours)
    ranges = [(first, last) for first, last, _, _ in blocks(twins, "clay")]
    assert any(a != b and a[0] <= b[1] and b[0] <= a[1] for a in ranges for b in ranges), (
        f"no overlapping blocks: {ranges}"
    )
    terms = ["fern", "kiln", "clay"]
    for asked in (scopes, ("/b",)):
        assert twins.scores(terms, asked) == twins.fts5_scores(terms, asked)
    # Removing entries inside the overlap finds each in the right block.
    twins.remove([entries[seq] for seq in (5, 6, 11, 12, 17, 40)])
    assert twins.scores(terms, scopes) == twins.fts5_scores(terms, scopes)
    assert sqlite_postings.problems(twins.ours, 34) == []


@pytest.mark.usefixtures("small_blocks")
def test_removing_every_posting_of_a_block_leaves_no_row(twins: Twins) -> None:
    entries = [
        twins.add(seq, "/a", body("glaze" if seq <= 10 else "dune", "clay")) for seq in range(1, 21)
    ]
    sqlite_postings.pack(twins.ours)
    assert blocks(twins, "glaze")
    twins.remove(entries[:10])
    assert blocks(twins, "glaze") == []
    assert twins.ours.execute(
        "SELECT COUNT(*) FROM memory_term_documents WHERE term = 'glaze'"
    ).fetchone() == (0,)
    assert twins.scores(["glaze"], ["/a"]) == {} == twins.fts5_scores(["glaze"], ["/a"])
    assert twins.scores(["clay"], ["/a"]) == twins.fts5_scores(["clay"], ["/a"])
    assert sqlite_postings.problems(twins.ours, 10) == []


# --------------------------------------------------------------------------- problems


@pytest.fixture
def packed(twins: Twins, small_blocks: None) -> Twins:
    """Twenty entries, some postings in blocks, some in the tail: a clean index."""
    for seq in range(1, 21):
        twins.add(seq, "/a", body("clay", *["kiln"] * (seq % 3), f"w{seq}"))
    assert sqlite_postings.problems(twins.ours, 20) == []
    assert twins.ours.execute("SELECT COUNT(*) FROM memory_postings_tail").fetchone()[0] > 0
    return twins


def test_a_deleted_block_is_reported(packed: Twins) -> None:
    packed.ours.execute(
        "DELETE FROM memory_postings WHERE term = 'clay' AND first_seq = "
        "(SELECT MIN(first_seq) FROM memory_postings WHERE term = 'clay')"
    )
    assert sqlite_postings.problems(packed.ours, 20) == [
        "the text index miscounts the entries holding 1 terms"
    ]


def test_a_deleted_block_of_an_entrys_only_posting_is_reported(packed: Twins) -> None:
    packed.ours.execute("DELETE FROM memory_postings WHERE term = 'w3'")
    problems = sqlite_postings.problems(packed.ours, 20)
    assert problems == ["the text index miscounts the entries holding 1 terms"]


def test_wrong_totals_are_reported(packed: Twins) -> None:
    packed.ours.execute("UPDATE memory_index_totals SET tokens = tokens + 1")
    assert sqlite_postings.problems(packed.ours, 20) == [
        "the text index counts 82 tokens, and its postings hold 81"
    ]
    packed.ours.execute("UPDATE memory_index_totals SET tokens = tokens - 1, documents = 19")
    assert sqlite_postings.problems(packed.ours, 20) == [
        "the text index holds 19 entries of 20 (SqliteStore.rebuild_index rebuilds it from the "
        "entries)",
        "the text index holds postings of 20 entries and counts 19",
    ]
    packed.ours.execute("UPDATE memory_index_totals SET documents = 20")
    packed.ours.execute("UPDATE memory_term_documents SET documents = 3 WHERE term = 'kiln'")
    assert sqlite_postings.problems(packed.ours, 20) == [
        "the text index miscounts the entries holding 1 terms"
    ]


@pytest.mark.parametrize(
    "damage",
    [
        "shapes = substr(shapes, 1, length(shapes) - 1)",  # truncated: half an item
        "shapes = substr(shapes, 1, length(shapes) - 2)",  # one shape id short
        "seqs = X'5a0100'",  # an unknown typecode
        "last_seq = last_seq + 1",  # a range its seqs do not end at
        "shapes = CAST(X'48ffff' || substr(shapes, 4) AS BLOB)",  # a shape the file lacks
        "seqs = 'H'",  # text, not a blob
    ],
)
def test_a_damaged_block_is_reported_and_scoring_it_is_a_database_error(
    packed: Twins, damage: str
) -> None:
    packed.ours.execute(
        f"UPDATE memory_postings SET {damage} WHERE term = 'clay' AND first_seq = 1"
    )
    assert sqlite_postings.problems(packed.ours, 20) == [
        "the text index has 1 damaged blocks of postings"
    ]
    if "last_seq" not in damage:  # scoring does not read last_seq
        with pytest.raises(sqlite3.DatabaseError, match="damaged block of postings of 'clay'"):
            packed.scores(["clay"], ["/a"])


def test_a_posting_held_twice_is_reported(packed: Twins) -> None:
    # Entry 1's postings are in blocks: a tail row of seq 1 holds 'clay' a second time.
    (shapes,) = packed.ours.execute(
        "SELECT shapes FROM memory_postings WHERE term = 'clay' AND first_seq = 1"
    ).fetchone()
    packed.ours.execute(
        "INSERT INTO memory_postings_tail (seq, scope_key, terms, shapes) "
        "SELECT 1, scope_key, 'clay', ? FROM memory_postings_tail LIMIT 1",
        (shapes[: 1 + array(chr(shapes[0])).itemsize],),  # its typecode and first shape id
    )
    packed.ours.execute("UPDATE memory_index_totals SET tail = tail + 1")
    assert sqlite_postings.problems(packed.ours, 20) == [
        "the text index holds postings twice for 1 terms"
    ]


@pytest.mark.parametrize(
    "damage",
    [
        "terms = terms || ' extra'",  # more terms than shapes
        "shapes = X'5a0100'",  # an unknown typecode
        "shapes = CAST(X'48ffff' || substr(shapes, 4) AS BLOB)",  # a shape the file lacks
        "terms = 7",  # a number, not text
    ],
)
def test_a_damaged_tail_entry_is_reported(packed: Twins, damage: str) -> None:
    packed.ours.execute(
        f"UPDATE memory_postings_tail SET {damage} "
        "WHERE seq = (SELECT MAX(seq) FROM memory_postings_tail)"
    )
    problems = sqlite_postings.problems(packed.ours, 20)
    assert "the text index has 1 damaged entries in its tail" in problems
