"""The SqliteStore's text index: postings packed in blocks, ranked by BM25 exactly as FTS5's
bm25() computes it, in passes that run in C.

Why not FTS5 (which schema 2 used): an FTS5 query visits and scores every entry that holds any
query term, inside SQLite but one row at a time through its auxiliary-function API (about
1.2 µs a row here). In one scope of 100k entries a question's terms are held by about 47k of
them, so a recall spent 60 ms in bm25() and as much again joining every hit with its entry.
Here the postings of a term in a scope are a few rows whose blobs decode in C (`array`,
`str.split`); each distinct shape of a posting (the entry's length and the term's count in each
field) is scored once per query; the per-entry sums are dict operations, also in C, and only
entries holding two or more of the query's terms pass through Python.

Why the write path looks as it does: a durable commit costs what it writes to the WAL, page by
page. One row per term per entry, or one counter per term, lands on as many B-tree pages as the
entry has terms (about 40 for a chat turn). So an entry is written as ONE row of the tail, keyed
by its seq (so it lands on the table's last page); the counts of the entries holding each term
are kept for the blocks only, and the tail's are counted by whoever reads it. A pack, every
PACK_AT postings (about 1,500 chat turns; a pack costs per term, so fewer and larger packs cost
less per entry), moves the tail into blocks log-structured: every (term, scope) gets a new
block, merged with its latest blocks while they are no larger than what is being merged, so a
posting is rewritten O(log BLOCK_POSTINGS) times, never a full block to add a few postings.

Tables (one database, written inside the store's transactions, so crash-safe like the rest):
- memory_postings: one row per block of postings of a (term, scope): how many it holds, the
  entries' seqs ascending, as the gaps after `first_seq` (an array of 2, 4 or 8-byte integers,
  whichever holds the largest gap), and for each the id of its shape (2 or 4 bytes). Each blob
  starts with its array's typecode. A block holds at most BLOCK_POSTINGS postings; a full one
  is never merged again.
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
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import accumulate, groupby, islice

from agentscript.memory.store import BM25_B, BM25_K1, scope_hash

PACK_AT = 60_000
BLOCK_POSTINGS = 4_096
# What a PostingsReader keeps of decoded blocks, in postings (about 45 bytes each in memory):
# the blocks of the terms asked last, least recently asked out first.
CACHE_POSTINGS = 2_000_000

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS memory_postings (
        term TEXT NOT NULL,
        scope_key INTEGER NOT NULL,
        first_seq INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        postings INTEGER NOT NULL,
        seqs BLOB NOT NULL,
        shapes BLOB NOT NULL,
        PRIMARY KEY (term, scope_key, first_seq)
    ) WITHOUT ROWID""",
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
_TABLES = ("memory_postings", "memory_postings_tail", "memory_term_documents")
# Every table of the index, dropped by an upgrade whose layout differs (`drop`).
_ALL_TABLES = (*_TABLES, "memory_posting_shapes", "memory_index_totals")
# The typecodes a block's arrays use, each with the bound of what it holds, smallest first.
_CODES = {
    "H": 2**16,
    next(code for code in "IL" if array(code).itemsize == 4): 2**32,
    "q": 2**63,
}

# SQLite's largest integer (no seq passes it).
_LAST_SEQ = 2**63 - 1
# A posting: an entry's seq and the id of its shape.
Posting = tuple[int, int]


@dataclass(frozen=True, slots=True)
class IndexedEntry:
    """What the index holds of one entry: its seq and scope, each of its tokens with the
    token's count in each indexed field, and its length in tokens (store.postings)."""

    seq: int
    scope: str
    counts: Mapping[str, Sequence[int]]
    length: int


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


def add(
    connection: sqlite3.Connection,
    entries: Iterable[IndexedEntry],
    known_shapes: dict[str, int] | None = None,
) -> None:
    """Index `entries` (inside the caller's write transaction): one tail row each, packed
    into blocks once enough postings wait there. One call for many entries costs a few
    statements, not a few per entry. `known_shapes`: shapes' ids the caller keeps (valid for
    this file as it is), looked up first and added to."""
    rows: list[tuple[int, int, str, list[str]]] = []
    documents = tokens = waiting = 0
    for entry in entries:
        documents += 1
        tokens += entry.length
        if entry.counts:
            prefix = f"{entry.length} "
            shapes = [prefix + _counts_text(counts) for counts in entry.counts.values()]
            rows.append((entry.seq, scope_hash(entry.scope), " ".join(entry.counts), shapes))
            waiting += len(shapes)
    if not documents:
        return
    ids = _shape_ids(
        connection,
        {shape for *_, shapes in rows for shape in shapes},
        {} if known_shapes is None else known_shapes,
    )
    # Seqs not past the tail's last are no append: readers that kept the tail read it anew.
    seqs = [seq for seq, *_ in rows] or [_LAST_SEQ]
    ascending = all(map(operator.lt, seqs, islice(seqs, 1, None)))
    waiting = connection.execute(
        "UPDATE memory_index_totals SET documents = documents + ?, tokens = tokens + ?, "
        "tail = tail + ?, generation = CASE WHEN ? AND "
        "COALESCE((SELECT MAX(seq) FROM memory_postings_tail), 0) < ? "
        "THEN generation ELSE ? END RETURNING tail",
        (documents, tokens, waiting, ascending, seqs[0], _new_generation()),
    ).fetchone()[0]
    connection.executemany(
        "INSERT INTO memory_postings_tail (seq, scope_key, terms, shapes) VALUES (?, ?, ?, ?)",
        [
            (seq, key, terms, _packed([ids[shape] for shape in shapes]))
            for seq, key, terms, shapes in rows
        ],
    )
    if waiting >= PACK_AT:
        pack(connection)


# A term's counts per field as a shape writes them ("0 1 0 2 0"), for the counts seen: few
# distinct ones recur (most terms occur once or twice in one or two fields).
_COUNTS_TEXT: dict[tuple[int, ...], str] = {}
_MOST_COUNTS = 4_096


def _counts_text(counts: Sequence[int]) -> str:
    key = tuple(counts)
    text = _COUNTS_TEXT.get(key)
    if text is None:
        if len(_COUNTS_TEXT) >= _MOST_COUNTS:
            _COUNTS_TEXT.clear()
        text = _COUNTS_TEXT[key] = " ".join(map(str, key))
    return text


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


def pack(connection: sqlite3.Connection) -> None:
    """Move the tail's postings into blocks (see the module's docstring)."""
    fresh: dict[tuple[str, int], tuple[list[int], list[int]]] = {}
    for seq, key, terms, shapes in connection.execute(
        "SELECT seq, scope_key, terms, shapes FROM memory_postings_tail ORDER BY seq"
    ):
        for term, shape in _tail_postings(seq, terms, shapes):
            found = fresh.get((term, key))
            if found is None:
                found = fresh[(term, key)] = ([], [])
            found[0].append(seq)
            found[1].append(shape)
    holding: dict[str, int] = {}
    for (term, key), (seqs, shape_ids) in sorted(fresh.items()):
        _pack_term(connection, term, key, seqs, shape_ids)
        holding[term] = holding.get(term, 0) + len(seqs)
    connection.executemany(
        "INSERT INTO memory_term_documents (term, documents) VALUES (?, ?) "
        "ON CONFLICT (term) DO UPDATE SET documents = documents + excluded.documents",
        holding.items(),
    )
    connection.execute("DELETE FROM memory_postings_tail")
    connection.execute(
        "UPDATE memory_index_totals SET tail = 0, generation = ?", (_new_generation(),)
    )


def _pack_term(
    connection: sqlite3.Connection, term: str, key: int, seqs: list[int], shape_ids: list[int]
) -> None:
    """Write a (term, scope)'s postings from the tail (`seqs` ascending, with their
    `shape_ids`) as a new block, merged with the latest blocks while each is no larger than
    what it joins (so blocks halve in size from the oldest to the newest and a posting is
    merged about log2(BLOCK_POSTINGS) times); a merge that passes BLOCK_POSTINGS is cut into
    full blocks and the rest."""
    merged = len(seqs)
    joined: list[int] = []
    latest = connection.execute(
        "SELECT first_seq, postings FROM memory_postings WHERE term = ? AND scope_key = ? "
        "ORDER BY first_seq DESC",
        (term, key),
    )
    for first, count in latest:
        if count >= BLOCK_POSTINGS or count > merged:
            break
        joined.append(first)
        merged += count
    latest.close()
    if joined:
        every: list[int] = []
        every_shape: list[int] = []
        for first in reversed(joined):  # oldest first
            block_seqs, block_shapes = _take_block(connection, term, key, first)
            every.extend(block_seqs)
            every_shape.extend(block_shapes)
        every.extend(seqs)
        every_shape.extend(shape_ids)
        seqs, shape_ids = _in_seq_order(every, every_shape)
    for start in range(0, len(seqs), BLOCK_POSTINGS):
        end = start + BLOCK_POSTINGS
        _write_block(connection, term, key, seqs[start:end], shape_ids[start:end])


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
            "SELECT term, scope_key, first_seq, last_seq, postings, CAST(seqs AS BLOB), "
            "CAST(shapes AS BLOB) FROM memory_postings ORDER BY term, scope_key, first_seq"
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
    ) -> tuple[list[int], array[int]] | None:
        """A block's postings, or None (counted as damaged) for one that does not decode,
        whose seqs do not end at its last_seq or are not `count`, or that names an unknown
        shape."""
        try:
            decoded, shape_ids = _decode(first, seqs, shapes)
        except DamagedIndex:
            decoded, shape_ids = [], array("H")
        known = bool(shape_ids) and min(shape_ids) > 0 and max(shape_ids) < len(self.lengths)
        if not known or decoded[-1] != last or len(decoded) != count:
            self.damaged += 1
            return None
        return decoded, shape_ids

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
        self._parts: list[float] = []

    def parts(
        self,
        connection: sqlite3.Connection,
        weights: Sequence[float],
        average: float,
        *,
        committed: bool,
    ) -> list[float]:
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

    def _parts_for(self, weights: tuple[float, ...], average: float) -> list[float]:
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
            self._parts = [
                numerator / (frequency + norms[length])
                for numerator, frequency, length in zip(
                    self._numerators, self._frequencies, self._lengths, strict=True
                )
            ]
            self._average = average
        return self._parts


@dataclass(frozen=True, slots=True)
class TermPostings:
    """The postings of one term in some scopes: those packed in blocks (`seqs` ascending, each
    with its shape id in `shape_ids`) and those waiting in the tail (`tail`: seq → shape id).
    No seq is in both."""

    seqs: list[int]
    shape_ids: list[int]
    tail: dict[int, int]

    def __len__(self) -> int:
        return len(self.seqs) + len(self.tail)


class PostingsReader:
    """How a store reads its index: the postings of a term, the store's ShapeBook, and what
    it keeps of the file between calls. One per store, kept across calls:
    - the shapes (ShapeBook), read once;
    - the decoded blocks of the terms asked last (by term and scopes), valid while the file's
      generation is the one they were read at (see the module's docstring), at most
      `cache_postings` postings, least recently asked out first. A generation is drawn at
      random, so blocks read inside a write that is then rolled back are never taken again;
    - the tail, by term and scope, read on from the last seq it read while the generation
      stays, so a recall reads only the entries written since the last one. Only a tail read
      from committed data is kept; inside a write transaction the tail is read whole each time.
    """

    def __init__(self, cache_postings: int | None = None) -> None:
        self.shapes = ShapeBook()
        self._limit = CACHE_POSTINGS if cache_postings is None else cache_postings
        self._blocks: OrderedDict[tuple[str, tuple[int, ...]], tuple[int, list[int], list[int]]]
        self._blocks = OrderedDict()
        self._cached = 0  # postings held in `_blocks`
        self._tail = _TailView()

    def postings(
        self, connection: sqlite3.Connection, term: str, keys: Sequence[int]
    ) -> TermPostings:
        """The postings of `term` in the scopes `keys` (see TermPostings). The lists may be
        shared with later calls: do not change them."""
        generation, waiting = connection.execute(
            "SELECT generation, tail FROM memory_index_totals"
        ).fetchone()
        seqs, shape_ids = self._blocks_of(connection, term, tuple(keys), generation)
        tail = self._tail_of(connection, generation, waiting).postings(term, keys)
        return TermPostings(seqs, shape_ids, tail)

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
    ) -> tuple[list[int], list[int]]:
        """The blocks' postings of `term` in `keys`, seq ascending: kept, or read and kept."""
        known = self._blocks.get((term, keys))
        if known is not None and known[0] == generation:
            self._blocks.move_to_end((term, keys))
            return known[1], known[2]
        if known is not None:
            self._forget((term, keys))
        seqs, shape_ids = _read_blocks(connection, term, keys)
        if len(seqs) <= self._limit:
            self._blocks[(term, keys)] = (generation, seqs, shape_ids)
            self._cached += len(seqs)
            while self._cached > self._limit:
                self._forget(next(iter(self._blocks)))
        return seqs, shape_ids

    def _forget(self, asked: tuple[str, tuple[int, ...]]) -> None:
        self._cached -= len(self._blocks.pop(asked)[1])


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
) -> tuple[list[int], list[int]]:
    """Decode every block of `term` in the scopes `keys`, seq ascending."""
    seqs: list[int] = []
    shape_ids: list[int] = []
    try:
        for row in connection.execute(
            "SELECT first_seq, seqs, shapes FROM memory_postings "
            f"WHERE term = ? AND scope_key IN ({', '.join('?' * len(keys))}) "
            "ORDER BY scope_key, first_seq",
            (term, *keys),
        ):
            block_seqs, block_shapes = _decode(*row)
            seqs.extend(block_seqs)
            shape_ids.extend(block_shapes)
    except DamagedIndex as error:
        raise damaged_postings(term) from error
    return _in_seq_order(seqs, shape_ids)


def _tail_postings(seq: int, terms: str, shapes: bytes) -> Iterator[tuple[str, int]]:
    """The (term, shape id) pairs of one tail row. DamagedIndex for a row that does not
    decode or whose terms and shapes disagree in number."""
    shape_ids = _array(shapes)
    names = terms.split(" ") if isinstance(terms, str) else []
    if len(names) != len(shape_ids) or not shape_ids:
        raise DamagedIndex(f"the text index has a damaged tail entry (seq {seq})")
    return zip(names, shape_ids, strict=True)


def damaged_postings(term: str) -> DamagedIndex:
    """The error for postings of `term` that do not decode or name no known shape."""
    return DamagedIndex(
        f"the text index has a damaged block of postings of {term!r} "
        "(SqliteStore.rebuild_index rebuilds it)"
    )


# -------------------------------------------------------------------------------- blocks


def _shape_ids(
    connection: sqlite3.Connection, shapes: set[str], known: dict[str, int]
) -> dict[str, int]:
    """`known` with the ids of `shapes` added, those the file does not know yet added to it
    (no statement when `known` has them all, one when the file has them all, as it does
    nearly always)."""
    missing = {shape for shape in shapes if shape not in known}  # not `- known.keys()`: O(known)
    if not missing:
        return known
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
    seqs: Sequence[int],
    shape_ids: Sequence[int],
) -> None:
    """Store the postings `seqs` (ascending) with their `shape_ids` as one block."""
    if not seqs:
        return
    connection.execute(
        "INSERT INTO memory_postings "
        "(term, scope_key, first_seq, last_seq, postings, seqs, shapes) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            term,
            key,
            seqs[0],
            seqs[-1],
            len(seqs),
            _packed(list(map(operator.sub, islice(seqs, 1, None), seqs))),
            _packed(shape_ids),
        ),
    )


def _take_block(
    connection: sqlite3.Connection, term: str, key: int, first: int
) -> tuple[list[int], array[int]]:
    """The seqs and shape ids of one block, which is deleted."""
    row = connection.execute(
        "DELETE FROM memory_postings WHERE term = ? AND scope_key = ? AND first_seq = ? "
        "RETURNING first_seq, seqs, shapes",
        (term, key, first),
    ).fetchone()
    return _decode(*row)


def _remove_from_blocks(connection: sqlite3.Connection, term: str, key: int, seq: int) -> bool:
    """Rewrite the block of (term, scope) holding `seq` without it; False if none does."""
    for first, *row in connection.execute(
        "SELECT first_seq, seqs, shapes FROM memory_postings "
        "WHERE term = ? AND scope_key = ? AND first_seq <= ? AND last_seq >= ?",
        (term, key, seq, seq),
    ).fetchall():
        seqs, _ = _decode(first, *row)
        at = bisect_left(seqs, seq)
        if at < len(seqs) and seqs[at] == seq:
            kept, shape_ids = _take_block(connection, term, key, first)
            del kept[at], shape_ids[at]
            _write_block(connection, term, key, kept, shape_ids)
            return True
    return False


def _in_seq_order(seqs: list[int], shape_ids: list[int]) -> tuple[list[int], list[int]]:
    """`seqs` with their `shape_ids`, seq ascending: runs of ascending seqs (blocks that
    overlap, as a re-indexed entry's does, or blocks of several scopes), which a sort of the
    positions by seq joins in about linear time."""
    if not any(map(operator.gt, seqs, islice(seqs, 1, None))):
        return seqs, shape_ids
    order = sorted(range(len(seqs)), key=seqs.__getitem__)
    return [seqs[at] for at in order], [shape_ids[at] for at in order]


def _new_generation() -> int:
    """A generation no state of any file had (63 random bits)."""
    return int.from_bytes(os.urandom(8), "big") >> 1


def _decode(first: int, seqs: bytes, shapes: bytes) -> tuple[list[int], array[int]]:
    """A block's seqs and shape ids. DamagedIndex for blobs that are not a block's."""
    gaps = _array(seqs)
    decoded = list(accumulate(gaps, initial=first))
    shape_ids = _array(shapes)
    if len(shape_ids) != len(decoded):
        raise DamagedIndex("a block's arrays disagree in length")
    return decoded, shape_ids


def _array(blob: bytes) -> array[int]:
    """The array a blob holds: its first byte is the typecode, the rest the items."""
    if not isinstance(blob, bytes):  # a damaged row may hold text or a number
        raise DamagedIndex("not a blob")
    code = blob[:1].decode("ascii", "replace")
    if code not in _CODES:
        raise DamagedIndex("not an array of a block")
    items = array(code)
    try:
        items.frombytes(blob[1:])
    except ValueError as error:  # a length that is no whole number of items
        raise DamagedIndex("a truncated array of a block") from error
    return items


def _packed(values: Sequence[int]) -> bytes:
    """`values` (not negative) as the smallest array that holds them, typecode first."""
    highest = max(values, default=0)
    code = next(code for code, limit in _CODES.items() if highest < limit)
    return code.encode("ascii") + array(code, values).tobytes()
