"""The SqliteStore's text index: postings packed in blocks, ranked by BM25 exactly as FTS5's
bm25() computes it, in numpy passes over arrays.

Why not FTS5 (which schema 2 used): an FTS5 query visits and scores every entry that holds any
query term, inside SQLite but one row at a time through its auxiliary-function API (about
1.2 µs a row here). In one scope of 100k entries a question's terms are held by about 47k of
them, so a recall spent 60 ms in bm25() and as much again joining every hit with its entry.
Here the postings of a term in a scope are a few rows whose blobs decode into numpy arrays;
each distinct shape of a posting (the entry's length and the term's count in each field) is
scored once per query; the per-entry sums are numpy operations over those arrays
(sqlite_ranking.py), and no posting passes through Python one by one.

Why the write path looks as it does: a durable commit costs what it writes to the WAL, page by
page. One row per term per entry, or one counter per term, lands on as many B-tree pages as the
entry has terms (about 40 for a chat turn). So an entry is written as ONE row of the tail, keyed
by its seq (so it lands on the table's last page); the counts of the entries holding each term
are kept for the blocks only, and the tail's are counted by whoever reads it. A pack, every
PACK_AT postings (about 1,500 chat turns; a pack costs per term, so fewer and larger packs cost
less per entry), moves the tail into blocks log-structured: every (term, scope) gets a new
block, merged with its latest blocks while they are no larger than what is being merged, so a
posting is rewritten O(log BLOCK_POSTINGS) times, never a full block to add a few postings;
and a rare term's small block takes its new postings while it stays small, so it does not
leave a row behind in every pack. A pack then gives the pages it freed (the tail's, the merged
blocks') back to the file system (incremental auto-vacuum).

Why the blocks are stored as they are (schema 6; measured at 100k chat turns in one scope):
every byte of a block is disk, and SQLite wastes pages on large rows of a WITHOUT ROWID table
(a row past 1,002 bytes spills into overflow pages whose last one is partly empty) and on rows
of a rowid table appended in arbitrary order (a quarter of each leaf left empty). So a small
block's arrays stay in its row of memory_postings (the key: term, scope, first seq); a larger
one's go to memory_posting_blocks, a rowid table, appended in the order that fills its pages
(`_page_order`), whose overflow pages SQLite fills whole. And the arrays are compact, still
decoded by numpy: seq gaps a byte each with the few wider ones apart, shape ids as one byte into a
palette of the block's distinct ids. Schema 5's layout took 21.7 MB for the postings of 100k
turns, 5.6 MB of it unused space in its pages; schema 6's 11.4 MB.

Tables (one database, written inside the store's transactions, so crash-safe like the rest):
- memory_postings: one row per block of postings of a (term, scope): how many it holds, the
  entries' seqs ascending, as the gaps after `first_seq` (sqlite_block_codec.py: an array of 1, 2, 4
  or 8-byte integers, whichever holds the largest gap, or bytes with the wider gaps apart),
  and for each the id of its shape (an array as the gaps, or a palette and
  a byte each). Each blob starts with its typecode. The two blobs are in the row, or, for a
  block larger than `_INLINE_BYTES`, NULL, and the row names its `block` in
  memory_posting_blocks, which holds them. A block holds at most BLOCK_POSTINGS postings; a
  full one is never merged again.
- memory_posting_shapes: the shapes ("length c_tags c_title c_key c_body c_context"), each
  once; few, as entries' lengths and counts repeat. Never deleted, so an id always means the
  same shape.
- memory_postings_tail: the entries indexed since the last pack, one row each: its seq, scope,
  terms (joined by spaces: no token holds one) and their shape ids (an array as in a block).
- memory_term_documents: how many entries hold each term in the blocks (BM25's n is this plus
  the tail's count, see `documents_holding`).
- memory_index_totals: how many entries the index holds and how many tokens they hold
  together (BM25's N and average length), how many postings wait in the tail, and the
  generation: a random number drawn anew by every change that is not an entry appended to the
  tail (a pack, a removal, a clear, an entry added out of seq order). Between two equal
  generations the blocks are the same and the tail has only grown by higher seqs, which is what
  lets a PostingsReader keep what it read; random, so a generation a rolled-back write drew
  never comes back.
Removing an entry rewrites the blocks that hold it (the store zeroes freed pages), so no term
of a deleted entry lingers in the index, and the statistics stay exactly FTS5's.

Reads (`scores`, `problems`) run in one read transaction: other processes commit at any time,
and totals, counts, shapes, blocks and tail must all come from the same state. A block that does
not decode is a DamagedIndex (a sqlite3.DatabaseError, so the store reports it as one);
`problems` recounts every term's entries and the token total from the postings themselves.
"""

from __future__ import annotations

import json
import operator
import os
import sqlite3
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import groupby, islice, pairwise
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agentscript.memory.config import DEFAULT_CACHE_BYTES
from agentscript.memory.sqlite_block_codec import BYTE_GAPS, CODES, DTYPES, PALETTE, encoded, packed
from agentscript.memory.store import BM25_B, BM25_K1, scope_hash
from agentscript.providers.storage.sqlite_files import execute_rows

PACK_AT = 60_000
BLOCK_POSTINGS = 4_096
# Blocks of up to this share of BLOCK_POSTINGS (256 postings) are merged with the new postings
# of their term whenever the two together stay within it (`_merged_blocks`). Rewriting rare
# terms' small blocks is most of what a pack writes; a 64th makes packs 30 % cheaper but the
# file 0.6 % larger, past 2× raw FTS5's at 10k entries in batches (docs/memory-service.md).
SMALL_SHARE = 16

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS memory_postings (
        term TEXT NOT NULL,
        scope_key INTEGER NOT NULL,
        first_seq INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        postings INTEGER NOT NULL,
        block INTEGER,
        seqs BLOB,
        shapes BLOB,
        PRIMARY KEY (term, scope_key, first_seq)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS memory_posting_blocks (
        block INTEGER PRIMARY KEY,
        seqs BLOB NOT NULL,
        shapes BLOB NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS memory_posting_shapes (
        id INTEGER PRIMARY KEY,
        shape TEXT NOT NULL UNIQUE
    )""",
    """CREATE TABLE IF NOT EXISTS memory_postings_tail (
        seq INTEGER PRIMARY KEY,
        scope_key INTEGER NOT NULL,
        terms TEXT NOT NULL,
        shapes BLOB NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS memory_term_documents (
        term TEXT PRIMARY KEY,
        documents INTEGER NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS memory_index_totals (
        only_row INTEGER PRIMARY KEY CHECK (only_row = 1),
        documents INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        tail INTEGER NOT NULL,
        generation INTEGER NOT NULL DEFAULT 0
    )""",
    "INSERT OR IGNORE INTO memory_index_totals (only_row, documents, tokens, tail) "
    "VALUES (1, 0, 0, 0)",
)
# Emptied by a rebuild; the shapes stay, so their ids keep their meaning.
_TABLES = (
    "memory_postings",
    "memory_posting_blocks",
    "memory_postings_tail",
    "memory_term_documents",
)
# Every table of the index, dropped by an upgrade whose layout differs (`drop`).
_ALL_TABLES = (*_TABLES, "memory_posting_shapes", "memory_index_totals")

# A block's arrays are kept in its row of memory_postings while the row stays within what an
# index b-tree page holds in place (SQLite's 1,002 bytes less the key and the other columns);
# a larger block's go to memory_posting_blocks, a rowid table, whose rows hold up to 4,061
# bytes in place and spill into overflow pages that are filled whole.
_INLINE_BYTES = 900
# A pack writes its merged blocks in runs of about this many postings (laid out in pages
# together, `_page_order`), and encodes them together (sqlite_block_codec.py) a quarter run
# at a time: the codec's arrays take about 90 bytes a posting while it runs, and a pack at
# 100k entries rewrites about 400,000 postings (40 MB at once; 1.5 MB a quarter run).
_WRITTEN_POSTINGS = 65_536
_ENCODED_POSTINGS = _WRITTEN_POSTINGS // 4
# SQLite's layout of a rowid table's rows in 4,096-byte pages (what `_page_order` packs): a
# leaf's room for cells, the most and the least of a row's payload kept in the leaf, and what
# an overflow page holds.
_LEAF_ROOM = 4_096 - 8
_LOCAL_MOST = 4_096 - 35
_LOCAL_LEAST = (4_096 - 12) * 32 // 255 - 23
_OVERFLOW_ROOM = 4_096 - 4
# Where a block's arrays are (in its row or in memory_posting_blocks), as read.
_BLOCKS = "memory_postings AS p LEFT JOIN memory_posting_blocks AS b ON b.block = p.block"
_ARRAYS = "COALESCE(p.seqs, b.seqs), COALESCE(p.shapes, b.shapes)"

# `PRAGMA auto_vacuum`'s value for incremental auto-vacuum.
_INCREMENTAL = 2
# SQLite's largest integer (no seq passes it).
_LAST_SEQ = 2**63 - 1
# A term's postings as arrays: the entries' seqs, and the ids of their shapes.
SeqArray = NDArray[np.int64]
ShapeArray = NDArray[np.int64]
_NO_SEQS: SeqArray = np.empty(0, dtype=np.int64)
_NO_SHAPES: ShapeArray = np.empty(0, dtype=np.int64)
# A posting: an entry's seq and the id of its shape.
Posting = tuple[int, int]
# A block to write: its term, scope key, seqs (ascending) and their shape ids.
_Block = tuple[str, int, SeqArray, ShapeArray]


@dataclass(frozen=True, slots=True)
class IndexedEntry:
    """What the index holds of one entry: its seq and scope, each of its tokens with the
    token's count in each indexed field as a shape writes them ("0 1 0 2 0"), and its length
    in tokens (store.postings)."""

    seq: int
    scope: str
    counts: Mapping[str, str]
    length: int

    @classmethod
    def of(
        cls, seq: int, scope: str, counts: Mapping[str, Sequence[int]], length: int
    ) -> IndexedEntry:
        """The entry with `counts` (per token, its count in each field) as text: the few
        distinct counts recur, so their texts are shared, and a batch of a thousand entries
        waiting for `add` holds one reference per token, not a list each (4.6 MB)."""
        return cls(
            seq, scope, {token: _counts_text(tuple(c)) for token, c in counts.items()}, length
        )


@dataclass(frozen=True, slots=True)
class Totals:
    documents: int
    tokens: int
    tail: int
    generation: int


class DamagedIndex(sqlite3.DatabaseError):
    """A block of postings that does not decode, or names a shape the file does not hold. A
    database error, so the store reports it as one (naming the file) rather than a traceback;
    `SqliteStore.rebuild_index` repairs it."""


@dataclass(slots=True)
class KnownIndex:
    """What a writer keeps of the index from one `add` to the next, true of the file as it is
    (the caller sees to that, sqlite_write_state.py): the ids of shapes, and how many postings
    wait in the tail (None: not known; an add then reads it, and a pack empties it). A caller
    that changes the index otherwise (a removal) forgets `tail`."""

    shapes: dict[str, int] = field(default_factory=dict)
    tail: int | None = None


def add(
    connection: sqlite3.Connection,
    entries: Iterable[IndexedEntry],
    known: KnownIndex | None = None,
) -> None:
    """Index `entries` (inside the caller's write transaction): one tail row each, packed
    into blocks once enough postings wait there. One call for many entries costs a few
    statements, not a few per entry. `known`: what the caller keeps of the index, used and
    kept current."""
    rows: list[tuple[int, int, str, list[str]]] = []
    documents = tokens = waiting = 0
    for entry in entries:
        documents += 1
        tokens += entry.length
        if entry.counts:
            prefix = f"{entry.length} "
            shapes = [prefix + counts for counts in entry.counts.values()]
            rows.append((entry.seq, scope_hash(entry.scope), " ".join(entry.counts), shapes))
            waiting += len(shapes)
    if not documents:
        return
    if known is None:
        known = KnownIndex()
    ids = _shape_ids(connection, [shape for *_, shapes in rows for shape in shapes], known.shapes)
    # Seqs not past the tail's last are no append: readers that kept the tail read it anew.
    seqs = [seq for seq, *_ in rows] or [_LAST_SEQ]
    ascending = all(map(operator.lt, seqs, islice(seqs, 1, None)))
    totals = (documents, tokens, waiting, ascending, seqs[0], _new_generation())
    if known.tail is None:
        known.tail = connection.execute(_ADD_TO_TOTALS + " RETURNING tail", totals).fetchone()[0]
    else:
        connection.execute(_ADD_TO_TOTALS, totals)
        known.tail += waiting
    tail_rows = [
        (seq, key, terms, packed(list(map(ids.__getitem__, shapes))))
        for seq, key, terms, shapes in rows
    ]
    execute_rows(connection, _INSERT_TAIL, tail_rows)
    if known.tail >= PACK_AT:
        pack(connection)
        known.tail = 0


_ADD_TO_TOTALS = (
    "UPDATE memory_index_totals SET documents = documents + ?, tokens = tokens + ?, "
    "tail = tail + ?, generation = CASE WHEN ? AND "
    "COALESCE((SELECT MAX(seq) FROM memory_postings_tail), 0) < ? "
    "THEN generation ELSE ? END"
)
_INSERT_TAIL = (
    "INSERT INTO memory_postings_tail (seq, scope_key, terms, shapes) VALUES (?, ?, ?, ?)"
)


# A term's counts per field as a shape writes them ("0 1 0 2 0"), for the counts seen: few
# distinct ones recur (most terms occur once or twice in one or two fields).
@lru_cache(maxsize=4_096)
def _counts_text(counts: tuple[int, ...]) -> str:
    return " ".join(map(str, counts))


def remove(connection: sqlite3.Connection, entries: Iterable[IndexedEntry]) -> None:
    """Take `entries` out of the index (inside the caller's write transaction), given the
    tokens they were indexed with."""
    gone: dict[str, int] = {}
    documents = tokens = from_tail = 0
    for entry in entries:
        key = scope_hash(entry.scope)
        documents += 1
        tokens += entry.length
        waited = connection.execute(
            "DELETE FROM memory_postings_tail WHERE seq = ? AND scope_key = ? RETURNING shapes",
            (entry.seq, key),
        ).fetchone()
        if waited is not None:
            from_tail += len(_array(waited[0]))
            continue
        for term in entry.counts:
            if _remove_from_blocks(connection, term, key, entry.seq):
                gone[term] = gone.get(term, 0) + 1
    if not documents:
        return
    connection.executemany(
        "UPDATE memory_term_documents SET documents = documents - ? WHERE term = ?",
        [(count, term) for term, count in gone.items()],
    )
    connection.executemany(
        "DELETE FROM memory_term_documents WHERE term = ? AND documents <= 0",
        [(term,) for term in gone],
    )
    connection.execute(
        "UPDATE memory_index_totals SET documents = documents - ?, tokens = tokens - ?, "
        "tail = tail - ?, generation = ?",
        (documents, tokens, from_tail, _new_generation()),
    )


def clear(connection: sqlite3.Connection) -> None:
    """Empty the index (before a rebuild)."""
    for table in _TABLES:
        connection.execute(f"DELETE FROM {table}")
    connection.execute(
        "UPDATE memory_index_totals SET documents = 0, tokens = 0, tail = 0, generation = ?",
        (_new_generation(),),
    )


def drop(connection: sqlite3.Connection) -> None:
    """Drop every table of the index (an upgrade from a layout this module no longer reads;
    SCHEMA creates them again, a rebuild fills them)."""
    for table in _ALL_TABLES:
        connection.execute(f"DROP TABLE IF EXISTS {table}")


def relayout(connection: sqlite3.Connection) -> None:
    """Move the blocks of schema 5's layout (every block's arrays in its row, the shape ids
    as a plain array) into this one, each re-encoded as `_write_block` writes it (inside the
    caller's write transaction, which the upgrade runs in). DamagedIndex if a block does not
    decode: then the index is to be rebuilt from the entries instead."""
    connection.execute("ALTER TABLE memory_postings RENAME TO memory_postings_5")
    for statement in SCHEMA:
        connection.execute(statement)
    for term, key, first, seqs, shapes in connection.execute(
        "SELECT term, scope_key, first_seq, seqs, shapes FROM memory_postings_5 "
        "ORDER BY term, scope_key, first_seq"
    ).fetchall():
        try:
            _write_block(connection, term, key, *_decode(first, seqs, shapes))
        except DamagedIndex as error:
            connection.execute("DROP TABLE memory_postings_5")
            raise damaged_postings(term) from error
    connection.execute("DROP TABLE memory_postings_5")
    connection.execute("UPDATE memory_index_totals SET generation = ?", (_new_generation(),))


def pack(connection: sqlite3.Connection) -> None:
    """Move the tail's postings into blocks (see the module's docstring): the tail's postings
    as arrays, sorted by term, scope and seq in one step, each (term, scope)'s a slice; the
    merged blocks written a run of about `_WRITTEN_POSTINGS` postings at a time, so a pack
    holds one run's arrays and blobs at once, not every block it makes (a long-running server
    stays small)."""
    tail = _TailInOrder.read(connection)
    holding: dict[str, int] = {}
    blocks: list[_Block] = []
    held = 0
    for term, key, start, end in tail.groups():
        merged = _merged_blocks(
            connection, term, key, tail.seqs[start:end], tail.shape_ids[start:end]
        )
        blocks.extend(merged)
        held += sum(len(seqs) for _, _, seqs, _ in merged)
        holding[term] = holding.get(term, 0) + end - start
        if held >= _WRITTEN_POSTINGS:
            _write_blocks(connection, blocks)
            blocks, held = [], 0
    if blocks:
        _write_blocks(connection, blocks)
    connection.executemany(
        "INSERT INTO memory_term_documents (term, documents) VALUES (?, ?) "
        "ON CONFLICT (term) DO UPDATE SET documents = documents + excluded.documents",
        holding.items(),
    )
    connection.execute("DELETE FROM memory_postings_tail")
    connection.execute(
        "UPDATE memory_index_totals SET tail = 0, generation = ?", (_new_generation(),)
    )
    _release_free_pages(connection)


@dataclass(frozen=True, slots=True)
class _TailInOrder:
    """The tail's postings as arrays sorted by term, scope and seq: `terms` the distinct
    terms in order, `ranks` each posting's term as an index into them."""

    terms: list[str]
    ranks: NDArray[np.int64]
    keys: NDArray[np.int64]
    seqs: SeqArray
    shape_ids: ShapeArray

    @classmethod
    def read(cls, connection: sqlite3.Connection) -> _TailInOrder:
        """The tail, read in seq order. Row by row, each term is numbered as first met and
        each row's shape ids stay an array, so no Python object per posting outlives its
        row (a pack's peak memory); the numbers are then mapped to the terms' sorted order."""
        numbers: dict[str, int] = {}
        term_numbers = array("q")
        shape_arrays: list[NDArray[np.integer[Any]]] = []
        row_seqs = array("q")
        row_keys = array("q")
        row_sizes = array("q")
        for seq, key, terms, shapes in connection.execute(
            "SELECT seq, scope_key, terms, shapes FROM memory_postings_tail ORDER BY seq"
        ):
            names, shape_ids = _tail_row(seq, terms, shapes)
            term_numbers.extend([numbers.setdefault(name, len(numbers)) for name in names])
            shape_arrays.append(shape_ids)
            row_seqs.append(seq)
            row_keys.append(key)
            row_sizes.append(len(names))
        terms_in_order = sorted(numbers)
        rank_of_number = np.empty(len(numbers), dtype=np.int64)
        rank_of_number[[numbers[term] for term in terms_in_order]] = np.arange(len(numbers))
        ranks = rank_of_number[np.frombuffer(term_numbers, dtype=np.int64)]
        sizes = np.frombuffer(row_sizes, dtype=np.int64)
        keys = np.repeat(np.frombuffer(row_keys, dtype=np.int64), sizes)
        order = np.lexsort((keys, ranks))  # stable: seqs stay ascending
        seqs = np.repeat(np.frombuffer(row_seqs, dtype=np.int64), sizes)
        every_shape = (
            np.concatenate(shape_arrays).astype(np.int64) if shape_arrays else np.empty(0, np.int64)
        )
        return cls(terms_in_order, ranks[order], keys[order], seqs[order], every_shape[order])

    def groups(self) -> Iterator[tuple[str, int, int, int]]:
        """Each (term, scope)'s term, scope key and slice of the arrays, in order."""
        changes = np.ones(len(self.ranks), dtype=np.bool_)
        changes[1:] = (self.ranks[1:] != self.ranks[:-1]) | (self.keys[1:] != self.keys[:-1])
        bounds = [*np.flatnonzero(changes).tolist(), len(self.ranks)]
        for start, end in pairwise(bounds):
            yield self.terms[int(self.ranks[start])], int(self.keys[start]), start, end


def _release_free_pages(connection: sqlite3.Connection) -> None:
    """A pack frees about as many pages as a full tail fills (the tail's, the merged blocks'):
    give them back to the file system, in a file made with incremental auto-vacuum (a new
    one, or one upgraded; in another file the freelist stays, reused by later writes). One
    page per statement: Python's sqlite3 steps a PRAGMA once, and each step frees one."""
    (free,) = connection.execute("PRAGMA freelist_count").fetchone()
    if connection.execute("PRAGMA auto_vacuum").fetchone()[0] == _INCREMENTAL:
        for _ in range(free):
            connection.execute("PRAGMA incremental_vacuum(1)")


def _merged_blocks(
    connection: sqlite3.Connection, term: str, key: int, seqs: SeqArray, shape_ids: ShapeArray
) -> list[_Block]:
    """The new blocks of a (term, scope)'s postings from the tail (`seqs` ascending, with
    their `shape_ids`): one, merged with the latest blocks (taken out here) while each is no larger than
    what it joins (so blocks halve in size from the oldest to the newest and a posting is
    merged about log2(BLOCK_POSTINGS) times), or while both together stay small (a
    SMALL_SHARE-th of a full block: a rare term keeps one small block, not one row per pack
    it was in; rewriting it costs a few hundred bytes);
    a merge that passes BLOCK_POSTINGS is cut into full blocks and the rest."""
    small = BLOCK_POSTINGS // SMALL_SHARE
    merged = len(seqs)
    # (first seq, block, seqs, shapes) of the blocks joined, newest first: a block's arrays
    # are in its row (read here) or in memory_posting_blocks (`block`, taken out below).
    joined: list[tuple[int, int | None, bytes | None, bytes | None]] = []
    latest = connection.execute(
        "SELECT first_seq, postings, block, seqs, shapes FROM memory_postings "
        "WHERE term = ? AND scope_key = ? ORDER BY first_seq DESC",
        (term, key),
    )
    for first, count, *arrays in latest:
        if count >= BLOCK_POSTINGS or (count > merged and count > small - merged):
            break
        joined.append((first, *arrays))
        merged += count
    latest.close()
    if joined:
        # The joined blocks are the newest: all from the oldest joined one on.
        connection.execute(
            "DELETE FROM memory_postings WHERE term = ? AND scope_key = ? AND first_seq >= ?",
            (term, key, joined[-1][0]),
        )
        every: list[SeqArray] = []
        every_shape: list[ShapeArray] = []
        for first, block, *arrays in reversed(joined):  # oldest first
            if block is not None:
                arrays = connection.execute(
                    "DELETE FROM memory_posting_blocks WHERE block = ? RETURNING seqs, shapes",
                    (block,),
                ).fetchone() or [None, None]
            block_seqs, block_shapes = _decode(first, *arrays)
            every.append(block_seqs)
            every_shape.append(block_shapes)
        every.append(seqs)
        every_shape.append(shape_ids)
        seqs, shape_ids = _in_seq_order(np.concatenate(every), np.concatenate(every_shape))
    return [
        (term, key, seqs[start : start + BLOCK_POSTINGS], shape_ids[start : start + BLOCK_POSTINGS])
        for start in range(0, len(seqs), BLOCK_POSTINGS)
    ]


def totals(connection: sqlite3.Connection) -> Totals:
    documents, tokens, tail, generation = connection.execute(
        "SELECT documents, tokens, tail, generation FROM memory_index_totals"
    ).fetchone()
    return Totals(int(documents), int(tokens), int(tail), int(generation))


def documents_holding(
    connection: sqlite3.Connection, terms: Sequence[str], reader: PostingsReader | None = None
) -> dict[str, int]:
    """How many entries hold each of `terms` (0 for a term none holds): those of the blocks,
    counted as they are packed, and those of the tail, counted by `reader` (which keeps what
    it read of the tail; without one, the tail is read whole)."""
    wanted = list(dict.fromkeys(terms))
    found = dict(
        connection.execute(
            "SELECT term, documents FROM memory_term_documents WHERE term IN "
            f"({', '.join('?' * len(wanted))})",
            wanted,
        ).fetchall()
    )
    waiting = (reader or PostingsReader()).tail_documents(connection, wanted)
    return {term: int(found.get(term, 0)) + waiting[term] for term in wanted}


def problems(connection: sqlite3.Connection, entries: int) -> list[str]:
    """What is wrong with the index, for `verify`, read in one snapshot: totals that disagree
    with the `entries` the store holds, with the tail or with the postings themselves (how
    many entries hold each term, how many tokens the entries hold), postings held twice, and
    blocks that do not decode, are out of order or name shapes the file does not hold."""
    with read_snapshot(connection):
        return _Audit(connection).problems(entries)


class _Audit:
    """One pass over every posting (blocks and tail), gathering what `problems` compares."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.total = totals(connection)
        self.lengths = [0]  # index = shape id, as in a ShapeBook
        for shape, text in connection.execute("SELECT id, shape FROM memory_posting_shapes"):
            self.lengths.extend([0] * (shape + 1 - len(self.lengths)))
            self.lengths[shape] = int(text.partition(" ")[0])
        self.counted = dict(
            connection.execute("SELECT term, documents FROM memory_term_documents").fetchall()
        )
        self.held: dict[str, int] = {}  # entries holding each term in the blocks
        self.entry_lengths: dict[int, int] = {}  # seq -> length, by its postings' shapes
        self.damaged_terms: set[str] = set()
        self.damaged = self.damaged_tail = self.doubled = 0
        tail = self._tail(connection)
        rows = connection.execute(
            "SELECT p.term, p.scope_key, p.first_seq, p.last_seq, p.postings, "
            "CAST(COALESCE(p.seqs, b.seqs) AS BLOB), CAST(COALESCE(p.shapes, b.shapes) AS BLOB) "
            f"FROM {_BLOCKS} ORDER BY p.term, p.scope_key, p.first_seq"
        )
        for (term, key), group in groupby(rows, key=lambda row: (row[0], row[1])):
            seqs: list[int] = []
            shape_ids: list[int] = []
            for _, _, first, last, count, seq_blob, shape_blob in group:
                block = self._block(first, last, count, seq_blob, shape_blob)
                if block is None:
                    self.damaged_terms.add(term)
                    continue
                seqs.extend(block[0])
                shape_ids.extend(block[1])
            self._postings(term, seqs, shape_ids, tail.pop((term, key), []))
        for (term, _), waiting in tail.items():
            self._postings(term, [], [], waiting)

    def _tail(self, connection: sqlite3.Connection) -> dict[tuple[str, int], list[Posting]]:
        """The tail's postings by (term, scope), counting them (`waiting`) and its damaged
        entries (whose terms' counts are then not checked)."""
        tail: dict[tuple[str, int], list[Posting]] = {}
        self.waiting = 0
        for seq, key, terms, shapes in connection.execute(
            "SELECT seq, scope_key, terms, CAST(shapes AS BLOB) FROM memory_postings_tail"
        ):
            try:
                postings = list(_tail_postings(seq, terms, shapes))
            except DamagedIndex:
                self.damaged_tail += 1
                self.damaged_terms.update(str(terms).split(" "))
                continue
            if any(not 0 < shape < len(self.lengths) for _, shape in postings):
                self.damaged_tail += 1
                self.damaged_terms.update(term for term, _ in postings)
                continue
            for term, shape in postings:
                tail.setdefault((term, key), []).append((seq, shape))
            self.waiting += len(postings)
        return tail

    def _block(
        self, first: int, last: int, count: int, seqs: bytes, shapes: bytes
    ) -> tuple[list[int], list[int]] | None:
        """A block's postings, or None (counted as damaged) for one that does not decode,
        whose seqs do not end at its last_seq or are not `count`, or that names an unknown
        shape."""
        try:
            decoded, shape_ids = _decode(first, seqs, shapes)
        except DamagedIndex:
            self.damaged += 1
            return None
        known = bool(len(shape_ids)) and shape_ids.min() > 0 and shape_ids.max() < len(self.lengths)
        if not known or decoded[-1] != last or len(decoded) != count:
            self.damaged += 1
            return None
        return decoded.tolist(), shape_ids.tolist()

    def _postings(
        self, term: str, seqs: list[int], shape_ids: list[int], waiting: list[Posting]
    ) -> None:
        """Count one (term, scope)'s postings: the blocks' `seqs` and `shape_ids`, the tail's
        `waiting` postings."""
        distinct = len(set(seqs))
        every = seqs + [seq for seq, _ in waiting]
        if len(set(every)) != len(every):
            self.doubled += 1
        self.held[term] = self.held.get(term, 0) + distinct
        self.entry_lengths.update(
            zip(
                every,
                map(self.lengths.__getitem__, shape_ids + [shape for _, shape in waiting]),
                strict=True,
            )
        )

    def problems(self, entries: int) -> list[str]:
        found: list[str] = []
        total = self.total
        if total.documents != entries:
            found.append(
                f"the text index holds {total.documents} entries of {entries} "
                "(SqliteStore.rebuild_index rebuilds it from the entries)"
            )
        if self.waiting != total.tail:
            found.append(
                f"the text index counts {total.tail} waiting postings, and holds {self.waiting}"
            )
        if self.damaged:
            found.append(f"the text index has {self.damaged} damaged blocks of postings")
        if self.damaged_tail:
            found.append(f"the text index has {self.damaged_tail} damaged entries in its tail")
        if self.doubled:
            found.append(f"the text index holds postings twice for {self.doubled} terms")
        miscounted = sum(
            1
            for term in self.counted.keys() | self.held.keys()
            if term not in self.damaged_terms
            and self.counted.get(term, 0) != self.held.get(term, 0)
        )
        if miscounted:
            found.append(f"the text index miscounts the entries holding {miscounted} terms")
        found.extend(self._token_problems())
        return found

    def _token_problems(self) -> list[str]:
        """The token total against the postings' lengths: exact when every entry has a
        posting; else each entry without one (no term at all) is at least one token long."""
        if self.damaged_terms:
            return []
        documents, tokens = self.total.documents, self.total.tokens
        with_postings = len(self.entry_lengths)
        if with_postings > documents:
            return [
                f"the text index holds postings of {with_postings} entries and counts {documents}"
            ]
        held = sum(self.entry_lengths.values())
        without = documents - with_postings
        if tokens == held if not without else tokens >= held + without:
            return []
        return [f"the text index counts {tokens} tokens, and its postings hold {held}"]


# The connections (by id) inside a read transaction read_snapshot began: what they read is
# committed data. (A connection takes no weak reference; each is removed when its snapshot
# ends, so an id here always names a live connection.)
_SNAPSHOTS: set[int] = set()


@contextmanager
def read_snapshot(connection: sqlite3.Connection) -> Iterator[bool]:
    """Run the reads inside one read transaction, begun here unless the caller is in a
    transaction already (whose own, maybe uncommitted, state the reads then see). Yields
    whether what is read is committed data."""
    if connection.in_transaction:
        yield id(connection) in _SNAPSHOTS
        return
    connection.execute("BEGIN")
    _SNAPSHOTS.add(id(connection))
    try:
        yield True
    finally:
        _SNAPSHOTS.discard(id(connection))
        connection.execute("COMMIT")


def _reads_committed(connection: sqlite3.Connection) -> bool:
    """Whether `connection` sees only committed data: outside any transaction, or inside a
    read_snapshot's own (not inside a write, which a rollback may undo)."""
    return not connection.in_transaction or id(connection) in _SNAPSHOTS


# ------------------------------------------------------------------------------- scoring


class _Frequencies(dict[str, tuple[float, float]]):
    """For each count text ("c_tags c_title c_key c_body c_context"), FTS5's weighted
    frequency f and f·(k1+1): one addition per occurrence, field by field, as FTS5 adds the
    column weights of a term's instances."""

    def __init__(self, weights: Sequence[float]) -> None:
        super().__init__()
        self._weights = weights

    def __missing__(self, counts: str) -> tuple[float, float]:
        frequency = 0.0
        for weight, count in zip(self._weights, counts.split(" "), strict=True):
            for _ in range(int(count)):
                frequency += weight
        found = self[counts] = (frequency, frequency * (BM25_K1 + 1.0))
        return found


class ShapeBook:
    """The posting shapes of one file, by id, with BM25's term-frequency part of each (which a
    term's IDF multiplies) for the weights and average length last asked: FTS5's operations in
    FTS5's order, done once per shape rather than once per posting. Shapes are only ever added,
    never changed or deleted, so a shape once read stays true; the book keeps only shapes read
    in a snapshot of committed data, so no shape a rollback could undo is kept. One book per
    store."""

    def __init__(self) -> None:
        self._lengths: list[int] = [0]  # index = shape id; ids start at 1
        self._counts: list[str] = ["0 0 0 0 0"]
        self._weights: tuple[float, ...] = ()
        self._average = 0.0
        self._frequencies: list[float] = []
        self._numerators: list[float] = []
        self._parts: NDArray[np.float64] = np.zeros(0)

    def parts(
        self,
        connection: sqlite3.Connection,
        weights: Sequence[float],
        average: float,
        *,
        committed: bool,
    ) -> NDArray[np.float64]:
        """The term-frequency part of every shape, indexed by shape id. `committed`: the
        connection sees only committed shapes (a read snapshot), so the book may keep them;
        otherwise (inside a write) a book of this call's own is read."""
        book = self if committed else ShapeBook()
        return book._read(connection)._parts_for(tuple(weights), average)

    def _read(self, connection: sqlite3.Connection) -> ShapeBook:
        for shape, text in connection.execute(
            "SELECT id, shape FROM memory_posting_shapes WHERE id >= ? ORDER BY id",
            (len(self._lengths),),
        ):
            while len(self._lengths) < shape:  # an id no shape took
                self._lengths.append(0)
                self._counts.append("0 0 0 0 0")
            length, _, counts = text.partition(" ")
            self._lengths.append(int(length))
            self._counts.append(counts)
        return self

    def _parts_for(self, weights: tuple[float, ...], average: float) -> NDArray[np.float64]:
        if weights != self._weights:
            self._weights, self._frequencies, self._numerators = weights, [], []
            self._average = 0.0
        known = len(self._frequencies)
        if known < len(self._counts):
            frequencies = _Frequencies(weights)
            for counts in self._counts[known:]:
                frequency, numerator = frequencies[counts]
                self._frequencies.append(frequency)
                self._numerators.append(numerator)
        if average != self._average or len(self._parts) != len(self._counts):
            k1, b = BM25_K1, BM25_B
            norms = {length: k1 * (1 - b + b * length / average) for length in set(self._lengths)}
            # Element by element the same float operations as FTS5's, in its order.
            self._parts = np.array(self._numerators) / (
                np.array(self._frequencies) + np.array([norms[n] for n in self._lengths])
            )
            self._average = average
        return self._parts


@dataclass(frozen=True, slots=True)
class TermPostings:
    """The postings of one term in some scopes, those packed in blocks and those waiting in
    the tail together: `seqs` ascending, each with its shape id in `shape_ids`. The arrays
    may be the reader's kept ones: read-only."""

    seqs: SeqArray
    shape_ids: ShapeArray

    def __len__(self) -> int:
        return len(self.seqs)


class PostingsReader:
    """How a store reads its index: the postings of a term, the store's ShapeBook, and what
    it keeps of the file between calls. One per store, kept across calls:
    - the shapes (ShapeBook), read once;
    - the decoded blocks of the terms asked last (by term and scopes), valid while the file's
      generation is the one they were read at (see the module's docstring), at most
      `cache_bytes` bytes of arrays (16 a posting: an 8-byte seq and an 8-byte shape id;
      memory.yml's `recall.cache_bytes`), least recently asked out first: a
      long-running server keeps a known bound whatever its scopes hold. A generation is drawn
      at random, so blocks read inside a write that is then rolled back are never taken again;
    - the tail, by term and scope, read on from the last seq it read while the generation
      stays, so a recall reads only the entries written since the last one. Only a tail read
      from committed data is kept; inside a write transaction the tail is read whole each time.
      It holds at most PACK_AT postings (a pack empties it);
    - the postings of the query being answered (since `begin_query`), whatever their size,
      valid in the state they were read in: a recall asks the same terms twice (its ranking,
      then its total), and at a million entries a question's postings pass the cache's bound,
      so the total read them all again (a fifth of a recall). Forgotten when the next query
      begins: at most one query's arrays, which that query held anyway.
    """

    def __init__(self, cache_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.shapes = ShapeBook()
        self.cache_bytes = cache_bytes
        self._blocks: OrderedDict[tuple[str, tuple[int, ...]], tuple[int, SeqArray, ShapeArray]]
        self._blocks = OrderedDict()
        self._cached = 0  # bytes of the arrays held in `_blocks`
        self._tail = _TailView()
        self._query: dict[tuple[str, tuple[int, ...]], tuple[tuple[int, int], TermPostings]] = {}

    def begin_query(self) -> None:
        """Forget the postings the last query read (see the class's docstring)."""
        self._query = {}

    @property
    def cached_bytes(self) -> int:
        """What the kept blocks' arrays take now."""
        return self._cached

    def postings(
        self, connection: sqlite3.Connection, term: str, keys: Sequence[int], *, hold: bool = False
    ) -> TermPostings:
        """The postings of `term` in the scopes `keys` (see TermPostings); `hold`: keep them
        for the rest of the query (its ranking's reads; so nothing else adds to what a query
        holds). Those held are taken again while the file is in the state they were read in:
        the same generation and as many postings in the tail (which within a generation only
        grows), read from committed data (a rolled-back write may leave the same counts with
        other postings)."""
        generation, waiting = connection.execute(
            "SELECT generation, tail FROM memory_index_totals"
        ).fetchone()
        asked = (term, tuple(keys))
        held = self._query.get(asked)
        if held is not None and held[0] == (generation, waiting):
            return held[1]
        seqs, shape_ids = self._blocks_of(connection, term, asked[1], generation)
        tail = self._tail_of(connection, generation, waiting).postings(term, keys)
        if not tail:
            found = TermPostings(seqs, shape_ids)
        else:
            tail_seqs = np.fromiter(tail.keys(), dtype=np.int64, count=len(tail))
            tail_shapes = np.fromiter(tail.values(), dtype=np.int64, count=len(tail))
            found = TermPostings(
                *_in_seq_order(
                    np.concatenate((seqs, tail_seqs)), np.concatenate((shape_ids, tail_shapes))
                )
            )
        if hold and _reads_committed(connection):
            self._query[asked] = ((generation, waiting), found)
        return found

    def tail_documents(
        self, connection: sqlite3.Connection, terms: Sequence[str]
    ) -> dict[str, int]:
        """How many entries of the tail hold each of `terms` (in every scope)."""
        generation, waiting = connection.execute(
            "SELECT generation, tail FROM memory_index_totals"
        ).fetchone()
        view = self._tail_of(connection, generation, waiting)
        return {term: view.documents(term) for term in terms}

    def _tail_of(self, connection: sqlite3.Connection, generation: int, waiting: int) -> _TailView:
        if not _reads_committed(connection):
            return _TailView().read(connection, generation, waiting)
        return self._tail.read(connection, generation, waiting)

    def _blocks_of(
        self, connection: sqlite3.Connection, term: str, keys: tuple[int, ...], generation: int
    ) -> tuple[SeqArray, ShapeArray]:
        """The blocks' postings of `term` in `keys`, seq ascending: kept, or read and kept."""
        known = self._blocks.get((term, keys))
        if known is not None and known[0] == generation:
            self._blocks.move_to_end((term, keys))
            return known[1], known[2]
        if known is not None:
            self._forget((term, keys))
        seqs, shape_ids = _read_blocks(connection, term, keys)
        seqs.flags.writeable = shape_ids.flags.writeable = False
        size = seqs.nbytes + shape_ids.nbytes
        if size <= self.cache_bytes:
            while self._blocks and self._cached + size > self.cache_bytes:
                self._forget(next(iter(self._blocks)))
            self._blocks[(term, keys)] = (generation, seqs, shape_ids)
            self._cached += size
        return seqs, shape_ids

    def _forget(self, asked: tuple[str, tuple[int, ...]]) -> None:
        _, seqs, shape_ids = self._blocks.pop(asked)
        self._cached -= seqs.nbytes + shape_ids.nbytes


class _TailView:
    """The tail as one reader last read it: term → scope key → seq → shape id, with the
    generation it belongs to, the last seq read and how many postings were read."""

    def __init__(self) -> None:
        self._generation: int | None = None
        self._last_seq = 0
        self._waiting = 0
        self._postings: dict[str, dict[int, dict[int, int]]] = {}

    def read(self, connection: sqlite3.Connection, generation: int, waiting: int) -> _TailView:
        """Bring the view up to the state `connection` sees (whose totals say `generation`
        and `waiting`): read anew in another generation, else only the entries past the last
        seq read (within a generation the tail only gains entries of higher seqs)."""
        if generation != self._generation or waiting < self._waiting:
            self._generation, self._last_seq, self._waiting = generation, 0, 0
            self._postings = {}
        if waiting == self._waiting:
            return self
        for seq, key, terms, shapes in connection.execute(
            "SELECT seq, scope_key, terms, shapes FROM memory_postings_tail WHERE seq > ? "
            "ORDER BY seq",
            (self._last_seq,),
        ):
            for term, shape in _tail_postings(seq, terms, shapes):
                self._postings.setdefault(term, {}).setdefault(key, {})[seq] = shape
                self._waiting += 1
            self._last_seq = seq
        return self

    def postings(self, term: str, keys: Sequence[int]) -> dict[int, int]:
        """seq → shape id of `term`'s tail postings in the scopes `keys` (a new dict)."""
        scopes = self._postings.get(term)
        found: dict[int, int] = {}
        if scopes:
            for key in keys:
                found.update(scopes.get(key, {}))
        return found

    def documents(self, term: str) -> int:
        return sum(map(len, self._postings.get(term, {}).values()))


def _read_blocks(
    connection: sqlite3.Connection, term: str, keys: tuple[int, ...]
) -> tuple[SeqArray, ShapeArray]:
    """Decode every block of `term` in the scopes `keys`, seq ascending."""
    seqs: list[SeqArray] = [_NO_SEQS]
    shape_ids: list[ShapeArray] = [_NO_SHAPES]
    try:
        for row in connection.execute(
            f"SELECT p.first_seq, {_ARRAYS} FROM {_BLOCKS} "
            f"WHERE p.term = ? AND p.scope_key IN ({', '.join('?' * len(keys))}) "
            "ORDER BY p.scope_key, p.first_seq",
            (term, *keys),
        ):
            block_seqs, block_shapes = _decode(*row)
            seqs.append(block_seqs)
            shape_ids.append(block_shapes)
    except DamagedIndex as error:
        raise damaged_postings(term) from error
    return _in_seq_order(np.concatenate(seqs), np.concatenate(shape_ids))


def _tail_postings(seq: int, terms: str, shapes: bytes) -> Iterator[tuple[str, int]]:
    """The (term, shape id) pairs of one tail row (see `_tail_row`)."""
    names, shape_ids = _tail_row(seq, terms, shapes)
    return zip(names, shape_ids.tolist(), strict=True)


def _tail_row(seq: int, terms: str, shapes: bytes) -> tuple[list[str], NDArray[np.integer[Any]]]:
    """The terms of one tail row and their shape ids (the row's array as stored: a caller
    casts what it gathers once). DamagedIndex for a row that does not decode or whose terms
    and shapes disagree in number."""
    shape_ids = _array(shapes)
    names = terms.split(" ") if isinstance(terms, str) else []
    if len(names) != len(shape_ids) or not len(shape_ids):
        raise DamagedIndex(f"the text index has a damaged tail entry (seq {seq})")
    return names, shape_ids


def damaged_postings(term: str) -> DamagedIndex:
    """The error for postings of `term` that do not decode or name no known shape."""
    return DamagedIndex(
        f"the text index has a damaged block of postings of {term!r} "
        "(SqliteStore.rebuild_index rebuilds it)"
    )


# -------------------------------------------------------------------------------- blocks


def _shape_ids(
    connection: sqlite3.Connection, shapes: Sequence[str], known: dict[str, int]
) -> dict[str, int]:
    """`known` with the ids of `shapes` added, those the file does not know yet added to it
    (no statement when `known` has them all, one when the file has them all, as it does
    nearly always)."""
    if all(map(known.__contains__, shapes)):  # in C; not `- known.keys()`, which is O(known)
        return known
    missing = {shape for shape in shapes if shape not in known}
    listed = json.dumps(sorted(missing))
    lookup = (
        "SELECT shape, id FROM memory_posting_shapes WHERE shape IN "
        "(SELECT value FROM json_each(?))"
    )
    found = dict(connection.execute(lookup, (listed,)).fetchall())
    if len(found) < len(missing):
        connection.execute(
            "INSERT OR IGNORE INTO memory_posting_shapes (shape) SELECT value FROM json_each(?)",
            (json.dumps(sorted(missing - found.keys())),),
        )
        found = dict(connection.execute(lookup, (listed,)).fetchall())
    known.update(found)
    return known


def _write_block(
    connection: sqlite3.Connection,
    term: str,
    key: int,
    seqs: SeqArray,
    shape_ids: ShapeArray,
) -> None:
    """Store the postings `seqs` (ascending) with their `shape_ids` as one block (none when
    there are none)."""
    if len(seqs):
        _write_blocks(connection, [(term, key, seqs, shape_ids)])


def _write_blocks(connection: sqlite3.Connection, blocks: Sequence[_Block]) -> None:
    """Store `blocks` (none empty): each one's arrays in its row, or in memory_posting_blocks
    when larger than `_INLINE_BYTES`, written in the order `_page_order` gives them."""
    rows: list[tuple[str, int, int, int, int, int | None, bytes | None, bytes | None]] = []
    apart: list[tuple[_Block, bytes, bytes]] = []
    blobs = [
        blob
        for chunk in _chunks(blocks, _ENCODED_POSTINGS)
        for blob in encoded([(seqs, shape_ids) for _, _, seqs, shape_ids in chunk])
    ]
    for block, (gaps, shapes) in zip(blocks, blobs, strict=True):
        term, key, seqs, _ = block
        if len(gaps) + len(shapes) + len(term.encode("utf-8")) > _INLINE_BYTES:
            apart.append((block, gaps, shapes))
        else:
            rows.append((term, key, int(seqs[0]), int(seqs[-1]), len(seqs), None, gaps, shapes))
    for at in _page_order([len(gaps) + len(shapes) for _, gaps, shapes in apart]):
        (term, key, seqs, _), gaps, shapes = apart[at]
        (number,) = connection.execute(
            "INSERT INTO memory_posting_blocks (seqs, shapes) VALUES (?, ?) RETURNING block",
            (gaps, shapes),
        ).fetchone()
        rows.append((term, key, int(seqs[0]), int(seqs[-1]), len(seqs), number, None, None))
    connection.executemany(
        "INSERT INTO memory_postings "
        "(term, scope_key, first_seq, last_seq, postings, block, seqs, shapes) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def _chunks(blocks: Sequence[_Block], postings: int) -> Iterator[Sequence[_Block]]:
    """`blocks` in consecutive runs of at most `postings` postings (at least one block each)."""
    start = held = 0
    for end, (_, _, seqs, _) in enumerate(blocks):
        if held and held + len(seqs) > postings:
            yield blocks[start:end]
            start, held = end, 0
        held += len(seqs)
    if start < len(blocks):
        yield blocks[start:]


def _page_order(sizes: Sequence[int]) -> list[int]:
    """The order to append arrays of these `sizes` to memory_posting_blocks so its leaf
    pages fill: SQLite appends to the last leaf while a row fits and starts a new one when it
    does not, so arrays written in arbitrary order leave a quarter of each page empty. This
    packs them first fit, largest first, into pages as SQLite lays rows out (what of a row
    stays in the leaf; the rest goes to overflow pages, which are filled whole), and gives
    the pages' rows one page after the other."""
    pages: list[list[int]] = []
    room: list[int] = []
    for at in sorted(range(len(sizes)), key=lambda at: -sizes[at]):
        cell = _leaf_cell(sizes[at])
        for page, left in enumerate(room):
            if cell <= left:
                pages[page].append(at)
                room[page] -= cell
                break
        else:
            pages.append([at])
            room.append(_LEAF_ROOM - cell)
    return [at for page in pages for at in page]


def _leaf_cell(arrays: int) -> int:
    """About what a row of memory_posting_blocks holding `arrays` bytes takes in its leaf
    page: its record's header, the part of its payload SQLite keeps in the leaf (all of it up
    to 4,061 bytes; else what is left over whole overflow pages, if that fits, else 489), the
    overflow pointer, the cell's sizes and pointer."""
    payload = arrays + 6
    if payload <= _LOCAL_MOST:
        return payload + 7
    kept = _LOCAL_LEAST + (payload - _LOCAL_LEAST) % _OVERFLOW_ROOM
    return (kept if kept <= _LOCAL_MOST else _LOCAL_LEAST) + 4 + 7


def _take_block(
    connection: sqlite3.Connection, term: str, key: int, first: int
) -> tuple[SeqArray, ShapeArray]:
    """The seqs and shape ids of one block, which is deleted."""
    first, block, *arrays = connection.execute(
        "DELETE FROM memory_postings WHERE term = ? AND scope_key = ? AND first_seq = ? "
        "RETURNING first_seq, block, seqs, shapes",
        (term, key, first),
    ).fetchone()
    if block is not None:
        arrays = connection.execute(
            "DELETE FROM memory_posting_blocks WHERE block = ? RETURNING seqs, shapes", (block,)
        ).fetchone() or (None, None)
    return _decode(first, *arrays)


def _remove_from_blocks(connection: sqlite3.Connection, term: str, key: int, seq: int) -> bool:
    """Rewrite the block of (term, scope) holding `seq` without it; False if none does."""
    for first, *row in connection.execute(
        f"SELECT p.first_seq, {_ARRAYS} FROM {_BLOCKS} "
        "WHERE p.term = ? AND p.scope_key = ? AND p.first_seq <= ? AND p.last_seq >= ?",
        (term, key, seq, seq),
    ).fetchall():
        seqs, _ = _decode(first, *row)
        at = int(np.searchsorted(seqs, seq))
        if at < len(seqs) and seqs[at] == seq:
            kept, shape_ids = _take_block(connection, term, key, first)
            _write_block(connection, term, key, np.delete(kept, at), np.delete(shape_ids, at))
            return True
    return False


def _in_seq_order(seqs: SeqArray, shape_ids: ShapeArray) -> tuple[SeqArray, ShapeArray]:
    """`seqs` with their `shape_ids`, seq ascending: runs of ascending seqs (blocks that
    overlap, as a re-indexed entry's does, or blocks of several scopes), joined by a stable
    sort."""
    if not np.any(seqs[1:] < seqs[:-1]):
        return seqs, shape_ids
    order = np.argsort(seqs, kind="stable")
    return seqs[order], shape_ids[order]


def _new_generation() -> int:
    """A generation no state of any file had (63 random bits)."""
    return int.from_bytes(os.urandom(8), "big") >> 1


def _decode(first: int, seqs: bytes, shapes: bytes) -> tuple[SeqArray, ShapeArray]:
    """A block's seqs and shape ids. DamagedIndex for blobs that are not a block's."""
    gaps = _gap_array(seqs)
    decoded = np.empty(len(gaps) + 1, dtype=np.int64)
    decoded[0] = first
    np.cumsum(gaps, out=decoded[1:])
    decoded[1:] += first
    shape_ids = _shape_array(shapes)
    if len(shape_ids) != len(decoded):
        raise DamagedIndex("a block's arrays disagree in length")
    return decoded, shape_ids


def _gap_array(blob: bytes) -> SeqArray:
    """A block's seq gaps: a plain array (`_array`) or one written a byte each
    (sqlite_block_codec.py): how many gaps are wider (2 bytes), their positions (2 bytes each), their
    high bytes, then every gap's low byte. The wider gaps' high bytes are added in one step."""
    if not isinstance(blob, bytes) or blob[:1] != BYTE_GAPS:
        return _array(blob).astype(np.int64)
    wide = int.from_bytes(blob[1:3], "little")
    highs_at = 3 + 2 * wide
    lows_at = highs_at + wide
    if len(blob) < lows_at:
        raise DamagedIndex("a truncated array of a block")
    positions = np.frombuffer(blob, dtype=np.uint16, count=wide, offset=3)
    highs = np.frombuffer(blob, dtype=np.uint8, count=wide, offset=highs_at)
    gaps = np.frombuffer(blob, dtype=np.uint8, offset=lows_at).astype(np.int64)
    if wide and int(positions.max()) >= len(gaps):
        raise DamagedIndex("a wide gap past the end of a block")
    gaps[positions] += highs.astype(np.int64) << 8
    return gaps


def _shape_array(blob: bytes) -> ShapeArray:
    """A block's shape ids: a plain array (`_array`) or one written with a palette
    (sqlite_block_codec.py): the palette's size less one, the palette (an array), then one index
    into it per posting, mapped in one step."""
    if not isinstance(blob, bytes) or blob[:1] != PALETTE:
        return _array(blob).astype(np.int64)
    code = blob[2:3].decode("ascii", "replace")
    if not blob[1:2] or code not in CODES:
        raise DamagedIndex("a damaged palette of a block")
    end = 3 + (blob[1] + 1) * DTYPES[code].itemsize
    palette = _array(blob[2:end])
    indexes = np.frombuffer(blob, dtype=np.uint8, offset=min(end, len(blob)))
    if len(palette) != blob[1] + 1 or (len(indexes) and int(indexes.max()) >= len(palette)):
        raise DamagedIndex("a palette of a block that does not hold its indexes")
    return palette.astype(np.int64)[indexes]


def _array(blob: bytes) -> NDArray[np.integer[Any]]:
    """The array a blob holds: its first byte is the typecode, the rest the items (a view of
    the blob, read-only)."""
    if not isinstance(blob, bytes):  # a damaged row may hold text or a number
        raise DamagedIndex("not a blob")
    dtype = DTYPES.get(blob[:1].decode("ascii", "replace"))
    if dtype is None:
        raise DamagedIndex("not an array of a block")
    if (len(blob) - 1) % dtype.itemsize:
        raise DamagedIndex("a truncated array of a block")
    return np.frombuffer(blob, dtype=dtype, offset=1)
