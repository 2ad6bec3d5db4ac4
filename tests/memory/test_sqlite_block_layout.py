"""Schema 6's layout of the text index's blocks (sqlite_postings.py): the compact forms of a
block's arrays read back exactly and are never larger than plain arrays; a large block's arrays
live in memory_posting_blocks and are written, scored, rewritten and checked like a small
one's; damaged compact forms and a missing row of arrays are damage; a pack gives back the
pages it freed."""

from __future__ import annotations

import sqlite3
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentscript.memory import MemoryService, sqlite_postings
from agentscript.memory.sqlite_block_codec import encoded, packed
from agentscript.memory.sqlite_postings import _gap_array, _shape_array
from postings_support import Twins, body

LARGE = 1_500  # postings of one term: a block whose arrays do not fit in its row


@pytest.fixture
def twins(tmp_path: Path) -> Iterator[Twins]:
    pair = Twins(tmp_path)
    yield pair
    pair.close()


# ------------------------------------------------------------------------------ encodings


def _packed_gaps(gaps: list[int]) -> bytes:
    """The gaps blob of a block whose seqs are 1 and then these gaps apart."""
    seqs = np.cumsum([1, *gaps], dtype=np.int64)
    return encoded([(seqs, np.ones(len(seqs), dtype=np.int64))])[0][0]


def _packed_shapes(shape_ids: list[int]) -> bytes:
    """The shape ids blob of a block holding these."""
    return encoded([(np.arange(1, len(shape_ids) + 1), np.array(shape_ids, dtype=np.int64))])[0][1]


gaps = st.lists(
    st.one_of(st.integers(1, 255), st.integers(256, 70_000), st.integers(1, 2**40)),
    max_size=700,
)


@given(gaps)
def test_seq_gaps_read_back_exactly_and_never_take_more_than_a_plain_array(
    values: list[int],
) -> None:
    blob = _packed_gaps(values)
    assert list(_gap_array(blob)) == values
    assert len(blob) <= len(packed(values))


def test_gaps_mostly_below_256_take_a_byte_each_and_the_wide_ones_three() -> None:
    values = [3] * 1_000 + [300, 65_535] * 5
    blob = _packed_gaps(values)
    assert blob[:1] == b"G"
    assert len(blob) == 3 + 3 * 10 + 1_010  # against 1 + 2 * 1_010 as a plain array
    assert list(_gap_array(blob)) == values
    assert _packed_gaps([3] * 10)[:1] == b"B"  # all below 256: a plain array of bytes
    assert _packed_gaps([70_000, 3])[:1] == b"I"  # a gap wider than 2 bytes: plain


shape_ids = st.lists(st.integers(1, 2**33), min_size=1, max_size=300).flatmap(
    lambda palette: st.lists(st.sampled_from(palette), min_size=1, max_size=2_000)
)

blocks = st.lists(
    st.tuples(
        st.lists(st.one_of(st.integers(1, 255), st.integers(256, 70_000)), max_size=300),
        shape_ids,
    ),
    min_size=1,
    max_size=12,
)


@given(blocks)
def test_blocks_encoded_together_are_each_encoded_as_alone(
    drawn: list[tuple[list[int], list[int]]],
) -> None:
    """A pack encodes all its blocks in one pass: no block's bytes may depend on its
    neighbours'."""
    arrays = []
    for gaps, shapes in drawn:
        seqs = np.cumsum([7, *gaps], dtype=np.int64)
        ids = np.resize(np.array(shapes, dtype=np.int64), len(seqs))
        arrays.append((seqs, ids))
    together = encoded(arrays)
    assert together == [encoded([block])[0] for block in arrays]
    for (seqs, ids), (gap_blob, shape_blob) in zip(arrays, together, strict=True):
        assert list(_gap_array(gap_blob)) == np.diff(seqs).tolist()
        assert list(_shape_array(shape_blob)) == ids.tolist()


@given(shape_ids)
def test_shape_ids_read_back_exactly_and_never_take_more_than_a_plain_array(
    values: list[int],
) -> None:
    blob = _packed_shapes(values)
    assert list(_shape_array(blob)) == values
    assert len(blob) <= len(packed(values))


def test_repeated_shape_ids_take_a_byte_each_after_their_palette() -> None:
    values = [300, 301, 70_000] * 500
    blob = _packed_shapes(values)
    assert blob[:1] == b"P"
    assert len(blob) == 2 + (1 + 3 * 4) + 1_500  # the palette holds 4-byte ids
    assert list(_shape_array(blob)) == values
    assert _packed_shapes(list(range(1, 400)))[:1] == b"H"  # more than 256 distinct: plain


# --------------------------------------------------------------------------- large blocks


def rows_of(twins: Twins, term: str) -> list[tuple[int | None, bytes | None]]:
    rows: list[tuple[int | None, bytes | None]] = twins.ours.execute(
        "SELECT block, seqs FROM memory_postings WHERE term = ? ORDER BY first_seq", (term,)
    ).fetchall()
    return rows


def arrays_rows(twins: Twins) -> int:
    return int(twins.ours.execute("SELECT COUNT(*) FROM memory_posting_blocks").fetchone()[0])


@pytest.fixture
def large(twins: Twins) -> tuple[Twins, list[sqlite_postings.IndexedEntry]]:
    """LARGE entries holding 'clay' (some twice, some with 'kiln'), packed: clay's block is
    too large for its row; kiln's fits."""
    entries = [
        twins.add(seq, "/a", body("clay", *["clay"] * (seq % 2), *["kiln"] * (seq % 50 == 0)))
        for seq in range(1, LARGE + 1)
    ]
    sqlite_postings.pack(twins.ours)
    return twins, entries


def test_a_large_blocks_arrays_are_kept_apart_and_score_as_fts5(
    large: tuple[Twins, list[sqlite_postings.IndexedEntry]],
) -> None:
    twins, _ = large
    [(block, seqs)] = rows_of(twins, "clay")
    assert block is not None and seqs is None
    [(block, seqs)] = rows_of(twins, "kiln")
    assert block is None and seqs is not None
    assert arrays_rows(twins) == 1
    assert twins.scores(["clay", "kiln"], ["/a"]) == twins.fts5_scores(["clay", "kiln"], ["/a"])
    assert sqlite_postings.problems(twins.ours, LARGE) == []


def test_a_large_block_rewritten_by_removals_leaves_no_arrays_behind(
    large: tuple[Twins, list[sqlite_postings.IndexedEntry]],
) -> None:
    twins, entries = large
    twins.remove(entries[100:1_300])  # clay's block shrinks until it fits in its row
    [(block, seqs)] = rows_of(twins, "clay")
    assert block is None and seqs is not None
    assert arrays_rows(twins) == 0
    assert twins.scores(["clay", "kiln"], ["/a"]) == twins.fts5_scores(["clay", "kiln"], ["/a"])
    assert sqlite_postings.problems(twins.ours, LARGE - 1_200) == []


def test_a_large_blocks_missing_arrays_are_damage(
    large: tuple[Twins, list[sqlite_postings.IndexedEntry]],
) -> None:
    twins, _ = large
    twins.ours.execute("DELETE FROM memory_posting_blocks")
    assert sqlite_postings.problems(twins.ours, LARGE) == [
        "the text index has 1 damaged blocks of postings"
    ]
    with pytest.raises(sqlite3.DatabaseError, match="damaged block of postings of 'clay'"):
        twins.scores(["clay"], ["/a"])


# ------------------------------------------------------------------------------ damage


def _palette_past_its_end(postings: int) -> tuple[str, bytes]:
    return "shapes", b"P\x00" + packed([1]) + bytes([1]) * postings  # index 1 of 1


def _wide_gap_past_the_end(postings: int) -> tuple[str, bytes]:
    at = array("H", [postings + 5]).tobytes()
    return "seqs", b"G\x01\x00" + at + b"\x01" + bytes([1]) * (postings - 1)


def _truncated_wide_gaps(postings: int) -> tuple[str, bytes]:
    return "seqs", b"G\x05\x00\x01"


@pytest.mark.parametrize(
    "damage", [_palette_past_its_end, _wide_gap_past_the_end, _truncated_wide_gaps]
)
def test_a_damaged_compact_array_is_damage(
    twins: Twins, damage: Callable[[int], tuple[str, bytes]]
) -> None:
    for seq in range(1, 31):
        twins.add(seq, "/a", body("clay", f"w{seq}"))
    sqlite_postings.pack(twins.ours)
    assert sqlite_postings.problems(twins.ours, 30) == []
    column, blob = damage(30)
    twins.ours.execute(f"UPDATE memory_postings SET {column} = ? WHERE term = 'clay'", (blob,))
    assert sqlite_postings.problems(twins.ours, 30) == [
        "the text index has 1 damaged blocks of postings"
    ]
    with pytest.raises(sqlite3.DatabaseError, match="damaged block of postings of 'clay'"):
        twins.scores(["clay"], ["/a"])


# ---------------------------------------------------------------------------- free pages


def test_a_pack_gives_back_the_pages_it_freed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tail (about 30 pages here) is emptied by the pack: its pages and those of the
    merged blocks go back to the file system, not to the file's freelist."""
    monkeypatch.setattr(sqlite_postings, "PACK_AT", 3_000)
    path = tmp_path / "memory.db"
    with MemoryService.open(None, database=path) as memory:
        memory.remember_many([{"text": f"Early {n} clay kiln"} for n in range(300)])
        memory.remember_many(
            [{"text": f"Turn {n}: " + " ".join(f"w{n}x{k}" for k in range(12))} for n in range(240)]
        )
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA auto_vacuum").fetchone() == (2,)
        assert connection.execute("SELECT tail FROM memory_index_totals").fetchone() == (0,)
        assert connection.execute("PRAGMA freelist_count").fetchone() == (0,)
