"""The storage contract of the memory service: what any backend (SQLite, PostgreSQL) must do.

A store keeps Entry values and answers questions about them; it never decides anything (which
entry supersedes or merges with which is the service's job). Four rules bind every store:

1. Scope is part of every question. Each read takes an EntryFilter whose `scopes` is required
   and non-empty, each write names the entry's scope, and the store puts the scopes in the query
   it sends to its database. No result is ever filtered by scope after the fact.
2. `transaction()` is the only way to write. Its body runs serialised against every other
   writer of the same database, in any process, and sees the latest committed state; it commits
   durably (the data survives a crash and a power loss) on a normal exit and rolls back on an
   exception. The service reads and decides inside it, so dedup decisions cannot race.
3. Constraints that the service relies on are enforced by the store, and a violation raises
   StoreConflict: one id per entry, at most one *active* entry per (scope, key), at most one
   active summary per (scope, level, bucket).
4. Text search ranks by BM25 over the analysed terms of the weighted fields (`index_terms`),
   all produced by the store's Analyzer; higher scores are better and always positive. An index
   built with another analyser (see `Analyzer.signature`) is rebuilt before use.

A store keeps, as it writes, what recall and the cap need without scanning: the active entries
of each scope (`StoreTransaction.active_entries`, exact under concurrent writers because it is
kept inside the serialised transaction), the entries holding each term (`term_documents`), and
the order in which episodic entries of one source session were written (the context of one
written without any: LINKED_CONTEXT_TURNS).
accessed_at is bookkeeping written behind the reads (`PendingTouches`), so a recall is a read.

A store also caches the vectors semantic re-ranking computes (semantic.py): derived data like
the text index, keyed by entry and embedding model, with the digest of the text embedded. A
vector is deleted with its entry and when its entry's text changes; it is never exported.
"""

from __future__ import annotations

import hashlib
import json
import string
import struct
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, NamedTuple, Protocol, cast

from agentscript.memory.entries import Entry, Kind, Source, require_storable
from agentscript.memory.errors import CONFLICT, MemoryServiceError
from agentscript.memory.text import Analyzer
from agentscript.memory.timeline import Level, bucket_start_keys

# How many entries before an episodic entry in its source session are indexed as its context
# when it has none of its own: what a host writing plain turns leaves out (recall.py).
LINKED_CONTEXT_TURNS = 2
# BM25's constants, FTS5's own (which the SQLite store uses and the PostgreSQL store computes).
BM25_K1 = 1.2
BM25_B = 0.75
# FTS5's bm25() (ext/fts5/fts5_aux.c): the IDF used when log() is not positive.
BM25_MIN_IDF = 1e-6
# The fields a store indexes for text search, in a fixed order every store uses.
INDEXED_FIELDS = ("tags", "title", "key", "body", "context")
# Orders a selection can be sorted by, always newest first unless `descending` is False; ties
# are broken by id so every listing is deterministic.
Order = Literal["updated", "event", "created"]
# The dimensions `tally` can count by: plain columns, or an entry's bucket at a level (the
# bucket holding its event day, or, for a summary, holding its bucket's first day).
Dimension = Literal[
    "scope", "kind", "level", "archived", "title_norm", "day", "week", "month", "year"
]


class StoreConflict(MemoryServiceError):
    """A write would break a store constraint (a second active entry for a key or a bucket)."""

    def __init__(self, message: str) -> None:
        super().__init__(CONFLICT, message)


@dataclass(frozen=True, slots=True)
class EntryFilter:
    """Which entries an operation concerns. Every field narrows; `scopes` is mandatory.

    `levels` may hold None for ordinary entries; `keyed` True/False keeps entries with/without
    a key; `keys` and `title_norms` keep entries with any of these keys or normalised titles
    (a batch's lookups); `bucket` is (level, key): entries whose bucket
    at that level is `key`; `since`/`until` bound event_time as a half-open range of stored
    timestamps; `archived` False means active only, True archived only, None both.
    """

    scopes: tuple[str, ...]
    ids: tuple[str, ...] | None = None
    kinds: tuple[Kind, ...] | None = None
    levels: tuple[Level | None, ...] | None = None
    tags: tuple[str, ...] = ()
    key: str | None = None
    keyed: bool | None = None
    keys: tuple[str, ...] | None = None
    title_norm: str | None = None
    title_norms: tuple[str, ...] | None = None
    since: str | None = None
    until: str | None = None
    bucket: tuple[Level, str] | None = None
    archived: bool | None = False

    def __post_init__(self) -> None:
        if not self.scopes or not all(isinstance(scope, str) and scope for scope in self.scopes):
            raise ValueError("an EntryFilter needs at least one scope: scope is never optional")


@dataclass(frozen=True, slots=True)
class FieldWeights:
    """How much a term hit counts in each indexed field (tag > title > key > body > context)."""

    tags: float = 4.0
    title: float = 2.0
    key: float = 2.0
    body: float = 1.0
    context: float = 0.35

    def as_tuple(self) -> tuple[float, ...]:
        return tuple(getattr(self, name) for name in INDEXED_FIELDS)


@dataclass(frozen=True, slots=True)
class TextQuery:
    """Terms (already analysed) of which an entry must contain at least one, and the weights."""

    terms: tuple[str, ...]
    weights: FieldWeights = FieldWeights()


class Match(NamedTuple):
    """One search hit, with what ranking needs and nothing more (entries are loaded for the
    final results only): the BM25 score, the source session, the moment recency counts from
    (event_time for episodic entries and summaries, which happened; updated_at for facts and
    knowledge, which are as fresh as their last confirmation), the bucket, and accessed_at,
    which breaks ties between equal scores (the most recently recalled first). A named tuple:
    a search builds one for each of the pool's hundred candidates, and a frozen dataclass
    costs three times as much to build."""

    id: str
    score: float
    session: str | None
    recency: int  # microseconds since the epoch (timeline.moment_microseconds): no text to parse
    bucket: str
    accessed: str
    seq: int  # the entry's row in its store, which `entries_at` loads it by


@dataclass(frozen=True, slots=True)
class TermStatistics:
    """How many entries the text index holds (all scopes, archived too: what BM25 counts), and
    how many of them hold each asked term (0 for a term none holds)."""

    documents: int
    holding: dict[str, int]


@dataclass(frozen=True, slots=True)
class ScopeCount:
    scope: str
    active: int
    archived: int


# FTS5's `ascii` tokenizer folds A-Z to a-z (query terms are folded alike).
ASCII_FOLD = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def postings(
    entry: Entry, analyzer: Analyzer, context: str | None = None
) -> tuple[dict[str, list[int]], int]:
    """Each token of `entry` with its count per indexed field, and the entry's length as
    FTS5 counted it when the SQLite store used FTS5: every token, plus the one scope term it
    indexed with each entry (kept, so scores stay what they were and alike in every store).
    `context` stands in for the entry's own (as in `index_terms`). An analysed term is
    exactly one token of FTS5's `ascii` tokenizer (it holds only a-z, 0-9 and non-ASCII
    characters, text.py), so the terms are the tokens."""
    terms = index_terms(entry, analyzer, context)
    counts: dict[str, list[int]] = {}
    length = 1
    for position, name in enumerate(INDEXED_FIELDS):
        tokens = terms[name]
        length += len(tokens)
        for token in tokens:
            found = counts.get(token)
            if found is None:
                found = counts[token] = [0] * len(INDEXED_FIELDS)
            found[position] += 1
    return counts, length


def stable_int64(text: str) -> int:
    """A stable signed 64-bit number for `text` (a bigint in PostgreSQL, an INTEGER in SQLite)."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big", signed=True)


@lru_cache(maxsize=1024)
def scope_hash(scope: str) -> int:
    """The 64-bit key standing for a scope in the postings: the index lookup is narrowed to
    the scopes asked for, and the entries' own scope column is checked as well."""
    return stable_int64(f"scope:{scope}")


def linked_context(entry: Entry, before: Sequence[str]) -> str:
    """The context an entry is indexed with: its own; or, for an episodic entry of a source
    session written without one, the bodies of the entries before it in that session
    (`before`, nearest first, at most LINKED_CONTEXT_TURNS of them), oldest first."""
    if entry.context or entry.kind != "episodic" or entry.source.session is None:
        return entry.context
    return "\n".join(reversed(before[:LINKED_CONTEXT_TURNS]))


def bodies_before(start: int | None, chain: Mapping[int, tuple[int | None, str]]) -> list[str]:
    """The bodies of the entry `start` and those before it in its session, nearest first, at
    most LINKED_CONTEXT_TURNS, from `chain` (seq → (previous seq, body)): for a whole-store
    pass (rebuild, verify) that holds the chain in memory."""
    found: list[str] = []
    while start is not None and start in chain and len(found) < LINKED_CONTEXT_TURNS:
        start, body = chain[start]
        found.append(body)
    return found


def index_terms(
    entry: Entry, analyzer: Analyzer, context: str | None = None
) -> dict[str, list[str]]:
    """The analysed terms of each indexed field: what a store must index, and nothing else.
    `context` stands in for the entry's own (its linked context, see `linked_context`)."""
    return {name: analyzer.terms(text) for name, text in indexed_fields(entry, context)}


def indexed_fields(entry: Entry, context: str | None = None) -> Iterator[tuple[str, str]]:
    """Each indexed field's text, by name, as `index_terms` analyses it; one at a time, so a
    reader that needs only some terms (relevance.py) can stop once it has found them."""
    yield "tags", " ".join(entry.tags)
    yield "title", entry.title
    yield "key", entry.key or ""
    yield "body", entry.body
    yield "context", entry.context if context is None else context


# The columns every store selects to rebuild an entry, in this order (see `entry_from_row`).
ENTRY_COLUMNS = (
    "id",
    "kind",
    "scope",
    "key",
    "title",
    "body",
    "context",
    "tags",
    "created_at",
    "updated_at",
    "accessed_at",
    "event_time",
    "level",
    "bucket",
    "archived",
    "archive_reason",
    "source",
    "archive_ref",
    "reinforce_count",
    "superseded_by",
)


def entry_from_row(row: Sequence[Any]) -> Entry:
    """The entry of one row of `ENTRY_COLUMNS` as a driver that decodes the structured columns
    (tags, source, archive_ref) returns it (PostgreSQL's; SQLite's store reads its own forms,
    sqlite_store._entry_of)."""
    values = dict(zip(ENTRY_COLUMNS, row, strict=True))
    return Entry(
        id=values["id"],
        kind=cast(Kind, values["kind"]),
        scope=values["scope"],
        key=values["key"],
        title=values["title"],
        body=values["body"],
        context=values["context"],
        tags=tuple(values["tags"]),
        created_at=values["created_at"],
        updated_at=values["updated_at"],
        accessed_at=values["accessed_at"],
        event_time=values["event_time"],
        level=cast("Level | None", values["level"]),
        bucket=values["bucket"],
        archived=bool(values["archived"]),
        archive_reason=values["archive_reason"],
        source=Source(**values["source"]),
        archive_ref=tuple(values["archive_ref"]),
        reinforce_count=int(values["reinforce_count"]),
        superseded_by=values["superseded_by"],
    )


def entry_row(entry: Entry, encode_list: Callable[[list[str]], Any]) -> dict[str, Any]:
    """The column values of one entry, the inverse of `entry_from_row` plus the derived
    columns (normalised title, bucket keys, session) the stores filter on. `encode_list`
    stores the list columns (tags, archive_ref): JSON text, or a driver's array. An entry
    that cannot be stored as UTF-8 (a lone surrogate) is refused here, for every store."""
    require_storable(entry)
    keys = bucket_start_keys(entry.bucket)
    return {
        "id": entry.id,
        "kind": entry.kind,
        "scope": entry.scope,
        "key": entry.key,
        "title": entry.title,
        "body": entry.body,
        "context": entry.context,
        "tags": encode_list(list(entry.tags)),
        "created_at": entry.created_at,
        "updated_at": entry.updated_at,
        "accessed_at": entry.accessed_at,
        "event_time": entry.event_time,
        "level": entry.level,
        "bucket": entry.bucket,
        "archived": int(entry.archived),
        "archive_reason": entry.archive_reason,
        "source": json.dumps(entry.source.to_dict(), ensure_ascii=False),
        "archive_ref": encode_list(list(entry.archive_ref)),
        "reinforce_count": entry.reinforce_count,
        "superseded_by": entry.superseded_by,
        "title_norm": entry.title_norm,
        "day": keys["day"],
        "week": keys["week"],
        "month": keys["month"],
        "year": keys["year"],
        "session": entry.source.session,
    }


def indexed_text(entry: Entry) -> tuple[object, ...]:
    """What the full-text index is built from: a change here means re-indexing the entry."""
    return (entry.tags, entry.title, entry.key, entry.body, entry.context)


def json_list(values: list[str]) -> str:
    """A list column as JSON text (SQLite)."""
    return json.dumps(values, ensure_ascii=False)


class StoreReader(Protocol):
    """Reads, available on a store and inside a transaction."""

    def select(
        self,
        where: EntryFilter,
        *,
        order: Order = "updated",
        descending: bool = True,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Entry]:
        """The matching entries in `order`, ties broken by id."""
        ...

    def count(self, where: EntryFilter) -> int: ...

    def tally(
        self, where: EntryFilter, by: tuple[Dimension, ...], *, min_count: int = 1
    ) -> list[tuple[tuple[str | None, ...], int]]:
        """Counts of matching entries grouped by `by`, groups with at least `min_count`
        entries, sorted by the group values descending (newest bucket first). `archived`
        values are "1" and "0"."""
        ...


class StoreTransaction(StoreReader, Protocol):
    """One serialised, durable write; see rule 2 of the module docstring."""

    def insert(self, entry: Entry) -> None:
        """Add a new entry; StoreConflict when its id, active key or active summary bucket
        is taken."""
        ...

    def replace(self, entry: Entry) -> None:
        """Overwrite the stored entry with the same id and scope (it must exist) and its
        index terms; StoreConflict as for insert."""
        ...

    def delete(self, scope: str, ids: tuple[str, ...]) -> int:
        """Remove entries of `scope` from the table and from every index; how many went."""
        ...

    def active_entries(self, scope: str) -> int:
        """How many active entries `scope` holds, as of this transaction's writes: a count
        kept as entries are written, never a scan."""
        ...

    def active_with_key(self, scope: str, key: str) -> Entry | None:
        """The active entry of `scope` with `key`, if any (there is at most one): what every
        remember with a key decides on, so a store answers it by its key index directly."""
        ...


class MemoryStore(StoreReader, Protocol):
    """A database of entries. Safe to share between threads; one per process and file."""

    analyzer: Analyzer

    def transaction(self) -> AbstractContextManager[StoreTransaction]: ...

    def search(self, query: TextQuery, where: EntryFilter, limit: int) -> list[Match]:
        """The best `limit` entries under `where` with at least one term, best first (BM25,
        rule 4); equal scores by accessed_at, the most recent first, then by id."""
        ...

    def count_matches(self, query: TextQuery, where: EntryFilter) -> int:
        """How many entries under `where` hold at least one term: what `search` ranks before
        its limit (recall's `total`)."""
        ...

    def entries_at(self, where: EntryFilter, matches: Sequence[Match]) -> list[Entry]:
        """The entries of these matches (of this store's `search`) that still pass `where`,
        in no particular order: what ranking loads of its best matches, looked up by row
        rather than by id and not sorted. A row that another writer has since given to
        another entry is left out, as a deleted one is."""
        ...

    def term_documents(self, terms: Sequence[str]) -> TermStatistics:
        """The document frequencies BM25 uses for these (analysed) terms; kept as entries are
        indexed, so this reads one row per term."""
        ...

    def touch(self, scopes: tuple[str, ...], ids: tuple[str, ...], moment: str) -> None:
        """Set accessed_at of these entries. Bookkeeping: the store may keep it in memory and
        write it later (with its next write, after a few seconds, on close), so a recall does
        not write; reads of this store see it at once. The latest touches may be lost in a
        crash or a power cut, never corrupted."""
        ...

    def vectors(
        self, scopes: tuple[str, ...], model: str, digests: Mapping[str, str]
    ) -> dict[str, tuple[float, ...]]:
        """The cached vectors of `model` for the entries of `digests` (id → digest of the
        text to embed) in `scopes`, where the digest still matches."""
        ...

    def save_vectors(
        self,
        scopes: tuple[str, ...],
        model: str,
        vectors: Mapping[str, tuple[str, Sequence[float]]],
    ) -> None:
        """Cache vectors of `model` (id → (digest, vector)) for entries of `scopes`; entries
        that are gone are skipped. Bookkeeping, as durable as `touch`."""
        ...

    def scopes(self) -> list[ScopeCount]:
        """Every scope with its entry counts. The one call without a scope: it returns
        names and numbers, never entries, for administration (stats of all scopes)."""
        ...

    def verify(self) -> list[str]:
        """Problems of the store itself (an index that disagrees with the table), as
        sentences; empty when sound."""
        ...

    def scrub(self) -> None:
        """After a purge: make what was deleted unrecoverable from the store's files as far
        as the store can (see each store's note)."""
        ...

    def export(self, scopes: tuple[str, ...]) -> Iterator[Entry]:
        """Every entry of these scopes, oldest first, from one consistent snapshot."""
        ...

    def close(self) -> None: ...


class PendingTouches:
    """accessed_at moments recorded by recalls and not written yet. A store drains them into
    its next write transaction (where they cost no commit of their own), or writes them alone
    at the first touch after the oldest has waited `delay` seconds or once `most` ids wait,
    and on close; until then
    `overlay` shows them in what the store reads. Not thread-safe: the store's lock guards it."""

    def __init__(self, delay: float = 5.0, most: int = 2000) -> None:
        self.delay = delay
        self.most = most
        self._moments: dict[str, tuple[tuple[str, ...], str]] = {}
        self._since: float | None = None

    def record(self, scopes: tuple[str, ...], ids: tuple[str, ...], moment: str) -> None:
        for identifier in ids:
            known = self._moments.get(identifier)
            if known is None or known[1] < moment:
                self._moments[identifier] = (scopes, moment)
        if self._since is None:
            self._since = time.monotonic()

    def due(self) -> bool:
        return bool(self._moments) and (
            len(self._moments) >= self.most or time.monotonic() - (self._since or 0.0) >= self.delay
        )

    def drain(self) -> dict[tuple[tuple[str, ...], str], list[str]]:
        """The pending touches, grouped as (scopes, moment) → ids, and forget them."""
        groups: dict[tuple[tuple[str, ...], str], list[str]] = {}
        for identifier, group in self._moments.items():
            groups.setdefault(group, []).append(identifier)
        self._moments = {}
        self._since = None
        return groups

    def restore(self, groups: dict[tuple[tuple[str, ...], str], list[str]]) -> None:
        """Put back what a failed write transaction could not write."""
        for (scopes, moment), ids in groups.items():
            self.record(scopes, tuple(ids), moment)

    def accessed(self, identifier: str, stored: str) -> str:
        """The accessed_at of an entry whose stored value is `stored`, pending touches seen."""
        known = self._moments.get(identifier)
        return known[1] if known is not None and known[1] > stored else stored

    def overlay(self, entry: Entry) -> Entry:
        known = self._moments.get(entry.id)
        if known is None or entry.scope not in known[0] or known[1] <= entry.accessed_at:
            return entry
        return entry.evolve(accessed_at=known[1])


def pack_vector(vector: Sequence[float]) -> bytes:
    """A vector as stored: little-endian float32, the same bytes on every machine."""
    return struct.pack(f"<{len(vector)}f", *vector)


def unpack_vector(blob: bytes) -> tuple[float, ...]:
    return struct.unpack(f"<{len(blob) // 4}f", blob)


def matching_vectors(
    rows: Iterable[tuple[str, str, bytes]], digests: Mapping[str, str]
) -> dict[str, tuple[float, ...]]:
    """The (id, digest, stored vector) rows whose digest is still the one in `digests`."""
    return {
        identifier: unpack_vector(bytes(blob))
        for identifier, digest, blob in rows
        if digests[identifier] == digest
    }
