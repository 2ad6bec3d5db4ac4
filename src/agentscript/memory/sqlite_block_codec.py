"""The text index's blocks as bytes (sqlite_postings.py's layout, schema 6), encoded for many
blocks at once.

Why together: a pack writes a few thousand blocks, most of them a rare term's few postings.
Encoding them one by one cost about 50 µs a block in Python (or in numpy, whose every call
costs a few µs whatever its size), about a third of a pack. Here each step is one numpy pass
over every posting of every block (gaps, widest values, wide gaps, palettes and their
indexes), and a block's blobs are then a few slices of the bytes those passes made.

The layout of a blob, each starting with its typecode (`array`'s, native byte order):
- a plain array: the smallest of `B`, `H`, `I` (or `L`, whichever is 4 bytes) and `q` that
  holds the largest value;
- seq gaps a byte each (`G`), when the plain array would be `H` and this is smaller: how
  many gaps are 256 or wider (2 bytes, little-endian), their positions (`H` items), their
  high bytes, then every gap's low byte;
- shape ids with a palette (`P`), when a block has at most 256 distinct ones and this is
  smaller: the palette's size less one (a byte), the palette (a plain array), then one byte
  per posting indexing it.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

Values = NDArray[np.int64]

# The typecodes of plain arrays, smallest first, with the bound of what each holds.
CODES = {
    "B": 2**8,
    "H": 2**16,
    next(code for code in "IL" if array(code).itemsize == 4): 2**32,
    "q": 2**63,
}
DTYPES: dict[str, np.dtype[Any]] = dict(
    zip(CODES, map(np.dtype, (np.uint8, np.uint16, np.uint32, np.int64)), strict=True)
)
PALETTE = b"P"
BYTE_GAPS = b"G"
_PREFIXES = [code.encode("ascii") for code in CODES]
_DTYPE_LIST = list(DTYPES.values())
_SIZES = [dtype.itemsize for dtype in _DTYPE_LIST]
_LIMITS = np.array(list(CODES.values())[:-1], dtype=np.int64)
_WIDE = 256


def encoded(blocks: Sequence[tuple[Values, Values]]) -> list[tuple[bytes, bytes]]:
    """Each block's (seqs ascending, shape ids; neither empty) two blobs: its seq gaps after
    the first seq, and its shape ids."""
    if not blocks:
        return []
    lengths = np.fromiter(map(len, (seqs for seqs, _ in blocks)), dtype=np.int64)
    starts = np.zeros(len(blocks), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    seqs = np.concatenate([seqs for seqs, _ in blocks]).astype(np.int64, copy=False)
    shapes = np.concatenate([shapes for _, shapes in blocks]).astype(np.int64, copy=False)
    # At each posting, the gap to the block's next one (0 at a block's last).
    gaps = np.zeros(len(seqs), dtype=np.int64)
    gaps[:-1] = np.diff(seqs)
    gaps[starts + lengths - 1] = 0
    gap_blobs = _gap_blobs(gaps, starts, lengths - 1)
    shape_blobs = _shape_blobs(shapes, starts, lengths)
    return list(zip(gap_blobs, shape_blobs, strict=True))


def _codes(values: Values, starts: Values) -> list[int]:
    """Each block's plain typecode (an index into CODES) by its largest value."""
    return list(map(int, np.searchsorted(_LIMITS, np.maximum.reduceat(values, starts), "right")))


class _Bytes:
    """`values` as bytes of each typecode, made when first asked."""

    def __init__(self, values: Values) -> None:
        self._values = values
        self._made: dict[int, bytes] = {}

    def plain(self, code: int, start: int, count: int) -> bytes:
        made = self._made.get(code)
        if made is None:
            made = self._made[code] = self._values.astype(_DTYPE_LIST[code]).tobytes()
        size = _SIZES[code]
        return _PREFIXES[code] + made[start * size : (start + count) * size]


def _gap_blobs(gaps: Values, starts: Values, counts: Values) -> list[bytes]:
    """Each block's gaps blob: its `counts` gaps from `starts` (see the module's docstring)."""
    codes = _codes(gaps, starts)
    wide = gaps >= _WIDE
    wide_counts = np.add.reduceat(wide, starts).tolist()
    wide_at = np.flatnonzero(wide)
    first_wide = np.zeros(len(starts), dtype=np.int64)
    np.cumsum(wide_counts[:-1], out=first_wide[1:])
    block_of = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(gaps))))
    positions = (wide_at - starts[block_of[wide_at]]).astype(np.uint16).tobytes()
    highs = (gaps[wide_at] >> 8).astype(np.uint8).tobytes()
    lows = (gaps & 0xFF).astype(np.uint8).tobytes()
    plain = _Bytes(gaps)
    blobs = []
    two_bytes = list(CODES).index("H")
    for code, start, count, wide_count, first in zip(
        codes, starts.tolist(), counts.tolist(), wide_counts, first_wide.tolist(), strict=True
    ):
        if code == two_bytes and count <= 2**16 and 3 + 3 * wide_count + count < 1 + 2 * count:
            blobs.append(
                BYTE_GAPS
                + wide_count.to_bytes(2, "little")
                + positions[2 * first : 2 * (first + wide_count)]
                + highs[first : first + wide_count]
                + lows[start : start + count]
            )
        else:
            blobs.append(plain.plain(code, start, count))
    return blobs


def _shape_blobs(shapes: Values, starts: Values, counts: Values) -> list[bytes]:
    """Each block's shape ids blob (see the module's docstring)."""
    codes = _codes(shapes, starts)
    block_of = np.repeat(np.arange(len(starts)), counts)
    order = np.lexsort((shapes, block_of))
    ordered = shapes[order]
    new = np.ones(len(shapes), dtype=np.bool_)
    new[1:] = ordered[1:] != ordered[:-1]
    new[starts] = True
    rank = np.cumsum(new) - 1
    distinct_counts = np.add.reduceat(new, starts).tolist()
    indexes = np.empty(len(shapes), dtype=np.int64)
    indexes[order] = rank - rank[starts][block_of]
    index_bytes = indexes.astype(np.uint8).tobytes()
    palettes = _Bytes(ordered[new])
    first_distinct = rank[starts].tolist()
    plain = _Bytes(shapes)
    blobs = []
    for code, start, count, distinct, first in zip(
        codes, starts.tolist(), counts.tolist(), distinct_counts, first_distinct, strict=True
    ):
        size = _SIZES[code]
        if distinct <= 256 and 2 + 1 + distinct * size + count < 1 + count * size:
            blobs.append(
                PALETTE
                + bytes([distinct - 1])
                + palettes.plain(code, first, distinct)
                + index_bytes[start : start + count]
            )
        else:
            blobs.append(plain.plain(code, start, count))
    return blobs


def packed(values: Sequence[int] | Values) -> bytes:
    """`values` (not negative) as one plain array, typecode first."""
    items = np.asarray(values, dtype=np.int64)
    if not len(items):
        return _PREFIXES[0]
    return _Bytes(items).plain(_codes(items, np.zeros(1, dtype=np.int64))[0], 0, len(items))
