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

Tables (one database, written inside the store's transactions, so crash-safe like the rest):
- memory_postings: one row per block of postings of a (term, scope): the entries' seqs
  ascending, as the gaps after `first_seq` (an array of 2, 4 or 8-byte integers, whichever
  holds the largest gap), and for each the id of its shape (2 or 4 bytes). Each blob starts
  with its array's typecode.
- memory_posting_shapes: the shapes ("length c_tags c_title c_key c_body c_context"), each
  once; few, as entries' lengths and counts repeat. Never deleted, so an id always means the
  same shape.
- memory_postings_tail: postings written since the last pack, one row each. At PACK_AT of
  them they are packed: appended to their (term, scope)'s last block while its shape ids take
  fewer than BLOCK_BYTES, else into a new block; a (term, scope) reaching MERGE_AT blocks has them merged
  into one, so a term's blocks stay few and full.
- memory_term_documents: how many entries hold each term (BM25's n).
- memory_index_totals: how many entries the index holds and how many tokens they hold
  together (BM25's N and average length), and how many postings wait in the tail.
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
import sqlite3
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import accumulate, groupby, islice, pairwise

from agentscript.memory.store import BM25_B, BM25_K1, scope_hash

PACK_AT = 20_000
BLOCK_BYTES = 8_192
MERGE_AT = 8

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS memory_postings (
        term TEXT NOT NULL,
        scope_key INTEGER NOT NULL,
        first_seq INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        seqs BLOB NOT NULL,
        shapes BLOB NOT NULL,
        PRIMARY KEY (term, scope_key, first_seq)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS memory_posting_shapes (
        id INTEGER PRIMARY KEY,
        shape TEXT NOT NULL UNIQUE
    )""",
    """CREATE TABLE IF NOT EXISTS memory_postings_tail (
        term TEXT NOT NULL,
        scope_key INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        shape INTEGER NOT NULL,
        PRIMARY KEY (term, scope_key, seq)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS memory_term_documents (
        term TEXT PRIMARY KEY,
        documents INTEGER NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS memory_index_totals (
        only_row INTEGER PRIMARY KEY CHECK (only_row = 1),
        documents INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        tail INTEGER NOT NULL
    )""",
    "INSERT OR IGNORE INTO memory_index_totals VALUES (1, 0, 0, 0)",
)
# Emptied by a rebuild; the shapes stay, so their ids keep their meaning.
_TABLES = ("memory_postings", "memory_postings_tail", "memory_term_documents")
# The typecodes a block's arrays use, each with the bound of what it holds, smallest first.
_CODES = {
    "H": 2**16,
    next(code for code in "IL" if array(code).itemsize == 4): 2**32,
    "q": 2**63,
}

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


class DamagedIndex(sqlite3.DatabaseError):
    """A block of postings that does not decode, or names a shape the file does not hold. A
    database error, so the store reports it as one (naming the file) rather than a traceback;
    `SqliteStore.rebuild_index` repairs it."""


def add(connection: sqlite3.Connection, entries: Iterable[IndexedEntry]) -> None:
    """Index `entries` (inside the caller's write transaction): their postings go to the
    tail, packed into blocks once enough wait there. One call for many entries costs a few
    statements, not a few per entry."""
    rows: list[tuple[str, int, int, str]] = []
    holding: dict[str, int] = {}
    documents = tokens = 0
    for entry in entries:
        key = scope_hash(entry.scope)
        prefix = f"{entry.length} "
        documents += 1
        tokens += entry.length
        for term, counts in entry.counts.items():
            rows.append((term, key, entry.seq, prefix + " ".join(map(str, counts))))
            holding[term] = holding.get(term, 0) + 1
    if not documents:
        return
    ids = _shape_ids(connection, {row[3] for row in rows})
    connection.executemany(
        "INSERT INTO memory_postings_tail (term, scope_key, seq, shape) VALUES (?, ?, ?, ?)",
        [(term, key, seq, ids[shape]) for term, key, seq, shape in rows],
    )
    connection.executemany(
        "INSERT INTO memory_term_documents (term, documents) VALUES (?, ?) "
        "ON CONFLICT (term) DO UPDATE SET documents = documents + excluded.documents",
        holding.items(),
    )
    waiting = connection.execute(
        "UPDATE memory_index_totals SET documents = documents + ?, tokens = tokens + ?, "
        "tail = tail + ? RETURNING tail",
        (documents, tokens, len(rows)),
    ).fetchone()[0]
    if waiting >= PACK_AT:
        pack(connection)


def remove(connection: sqlite3.Connection, entries: Iterable[IndexedEntry]) -> None:
    """Take `entries` out of the index (inside the caller's write transaction), given the
    tokens they were indexed with."""
    gone: dict[str, int] = {}
    documents = tokens = from_tail = 0
    for entry in entries:
        key = scope_hash(entry.scope)
        documents += 1
        tokens += entry.length
        for term in entry.counts:
            deleted = connection.execute(
                "DELETE FROM memory_postings_tail WHERE term = ? AND scope_key = ? AND seq = ?",
                (term, key, entry.seq),
            ).rowcount
            if deleted or _remove_from_blocks(connection, term, key, entry.seq):
                from_tail += deleted
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
        "tail = tail - ?",
        (documents, tokens, from_tail),
    )


def clear(connection: sqlite3.Connection) -> None:
    """Empty the index (before a rebuild)."""
    for table in _TABLES:
        connection.execute(f"DELETE FROM {table}")
    connection.execute("UPDATE memory_index_totals SET documents = 0, tokens = 0, tail = 0")


def pack(connection: sqlite3.Connection) -> None:
    """Move the tail's postings into blocks (see the module's docstring)."""
    rows = connection.execute(
        "SELECT term, scope_key, seq, shape FROM memory_postings_tail ORDER BY term, scope_key, seq"
    ).fetchall()
    for (term, key), group in groupby(rows, key=lambda row: (row[0], row[1])):
        fresh = [(seq, shape) for _, _, seq, shape in group]
        blocks = connection.execute(
            "SELECT first_seq, length(shapes) FROM memory_postings "
            "WHERE term = ? AND scope_key = ? ORDER BY first_seq",
            (term, key),
        ).fetchall()
        if len(blocks) + 1 >= MERGE_AT:
            joined = [first for first, _ in blocks]
        elif blocks and blocks[-1][1] < BLOCK_BYTES:
            joined = [blocks[-1][0]]
        else:
            joined = []
        for first in joined:
            fresh.extend(_take_block(connection, term, key, first))
        fresh.sort()
        _write_block(connection, term, key, fresh)
    connection.execute("DELETE FROM memory_postings_tail")
    connection.execute("UPDATE memory_index_totals SET tail = 0")


def totals(connection: sqlite3.Connection) -> Totals:
    documents, tokens, tail = connection.execute(
        "SELECT documents, tokens, tail FROM memory_index_totals"
    ).fetchone()
    return Totals(int(documents), int(tokens), int(tail))


def documents_holding(connection: sqlite3.Connection, terms: Sequence[str]) -> dict[str, int]:
    """How many entries hold each of `terms` (0 for a term none holds)."""
    wanted = list(dict.fromkeys(terms))
    found = dict(
        connection.execute(
            "SELECT term, documents FROM memory_term_documents WHERE term IN "
            f"({', '.join('?' * len(wanted))})",
            wanted,
        ).fetchall()
    )
    return {term: int(found.get(term, 0)) for term in wanted}


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
        self.held: dict[str, int] = {}  # entries holding each term, by its postings
        self.entry_lengths: dict[int, int] = {}  # seq -> length, by its postings' shapes
        self.damaged_terms: set[str] = set()
        self.damaged = self.doubled = 0
        tail: dict[tuple[str, int], list[Posting]] = {}
        self.waiting = 0
        for term, key, seq, shape in connection.execute(
            "SELECT term, scope_key, seq, shape FROM memory_postings_tail"
        ):
            tail.setdefault((term, key), []).append((seq, shape))
            self.waiting += 1
        rows = connection.execute(
            "SELECT term, scope_key, first_seq, last_seq, CAST(seqs AS BLOB), CAST(shapes AS BLOB) "
            "FROM memory_postings "
            "ORDER BY term, scope_key, first_seq"
        )
        for (term, key), group in groupby(rows, key=lambda row: (row[0], row[1])):
            seqs: list[int] = []
            shape_ids: list[int] = []
            for _, _, first, last, seq_blob, shape_blob in group:
                block = self._block(first, last, seq_blob, shape_blob)
                if block is None:
                    self.damaged_terms.add(term)
                    continue
                seqs.extend(block[0])
                shape_ids.extend(block[1])
            waiting = tail.pop((term, key), [])
            self._postings(term, seqs + [seq for seq, _ in waiting], shape_ids, waiting)
        for (term, _), waiting in tail.items():
            self._postings(term, [seq for seq, _ in waiting], [], waiting)

    def _block(
        self, first: int, last: int, seqs: bytes, shapes: bytes
    ) -> tuple[list[int], array[int]] | None:
        """A block's postings, or None (counted as damaged) for one that does not decode,
        whose seqs do not end at its last_seq, or that names an unknown shape."""
        try:
            decoded, shape_ids = _decode(first, seqs, shapes)
        except DamagedIndex:
            decoded, shape_ids = [], array("H")
        known = bool(shape_ids) and min(shape_ids) > 0 and max(shape_ids) < len(self.lengths)
        if not known or decoded[-1] != last:
            self.damaged += 1
            return None
        return decoded, shape_ids

    def _postings(
        self, term: str, seqs: list[int], shape_ids: list[int], waiting: list[Posting]
    ) -> None:
        """Count one (term, scope)'s postings: `seqs` (the blocks' then the tail's), the
        blocks' `shape_ids`, the tail's `waiting` postings."""
        tail_ids = [shape for _, shape in waiting]
        if any(not 0 < shape < len(self.lengths) for shape in tail_ids):
            self.damaged += 1
            self.damaged_terms.add(term)
            return
        distinct = len(set(seqs))
        if distinct != len(seqs):
            self.doubled += 1
        self.held[term] = self.held.get(term, 0) + distinct
        self.entry_lengths.update(
            zip(seqs, map(self.lengths.__getitem__, shape_ids + tail_ids), strict=True)
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


@contextmanager
def read_snapshot(connection: sqlite3.Connection) -> Iterator[bool]:
    """Run the reads inside one read transaction, begun here unless the caller is in a
    transaction already (whose own, maybe uncommitted, state the reads then see). Yields
    whether what is read is committed data."""
    if connection.in_transaction:
        yield False
        return
    connection.execute("BEGIN")
    try:
        yield True
    finally:
        connection.execute("COMMIT")


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
    """How a store reads its index: the postings of a term and the store's ShapeBook. One per
    store, kept across calls, so that what it learns of the file (the shapes) is read once."""

    def __init__(self) -> None:
        self.shapes = ShapeBook()

    def postings(
        self, connection: sqlite3.Connection, term: str, keys: Sequence[int]
    ) -> TermPostings:
        """The postings of `term` in the scopes `keys` (see TermPostings)."""
        marks = ", ".join("?" * len(keys))
        seqs: list[int] = []
        shape_ids: list[int] = []
        try:
            for row in connection.execute(
                f"SELECT first_seq, seqs, shapes FROM memory_postings "
                f"WHERE term = ? AND scope_key IN ({marks})",
                (term, *keys),
            ):
                block_seqs, block_shapes = _decode(*row)
                seqs.extend(block_seqs)
                shape_ids.extend(block_shapes)
        except DamagedIndex as error:
            raise _damaged(term) from error
        # Blocks may overlap (a re-indexed entry packed into a later block), or come from
        # several scopes.
        if any(map(operator.gt, seqs, islice(seqs, 1, None))):
            pairs = sorted(zip(seqs, shape_ids, strict=True))
            seqs, shape_ids = [seq for seq, _ in pairs], [shape for _, shape in pairs]
        tail = dict(
            connection.execute(
                "SELECT seq, shape FROM memory_postings_tail "
                f"WHERE term = ? AND scope_key IN ({marks})",
                (term, *keys),
            ).fetchall()
        )
        return TermPostings(seqs, shape_ids, tail)


def _damaged(term: str) -> DamagedIndex:
    return DamagedIndex(
        f"the text index has a damaged block of postings of {term!r} "
        "(SqliteStore.rebuild_index rebuilds it)"
    )


# -------------------------------------------------------------------------------- blocks


def _shape_ids(connection: sqlite3.Connection, shapes: set[str]) -> dict[str, int]:
    """The ids of `shapes`, adding those the file does not know yet."""
    listed = json.dumps(sorted(shapes))
    connection.execute(
        "INSERT OR IGNORE INTO memory_posting_shapes (shape) SELECT value FROM json_each(?)",
        (listed,),
    )
    return dict(
        connection.execute(
            "SELECT shape, id FROM memory_posting_shapes WHERE shape IN "
            "(SELECT value FROM json_each(?))",
            (listed,),
        ).fetchall()
    )


def _write_block(
    connection: sqlite3.Connection, term: str, key: int, postings: list[Posting]
) -> None:
    """Store `postings` (seq ascending) as one block."""
    if not postings:
        return
    seqs = [seq for seq, _ in postings]
    connection.execute(
        "INSERT INTO memory_postings (term, scope_key, first_seq, last_seq, seqs, shapes) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (
            term,
            key,
            seqs[0],
            seqs[-1],
            _packed([later - earlier for earlier, later in pairwise(seqs)]),
            _packed([shape for _, shape in postings]),
        ),
    )


def _take_block(connection: sqlite3.Connection, term: str, key: int, first: int) -> list[Posting]:
    """The postings of one block, which is deleted."""
    row = connection.execute(
        "DELETE FROM memory_postings WHERE term = ? AND scope_key = ? AND first_seq = ? "
        "RETURNING first_seq, seqs, shapes",
        (term, key, first),
    ).fetchone()
    seqs, shape_ids = _decode(*row)
    return list(zip(seqs, shape_ids, strict=True))


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
            kept = _take_block(connection, term, key, first)
            del kept[at]
            _write_block(connection, term, key, kept)
            return True
    return False


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
