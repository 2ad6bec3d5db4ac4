"""The default store: one SQLite file (`~/.agentscript/memory.db` unless told otherwise).

Entries live in `memory_entries`, their values in the small forms of sqlite_values.py (times
as integers, UUIDs as bytes, buckets as days); their analysed terms in the text index of
sqlite_postings.py: postings per (term, scope) packed in blocks, ranked by BM25 exactly as
FTS5's bm25() ranks them (which schema 2 used, and which the PostgreSQL store computes too), at
a fraction of FTS5's cost per hit. The index holds no text: the entries do, and an entry is
unindexed by recomputing the tokens it was indexed with from the stored entry by the same
Analyzer, whose signature the file records. A search reads only the asked scopes' postings,
scores every entry they hold, and loads from `memory_entries` just the best few (and checks the
filter on them).

Kept as the entries are written, so no write scans a scope: the active entries per scope
(`memory_scope_counts`, changed by every insert, replace and delete of the writing transaction
and written once at its end, so the cap on a scope stays exact however many processes write;
`verify` compares them with the entries, `rebuild_index` recounts them), and the last episodic
entry of each (scope, source session) (`memory_session_tails`): an episodic entry of a session
links to the one written before it (`previous_seq`, `next_seq`), which recall uses for
neighbour context. The entries holding each term (BM25's document frequency, and recall.py's
pruning) are kept by the index. What one write transaction read or wrote of these (and the
numbers of names) the next one starts from while no other connection has committed
(sqlite_write_state.py), so a remember asks the file only for its key.

The file runs in WAL mode with `synchronous=FULL` and a long busy timeout; writers take the lock
first (`BEGIN IMMEDIATE`), so processes queue instead of failing, and an acknowledged write has
been fsynced. Only `touch` (accessed_at bookkeeping) commits with `synchronous=NORMAL`.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from itertools import compress
from pathlib import Path
from typing import Any, NoReturn, cast

import numpy as np

from agentscript.memory import sqlite_postings, sqlite_ranking
from agentscript.memory.config import DEFAULT_CACHE_BYTES
from agentscript.memory.entries import Entry, Source, require_storable, title_from_text
from agentscript.memory.errors import STORE_FAILURE, MemoryServiceError
from agentscript.memory.sqlite_values import (
    KIND_CODES,
    KIND_NAMES,
    bound_milliseconds,
    bucket_day,
    bucket_range,
    bucket_text,
    day_keys,
    id_text,
    id_text_sql,
    stamp_milliseconds,
    stamp_text,
    stored_id,
)
from agentscript.memory.sqlite_write_state import WriteState
from agentscript.memory.store import (
    ENTRY_COLUMNS,
    LINKED_CONTEXT_TURNS,
    Dimension,
    EntryFilter,
    Match,
    Order,
    PendingTouches,
    ScopeCount,
    StoreConflict,
    TermStatistics,
    TextQuery,
    bodies_before,
    indexed_text,
    json_list,
    linked_context,
    matching_vectors,
    pack_vector,
    postings,
)
from agentscript.memory.text import DEFAULT_ANALYZER, Analyzer, normalise_title
from agentscript.memory.timeline import Level
from agentscript.providers.storage.sqlite_files import connect, execute_rows, write_transaction

SCHEMA_VERSION = "6"
# Schema 1 had a text index that stored its own copy of the terms and none of the tables kept
# as entries are written; schema 2 a contentless FTS5 index; schema 3 (the postings of
# sqlite_postings.py) stored every title (even one taken from the body) and its normalised
# form, indexed that text, and repeated each scope's name in every index; schema 4 stored
# times, ids, kinds and session names as text, and each entry's bucket keys at every level.
# Schemas 3 and 4 kept the postings' tail as one row per term and entry and counted every
# term's entries as they were written. Schema 5 kept every block of postings in one WITHOUT
# ROWID table, large ones spilling into overflow pages their last partly empty, and each
# posting's shape id in two bytes. All are migrated in place on first use (from 1 to 4 the
# text index is rebuilt from the entries, from 5 its blocks are moved).
_MIGRATED_VERSIONS = ("1", "2", "3", "4", "5")
_BEFORE_4 = ("1", "2", "3")
_FTS5_VERSIONS = ("1", "2")
_POSTINGS_BEFORE_5 = ("3", "4")
_ENTRIES_BEFORE_5 = ("1", "2", "3", "4")

# What the entries table holds beyond an entry's fields, to keep the file small: `title` is
# NULL when it is the one the body gives (title_from_text), `source` is NULL when it holds no
# more than `session`, and instead of the normalised title the table keeps its 64-bit hash
# (`title_hash`), which is all the index of merge candidates needs; the normalised title itself
# is computed from the stored text where a filter needs it (`memory_title_norm`). So a change
# to what `title_from_text` makes of a body would change stored titles: it needs a schema
# version whose upgrade stores the old titles first.
_TITLE_HASH = "memory_title_hash"
_TITLE_NORM = "memory_title_norm"
# The entries table names each scope and each source session by a number (`memory_scopes`,
# `memory_sessions`): a workspace id is a path, which every index of the table would otherwise
# repeat for every entry, and a session's name is repeated by each of its turns. The other
# values take the smaller forms of sqlite_values.py, and what a row can give is not stored:
# `updated_at` is NULL when it is `created_at`, `accessed_at` when it is the update time,
# `event_time` when it is `created_at`, `tags` and `archive_ref` when empty, `title_hash`
# for a keyed entry (which never merges by title).
_SCOPE_ID = "(SELECT id FROM memory_scopes WHERE name = ?)"
_SCOPE_NAME = "(SELECT name FROM memory_scopes WHERE id = {column})"
_SESSION_NAME = "(SELECT name FROM memory_sessions WHERE id = {column})"
_UPDATED = "COALESCE({p}updated_at, {p}created_at)"
_ACCESSED = "COALESCE({p}accessed_at, {p}updated_at, {p}created_at)"
_EVENT = "COALESCE({p}event_time, {p}created_at)"
_EPISODIC = KIND_CODES["episodic"]
_SUMMARY = KIND_CODES["summary"]
# What a row of the table is read as (`_entry_of`), in the order of ENTRY_COLUMNS but for the
# bucket, which is its first day and the level.
_COLUMNS = ", ".join(
    {
        "scope": _SCOPE_NAME.format(column="scope"),
        "updated_at": _UPDATED.format(p=""),
        "accessed_at": _ACCESSED.format(p=""),
        "event_time": _EVENT.format(p=""),
        "bucket": "bucket_day",
        "source": "COALESCE(source, json_object('session', "
        f"{_SESSION_NAME.format(column='session')}))",
    }.get(name, name)
    for name in ENTRY_COLUMNS
)
_COLUMN = {name: index for index, name in enumerate(ENTRY_COLUMNS)}
# The active entry of a scope (by number) with a key: every remember with a key asks it. At
# most one (the key index is unique among active entries), so no ordering; `+archived` keeps
# the planner on the key index.
_ACTIVE_WITH_KEY = (
    f"SELECT {_COLUMNS} FROM memory_entries WHERE scope = ? AND key = ? AND +archived = 0"
)
# Entries indexed per call while the index is rebuilt (bounds what one call holds in memory).
_REBUILD_BATCH = 1_000
# The entries table of schema 4, which the upgrades from older schemas copy the entries into
# before `_entries_to_5` moves them on.
_ENTRIES_TABLE_4 = """CREATE TABLE IF NOT EXISTS {name} (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        scope INTEGER NOT NULL,
        kind TEXT NOT NULL,
        key TEXT,
        title TEXT,
        title_hash INTEGER NOT NULL,
        body TEXT NOT NULL,
        context TEXT NOT NULL,
        tags TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        accessed_at TEXT NOT NULL,
        event_time TEXT NOT NULL,
        level TEXT,
        bucket TEXT NOT NULL,
        day TEXT NOT NULL,
        week TEXT NOT NULL,
        month TEXT NOT NULL,
        year TEXT NOT NULL,
        archived INTEGER NOT NULL,
        archive_reason TEXT,
        source TEXT,
        archive_ref TEXT NOT NULL,
        reinforce_count INTEGER NOT NULL,
        superseded_by TEXT,
        session TEXT,
        previous_seq INTEGER,
        next_seq INTEGER
    )"""
_ENTRIES_TABLE = """CREATE TABLE IF NOT EXISTS {name} (
        seq INTEGER PRIMARY KEY,
        id BLOB NOT NULL UNIQUE,
        scope INTEGER NOT NULL,
        kind INTEGER NOT NULL,
        key TEXT,
        title TEXT,
        title_hash INTEGER,
        body TEXT NOT NULL,
        context TEXT NOT NULL,
        tags TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER,
        accessed_at INTEGER,
        event_time INTEGER,
        level TEXT,
        bucket_day INTEGER NOT NULL,
        archived INTEGER NOT NULL,
        archive_reason TEXT,
        source TEXT,
        archive_ref TEXT,
        reinforce_count INTEGER NOT NULL,
        superseded_by TEXT,
        session INTEGER,
        previous_seq INTEGER,
        next_seq INTEGER
    )"""
_SCOPES_TABLE = """CREATE TABLE IF NOT EXISTS memory_scopes (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE
    )"""
_SESSIONS_TABLE = """CREATE TABLE IF NOT EXISTS memory_sessions (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE
    )"""
_SCHEMA = (
    _SCOPES_TABLE,
    _SESSIONS_TABLE,
    _ENTRIES_TABLE.format(name="memory_entries"),
    # Every version of a key (history), and at most one active one: an archived version's
    # third column is its own seq, an active one's is 0.
    "CREATE UNIQUE INDEX IF NOT EXISTS memory_entries_key ON memory_entries "
    "(scope, key, CASE WHEN archived = 0 THEN 0 ELSE seq END) WHERE key IS NOT NULL",
    "CREATE UNIQUE INDEX IF NOT EXISTS memory_entries_active_summary "
    f"ON memory_entries (scope, level, bucket_day) WHERE kind = {_SUMMARY} AND archived = 0",
    # Merge candidates (service.py): unkeyed entries, by kind and title.
    "CREATE INDEX IF NOT EXISTS memory_entries_title ON memory_entries "
    "(scope, kind, title_hash) WHERE key IS NULL",
    # The orderings (browse, digest, history), time windows, and a bucket's entries at any
    # level (a range of first days): timeline, compaction, stats.
    "CREATE INDEX IF NOT EXISTS memory_entries_updated "
    f"ON memory_entries (scope, archived, {_UPDATED.format(p='')})",
    "CREATE INDEX IF NOT EXISTS memory_entries_event "
    f"ON memory_entries (scope, {_EVENT.format(p='')})",
    "CREATE INDEX IF NOT EXISTS memory_entries_bucket ON memory_entries (scope, kind, bucket_day)",
    *sqlite_postings.SCHEMA,
    """CREATE TABLE IF NOT EXISTS memory_scope_counts (
        scope TEXT PRIMARY KEY,
        active INTEGER NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS memory_session_tails (
        scope TEXT NOT NULL,
        session TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (scope, session)
    ) WITHOUT ROWID""",
    "CREATE TABLE IF NOT EXISTS memory_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # Vectors of semantic re-ranking (store.py): a cache, deleted with its entry's row.
    """CREATE TABLE IF NOT EXISTS memory_vectors (
        seq INTEGER NOT NULL,
        model TEXT NOT NULL,
        digest TEXT NOT NULL,
        vector BLOB NOT NULL,
        PRIMARY KEY (seq, model)
    )""",
)
# What `tally` groups by for each dimension, and how a group's value reads (a bucket level's
# groups are first days, merged into that level's buckets).
_DIMENSIONS: dict[str, str] = {
    "scope": _SCOPE_NAME.format(column="scope"),
    "kind": "kind",
    "level": "level",
    "archived": "CAST(archived AS TEXT)",
    "title_norm": f"{_TITLE_NORM}(title, body)",
    "day": "bucket_day",
    "week": "bucket_day",
    "month": "bucket_day",
    "year": "bucket_day",
}
_ORDERS: dict[str, str] = {
    "updated": _UPDATED.format(p=""),
    "event": _EVENT.format(p=""),
    "created": "created_at",
}
# Listings break ties by id text. UUIDs (the service's ids) order as bytes as they do as text;
# once the file holds an id of another form (an import's), kept as text, which SQLite orders
# before every blob, memory_meta says so and the text of each id is computed (ten times slower
# over many ties).
_TEXT_IDS = "text_ids"
_ID_ORDER = id_text_sql("id")
# What a search hit carries (see Match), `{score}` being the score expression; `_rows_of` reads
# it.
_MATCH_COLUMNS = (
    f"e.id, {{score}} AS score, {_SESSION_NAME.format(column='e.session')}, "
    f"CASE WHEN e.kind IN ({_EPISODIC}, {_SUMMARY}) THEN {_EVENT.format(p='e.')} "
    f"ELSE {_UPDATED.format(p='e.')} END, e.level, e.bucket_day, {_ACCESSED.format(p='e.')}"
)


class SqliteStore:
    """A MemoryStore over one SQLite file, one connection per store, shared by threads one
    operation at a time. Open one store per process: a connection never crosses a fork."""

    def __init__(
        self,
        path: str | Path,
        analyzer: Analyzer = DEFAULT_ANALYZER,
        *,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        """`cache_bytes`: what the store keeps of decoded postings between recalls, at most."""
        self.path = Path(path)
        self.analyzer = analyzer
        self._lock = threading.RLock()
        self._connection: sqlite3.Connection | None = None
        self._touches = PendingTouches()
        self._index = sqlite_postings.PostingsReader(cache_bytes)
        # What the last write transaction left known (sqlite_write_state.py).
        self._write_state = WriteState()

    # ----------------------------------------------------------------------------- reads

    def select(
        self,
        where: EntryFilter,
        *,
        order: Order = "updated",
        descending: bool = True,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Entry]:
        with self._reading() as connection:
            entries = _select(connection, where, order, descending, limit, offset)
            return [self._touches.overlay(entry) for entry in entries]

    def count(self, where: EntryFilter) -> int:
        with self._reading() as connection:
            return _count(connection, where)

    def tally(
        self, where: EntryFilter, by: tuple[Dimension, ...], *, min_count: int = 1
    ) -> list[tuple[tuple[str | None, ...], int]]:
        with self._reading() as connection:
            return _tally(connection, where, by, min_count)

    def search(self, query: TextQuery, where: EntryFilter, limit: int) -> list[Match]:
        terms = _searchable(query)
        if not terms or limit <= 0:
            return []
        weights = query.weights.as_tuple()
        wanted = limit
        with self._reading() as connection:
            while True:
                found = sqlite_ranking.best(
                    connection, terms, where.scopes, weights, self._index, wanted=wanted
                )
                best = _best(connection, found.scores, where, limit)
                # The filter may turn some of the best away: then look further down.
                if len(best) >= limit or found.every:
                    break
                wanted *= 4
        return [_match(row, found.scores[row[1]], self._touches) for row in best]

    def count_matches(self, query: TextQuery, where: EntryFilter) -> int:
        terms = _searchable(query)
        if not terms:
            return 0
        with self._reading() as connection:
            seqs = sqlite_ranking.matched(connection, terms, where.scopes, self._index)
            return _count_among(connection, seqs, where)

    def entries_at(self, where: EntryFilter, matches: Sequence[Match]) -> list[Entry]:
        with self._reading() as connection:
            entries = _entries_at(connection, where, matches)
            return [self._touches.overlay(entry) for entry in entries]

    def term_documents(self, terms: Sequence[str]) -> TermStatistics:
        with self._reading() as connection, sqlite_postings.read_snapshot(connection):
            holding = sqlite_postings.documents_holding(connection, terms, self._index)
            return TermStatistics(sqlite_postings.totals(connection).documents, holding)

    def scopes(self) -> list[ScopeCount]:
        with self._reading() as connection:
            rows = connection.execute(
                "SELECT s.name, SUM(e.archived = 0), SUM(e.archived = 1) "
                "FROM memory_entries AS e JOIN memory_scopes AS s ON s.id = e.scope "
                "GROUP BY e.scope ORDER BY s.name"
            ).fetchall()
        return [ScopeCount(scope, int(active), int(archived)) for scope, active, archived in rows]

    def export(self, scopes: tuple[str, ...]) -> Iterator[Entry]:
        """Read in one transaction of a connection of its own, so a long export neither
        blocks this store nor sees a half-written state."""
        clause, parameters = _where(EntryFilter(scopes=scopes, archived=None), "")
        with self._lock, self._errors():
            self._open()
        with self._errors():
            connection = _connect(self.path)
            try:
                connection.execute("BEGIN")
                cursor = connection.execute(
                    f"SELECT {_COLUMNS} FROM memory_entries WHERE {clause} ORDER BY seq",
                    parameters,
                )
                for row in cursor:
                    with self._lock:
                        yield self._touches.overlay(_entry_of(row))
                connection.execute("COMMIT")
            finally:
                connection.close()

    def verify(self) -> list[str]:
        problems: list[str] = []
        # One snapshot: a commit between two of these reads must not look like damage.
        with self._reading() as connection, sqlite_postings.read_snapshot(connection):
            for (result,) in connection.execute("PRAGMA quick_check"):
                if result != "ok":
                    problems.append(f"SQLite integrity: {result}")
            entries = connection.execute("SELECT COUNT(*) FROM memory_entries").fetchone()[0]
            problems.extend(sqlite_postings.problems(connection, int(entries)))
            miscounted = connection.execute(
                "SELECT COUNT(*) FROM (SELECT s.name AS scope, SUM(e.archived = 0) AS active "
                "FROM memory_entries AS e JOIN memory_scopes AS s ON s.id = e.scope "
                "GROUP BY e.scope) AS actual "
                "LEFT JOIN memory_scope_counts AS kept USING (scope) "
                "WHERE actual.active != COALESCE(kept.active, 0)"
            ).fetchone()[0]
            if miscounted:
                problems.append(
                    f"the active-entry counts of {miscounted} scopes disagree with the entries "
                    "(SqliteStore.rebuild_index recounts them)"
                )
            unnamed = connection.execute(
                "SELECT COUNT(*) FROM memory_entries WHERE session IS NOT NULL "
                "AND session NOT IN (SELECT id FROM memory_sessions)"
            ).fetchone()[0]
            if unnamed:
                problems.append(f"{unnamed} entries name a source session that is not stored")
        return problems

    # ---------------------------------------------------------------------------- writes

    @contextmanager
    def transaction(self) -> Iterator[_Transaction]:
        with self._lock, self._errors():
            connection = self._open()
            pending = self._touches.drain()
            try:
                with write_transaction(connection):
                    transaction = _Transaction(
                        connection, self.analyzer, self._known_state(connection)
                    )
                    _write_touches(connection, pending)
                    yield transaction
                    transaction.finish()
                self._write_state.trim()
            except BaseException:
                self._touches.restore(pending)
                self._write_state = WriteState()
                raise

    def _known_state(self, connection: sqlite3.Connection) -> WriteState:
        """What the last transaction left known, unless another connection has committed
        since (read inside the write transaction: none can commit now)."""
        version = int(connection.execute("PRAGMA data_version").fetchone()[0])
        if version != self._write_state.data_version:
            self._write_state = WriteState(data_version=version)
        return self._write_state

    def touch(self, scopes: tuple[str, ...], ids: tuple[str, ...], moment: str) -> None:
        if not ids:
            return
        EntryFilter(scopes=scopes)  # the same scope check as every read
        with self._lock:
            self._touches.record(scopes, ids, moment)
            if self._touches.due():
                self._flush_touches()

    def _flush_touches(self) -> None:
        pending = self._touches.drain()
        if pending:
            with self._bookkeeping() as connection:
                _write_touches(connection, pending)

    def vectors(
        self, scopes: tuple[str, ...], model: str, digests: Mapping[str, str]
    ) -> dict[str, tuple[float, ...]]:
        if not digests:
            return {}
        EntryFilter(scopes=scopes)
        with self._reading() as connection:
            rows = connection.execute(
                "SELECT e.id, v.digest, v.vector FROM memory_vectors AS v "
                "JOIN memory_entries AS e ON e.seq = v.seq "
                f"WHERE v.model = ? AND e.scope IN {_scope_ids(scopes)} "
                f"AND e.id IN ({_marks(list(digests))})",
                [model, *scopes, *map(stored_id, digests)],
            ).fetchall()
        return matching_vectors(
            [(id_text(identifier), digest, vector) for identifier, digest, vector in rows], digests
        )

    def save_vectors(
        self,
        scopes: tuple[str, ...],
        model: str,
        vectors: Mapping[str, tuple[str, Sequence[float]]],
    ) -> None:
        if not vectors:
            return
        EntryFilter(scopes=scopes)
        with self._bookkeeping() as connection:
            connection.executemany(
                "INSERT OR REPLACE INTO memory_vectors (seq, model, digest, vector) "
                "SELECT seq, ?, ?, ? FROM memory_entries WHERE id = ? "
                f"AND scope IN {_scope_ids(scopes)}",
                [
                    [model, digest, pack_vector(vector), stored_id(identifier), *scopes]
                    for identifier, (digest, vector) in vectors.items()
                ],
            )

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                try:
                    self._flush_touches()
                finally:
                    self._connection.close()
                    self._connection = None

    # --------------------------------------------------------------------------- plumbing

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._errors():
            yield self._open()

    @contextmanager
    def _bookkeeping(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that is not fsynced (WAL with synchronous NORMAL): after a power
        cut the latest of these may be gone, never half written."""
        with self._lock, self._errors():
            connection = self._open()
            connection.execute("PRAGMA synchronous=NORMAL")
            try:
                with write_transaction(connection):
                    yield connection
            finally:
                connection.execute("PRAGMA synchronous=FULL")

    def _open(self) -> sqlite3.Connection:
        """The store's connection, creating the file, the schema and WAL mode on first use,
        and rebuilding the text index when it was built by another analyser."""
        if self._connection is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = _connect(self.path)
            try:
                with write_transaction(connection):
                    version = _stored_version(connection)
                    if version == "1":
                        _leave_version_1(connection)
                    if version in _FTS5_VERSIONS:
                        _leave_fts5(connection)
                    if version in _BEFORE_4:
                        _leave_version_3(connection)
                    if version in _ENTRIES_BEFORE_5:
                        _entries_to_5(connection)
                    for statement in _SCHEMA:
                        connection.execute(statement)
                    if version == "1":
                        _link_sessions(connection)
                    if version in _FTS5_VERSIONS:
                        _rebuild(connection, self.analyzer)
                    elif version in _POSTINGS_BEFORE_5:
                        _index_to_5(connection, self.analyzer)
                    elif version == "5":
                        _index_to_6(connection, self.analyzer)
                    self._prepare_index(connection)
                if version in _MIGRATED_VERSIONS:
                    _give_back_free_pages(connection)
            except BaseException:
                connection.close()
                raise
            self._connection = connection
            # data_version counts for one connection only: a new one starts knowing nothing.
            self._write_state = WriteState()
        return self._connection

    def _prepare_index(self, connection: sqlite3.Connection) -> None:
        meta = dict(connection.execute("SELECT name, value FROM memory_meta").fetchall())
        if meta.get("schema", SCHEMA_VERSION) != SCHEMA_VERSION:
            raise MemoryServiceError(
                STORE_FAILURE,
                f"{self.path} has memory schema {meta['schema']}; this version reads "
                f"schema {SCHEMA_VERSION}",
            )
        if meta.get("analyzer") != self.analyzer.signature:
            _rebuild(connection, self.analyzer)

    def rebuild_index(self) -> None:
        """Re-create the text index, the term and scope counts from the entries: derived data,
        so this is always safe, and it repairs what `verify` reports as damaged."""
        with self._lock, self._errors():
            connection = self._open()
            self._write_state = WriteState()
            with write_transaction(connection):
                _rebuild(connection, self.analyzer)

    def scrub(self) -> None:
        """Leave no trace of deleted text in the files. The names of sessions no entry refers to
        any more go (a delete leaves them, as finding out would scan the entries). Freed pages
        are zeroed (secure_delete), but a page split leaves stale copies of cells in the unused
        part of pages it keeps, and the WAL holds pages as they were: rewrite the file
        (VACUUM), then copy the WAL into it and empty it. Costs a pass over the file: for
        purges, not for every write."""
        with self._lock, self._errors():
            connection = self._open()
            self._write_state = WriteState()
            with write_transaction(connection):
                _forget_unused_sessions(connection)
            connection.execute("VACUUM")
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Database failures as MemoryServiceErrors naming the file."""
        try:
            yield
        except sqlite3.Error as error:
            raise MemoryServiceError(
                STORE_FAILURE, f"memory database {self.path}: {error}"
            ) from error


class _Transaction:
    """The StoreTransaction of a SqliteStore: runs on its connection inside BEGIN IMMEDIATE.

    It keeps the change of each scope's active-entry count and the latest entries it wrote of
    each (scope, session), so the turns of a batch link to each other and take their context
    from each other without reading them back; it writes each count and each session's new
    tail once, at the end (`finish`). What it learns of the file goes to `state`, which the
    next transaction starts from while no other connection has written (sqlite_write_state)."""

    def __init__(
        self, connection: sqlite3.Connection, analyzer: Analyzer, state: WriteState
    ) -> None:
        self._connection = connection
        self._analyzer = analyzer
        self._state = state
        # Inserted entries wait here to be indexed together (one add for a whole batch),
        # before anything reads or changes the index and before the commit.
        self._unindexed: list[sqlite_postings.IndexedEntry] = []
        # (scope, session) → (seq, body) of its latest entries, nearest first.
        self._recent = state.recent
        self._tails: dict[tuple[str, str], int] = {}
        # scope → how many more active entries it holds than memory_scope_counts says.
        self._counted: dict[str, int] = {}
        # (table, name) → the number the table gives the name.
        self._numbers = state.numbers

    def _number(self, table: str, name: str) -> int:
        """The number of a scope or session name (`table`) in the entries table, given to it
        at its first entry."""
        known = self._known_number(table, name)
        if known is None:
            row = self._connection.execute(
                f"INSERT INTO {table} (name) VALUES (?) RETURNING id", (name,)
            ).fetchone()
            known = self._numbers[(table, name)] = int(row[0])
        return known

    def _known_number(self, table: str, name: str) -> int | None:
        """The number of a name, None if no entry ever had it."""
        known = self._numbers.get((table, name))
        if known is None:
            row = self._connection.execute(
                f"SELECT id FROM {table} WHERE name = ?", (name,)
            ).fetchone()
            if row is not None:
                known = self._numbers[(table, name)] = int(row[0])
        return known

    def _values(self, entry: Entry) -> tuple[Any, ...]:
        session = entry.source.session
        return _row(
            entry,
            self._number("memory_scopes", entry.scope),
            None if session is None else self._number("memory_sessions", session),
        )

    def flush(self) -> None:
        """Index the entries inserted since the last flush."""
        sqlite_postings.add(self._connection, self._unindexed, self._state.index)
        self._unindexed = []

    def finish(self) -> None:
        """Write what the transaction kept back (the index of its inserts, counts, sessions'
        tails): before it commits."""
        self.flush()
        execute_rows(
            self._connection,
            "INSERT INTO memory_scope_counts (scope, active) VALUES (?, ?) "
            "ON CONFLICT (scope) DO UPDATE SET active = active + excluded.active",
            [(scope, change) for scope, change in self._counted.items() if change],
        )
        stored = self._state.active
        for scope, change in self._counted.items():
            if scope in stored:
                stored[scope] += change
        self._counted.clear()
        execute_rows(
            self._connection,
            "INSERT INTO memory_session_tails (scope, session, seq) VALUES (?, ?, ?) "
            "ON CONFLICT (scope, session) DO UPDATE SET seq = excluded.seq",
            [(scope, session, seq) for (scope, session), seq in self._tails.items()],
        )
        self._tails.clear()

    def select(
        self,
        where: EntryFilter,
        *,
        order: Order = "updated",
        descending: bool = True,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Entry]:
        return _select(self._connection, where, order, descending, limit, offset, self._id_order())

    def active_with_key(self, scope: str, key: str) -> Entry | None:
        number = self._known_number("memory_scopes", scope)
        if number is None:
            return None
        row = self._connection.execute(_ACTIVE_WITH_KEY, (number, key)).fetchone()
        return None if row is None else _entry_of(row)

    def _id_order(self) -> str:
        if self._state.text_ids is None:
            self._state.text_ids = _id_order(self._connection) != "id"
        return _ID_ORDER if self._state.text_ids else "id"

    def count(self, where: EntryFilter) -> int:
        return _count(self._connection, where)

    def tally(
        self, where: EntryFilter, by: tuple[Dimension, ...], *, min_count: int = 1
    ) -> list[tuple[tuple[str | None, ...], int]]:
        return _tally(self._connection, where, by, min_count)

    def active_entries(self, scope: str) -> int:
        stored = self._state.active.get(scope)
        if stored is None:
            row = self._connection.execute(
                "SELECT active FROM memory_scope_counts WHERE scope = ?", (scope,)
            ).fetchone()
            stored = self._state.active[scope] = int(row[0]) if row else 0
        return stored + self._counted.get(scope, 0)

    def _count(self, scope: str, change: int) -> None:
        self._counted[scope] = self._counted.get(scope, 0) + change

    def insert(self, entry: Entry) -> None:
        values = self._values(entry)
        # An archived entry (the old version an update keeps) is no turn of its session: it
        # joins no chain, so its text is never a later turn's linked context.
        linked = entry.kind == "episodic" and not entry.archived
        session = entry.source.session if linked else None
        recent: list[tuple[int, str]] = []
        if session is not None:
            recent = self._session_recent(entry.scope, session)
        try:
            cursor = self._connection.execute(
                _INSERT_ENTRY, (*values, recent[0][0] if recent else None)
            )
        except sqlite3.IntegrityError as error:
            _raise_conflict(entry, error)
        seq = cast(int, cursor.lastrowid)
        if isinstance(values[0], str):
            _note_text_ids(self._connection)
            self._state.text_ids = True
        self._count(entry.scope, int(entry.active))
        if session is not None:
            if recent:
                self._connection.execute(
                    "UPDATE memory_entries SET next_seq = ? WHERE seq = ?", (seq, recent[0][0])
                )
            self._recent[(entry.scope, session)] = [(seq, entry.body), *recent][
                :LINKED_CONTEXT_TURNS
            ]
            self._tails[(entry.scope, session)] = seq
        before = [body for _, body in recent]
        self._unindexed.append(_indexed(seq, entry, before, self._analyzer))

    def _session_recent(self, scope: str, session: str) -> list[tuple[int, str]]:
        """The latest entries of a session, nearest first: kept by this transaction, or
        read from its stored tail back along the links."""
        known = self._recent.get((scope, session))
        if known is not None:
            return known
        found: list[tuple[int, str]] = []
        row = self._connection.execute(
            "SELECT seq FROM memory_session_tails WHERE scope = ? AND session = ?",
            (scope, session),
        ).fetchone()
        current: int | None = row[0] if row else None
        while current is not None and len(found) < LINKED_CONTEXT_TURNS:
            link = self._connection.execute(
                "SELECT previous_seq, body FROM memory_entries "
                f"WHERE seq = ? AND +scope = {_SCOPE_ID}",
                (current, scope),
            ).fetchone()
            if link is None:
                break
            found.append((current, link[1]))
            current = link[0]
        return found

    def replace(self, entry: Entry) -> None:
        self.flush()
        found = self._connection.execute(
            f"SELECT seq, {_COLUMNS} FROM memory_entries WHERE id = ? AND +scope = {_SCOPE_ID}",
            (stored_id(entry.id), entry.scope),
        ).fetchone()
        if found is None:
            raise StoreConflict(f"entry {entry.id} does not exist in scope {entry.scope}")
        seq, previous = int(found[0]), _entry_of(found[1:])
        values = self._values(entry)
        if previous.body != entry.body:
            for recent in self._recent.values():
                recent[:] = [
                    (known, entry.body if known == seq else body) for known, body in recent
                ]
        try:
            self._connection.execute(_UPDATE_ENTRY, (*values, seq))
        except sqlite3.IntegrityError as error:
            _raise_conflict(entry, error)
        self._count(entry.scope, int(entry.active) - int(previous.active))
        if indexed_text(previous) != indexed_text(entry):
            self._state.index.tail = None  # changed below, not by `add` with what is known
            # The entries after it in its session have its body in their linked context.
            later = (
                _later(self._connection, entry.scope, seq) if previous.body != entry.body else []
            )
            for other in later:
                _unindex_at(
                    self._connection, entry.scope, other, self._analyzer, {seq: previous.body}
                )
            _unindex(self._connection, seq, previous, self._analyzer)
            self._connection.execute(
                "DELETE FROM memory_vectors WHERE seq IN "
                f"(SELECT seq FROM memory_entries WHERE seq = ? AND +scope = {_SCOPE_ID})",
                (seq, entry.scope),
            )
            _index(self._connection, seq, entry, self._analyzer)
            for other in later:
                _index_at(self._connection, entry.scope, other, self._analyzer)

    def delete(self, scope: str, ids: tuple[str, ...]) -> int:
        if not ids:
            return 0
        # Deleting relinks sessions in the table: write what was kept back first, forget the
        # sessions' latest entries.
        self.finish()
        self._recent.clear()
        self._state.index.tail = None  # the index changes below, not by `add`
        doomed = self._connection.execute(
            f"SELECT seq, {_COLUMNS} FROM memory_entries WHERE +scope = {_SCOPE_ID} "
            f"AND id IN ({_marks(ids)})",
            [scope, *map(stored_id, ids)],
        ).fetchall()
        for row in doomed:
            seq, entry = int(row[0]), _entry_of(row[1:])
            later = _later(self._connection, scope, seq)
            for other in later:
                _unindex_at(self._connection, scope, other, self._analyzer)
            _unindex(self._connection, seq, entry, self._analyzer)
            _unlink(self._connection, scope, seq)
            self._connection.execute("DELETE FROM memory_vectors WHERE seq = ?", (seq,))
            self._connection.execute("DELETE FROM memory_entries WHERE seq = ?", (seq,))
            self._count(scope, -int(entry.active))
            for other in later:
                _index_at(self._connection, scope, other, self._analyzer)
        return len(doomed)


# ------------------------------------------------------------------------------- helpers


def _connect(path: Path) -> sqlite3.Connection:
    connection = connect(path, "FULL", incremental_vacuum=True)
    connection.create_function(_TITLE_NORM, 2, _stored_title_norm, deterministic=True)
    connection.create_function(_TITLE_HASH, 1, title_hash, deterministic=True)
    # Freed pages are zeroed, so a purged entry's text does not linger in the file.
    connection.execute("PRAGMA secure_delete=ON")
    return connection


def _stored_version(connection: sqlite3.Connection) -> str | None:
    """The schema version the file records; None for a new file."""
    known = connection.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memory_meta'"
    ).fetchone()
    if known is None:
        return None
    row = connection.execute("SELECT value FROM memory_meta WHERE name = 'schema'").fetchone()
    return str(row[0]) if row else None


def _leave_version_1(connection: sqlite3.Connection) -> None:
    """The part of the move from schema 1 that must precede the schema: the entries gain their
    session links."""
    for column in ("previous_seq", "next_seq"):
        connection.execute(f"ALTER TABLE memory_entries ADD COLUMN {column} INTEGER")


def _leave_fts5(connection: sqlite3.Connection) -> None:
    """The FTS5 text index of schemas 1 and 2 goes (the schema creates the postings,
    `_rebuild` fills them)."""
    connection.execute("DROP TABLE IF EXISTS memory_terms_vocab")
    connection.execute("DROP TABLE IF EXISTS memory_terms")


def _leave_version_3(connection: sqlite3.Connection) -> None:
    """The move from schema 3 (or 1 and 2, once the steps before ran) to 4: the entries are
    copied into the leaner table (numbered scopes, see `_TITLE_HASH`) under the same seqs,
    which the text index, the vectors and the session links refer to; `_entries_to_5` moves
    them on."""
    connection.create_function("memory_derived_title", 1, _derived_title, deterministic=True)
    connection.execute(_SCOPES_TABLE)
    connection.execute(
        "INSERT INTO memory_scopes (name) SELECT DISTINCT scope FROM memory_entries ORDER BY scope"
    )
    connection.execute(_ENTRIES_TABLE_4.format(name="memory_entries_4"))
    kept = [name for name in ENTRY_COLUMNS if name not in ("scope", "title", "source")]
    kept += ["day", "week", "month", "year", "session", "previous_seq", "next_seq"]
    connection.execute(
        f"INSERT INTO memory_entries_4 (seq, {', '.join(kept)}, scope, title, title_hash, source) "
        f"SELECT seq, {', '.join(kept)}, "
        "(SELECT id FROM memory_scopes WHERE name = memory_entries.scope), "
        "CASE WHEN title = memory_derived_title(body) THEN NULL ELSE title END, "
        f"{_TITLE_HASH}(title_norm), "
        "CASE WHEN json_remove(source, '$.session') = '{}' THEN NULL ELSE source END "
        "FROM memory_entries ORDER BY seq"
    )
    connection.execute("DROP TABLE memory_entries")
    connection.execute("ALTER TABLE memory_entries_4 RENAME TO memory_entries")


def _index_to_5(connection: sqlite3.Connection, analyzer: Analyzer) -> None:
    """The text index's part of the move to schema 5 (from 3 or 4, once their entries are
    in the table of 4): the tail becomes one row per entry, the kept counts cover the blocks
    only, blocks record how many postings they hold. The old tables go and the index is
    rebuilt from the entries (which also records the schema version)."""
    sqlite_postings.drop(connection)
    for statement in sqlite_postings.SCHEMA:
        connection.execute(statement)
    _rebuild(connection, analyzer)


def _index_to_6(connection: sqlite3.Connection, analyzer: Analyzer) -> None:
    """The move from schema 5 to 6, the text index's blocks only: moved into the layout of
    sqlite_postings.py (`relayout`); rebuilt from the entries if one of them is damaged."""
    try:
        sqlite_postings.relayout(connection)
    except sqlite_postings.DamagedIndex:
        sqlite_postings.drop(connection)
        for statement in sqlite_postings.SCHEMA:
            connection.execute(statement)
        _rebuild(connection, analyzer)
        return
    connection.execute(
        "INSERT OR REPLACE INTO memory_meta (name, value) VALUES ('schema', ?)", (SCHEMA_VERSION,)
    )


def _entries_to_5(connection: sqlite3.Connection) -> None:
    """The move of the entries from schema 4 (or older, once the steps before ran) to 5: they
    are copied under the same seqs into the table of sqlite_values.py's forms, session names
    numbered; the indexes are made by the schema. Inside the opening transaction: an upgrade
    that fails or is killed leaves the file as it was. An entry whose times or bucket cannot
    take the new forms (none the service wrote) stops it, named."""
    connection.create_function("memory_milliseconds", 1, _milliseconds_or_none, deterministic=True)
    connection.create_function("memory_bucket_day", 2, _bucket_day_or_none, deterministic=True)
    connection.create_function("memory_stored_id", 1, stored_id, deterministic=True)
    kinds = " ".join(f"WHEN '{kind}' THEN {code}" for kind, code in KIND_CODES.items())
    unstorable = connection.execute(
        "SELECT id FROM memory_entries WHERE memory_milliseconds(created_at) IS NULL "
        "OR memory_milliseconds(updated_at) IS NULL OR memory_milliseconds(accessed_at) IS NULL "
        "OR memory_milliseconds(event_time) IS NULL OR memory_bucket_day(bucket, level) IS NULL "
        f"OR kind NOT IN ({', '.join(repr(kind) for kind in KIND_CODES)}) LIMIT 1"
    ).fetchone()
    if unstorable is not None:
        raise MemoryServiceError(
            STORE_FAILURE,
            f"entry {unstorable[0]} has a time, bucket or kind that memory schema 5 cannot "
            "store; the file is left as it was",
        )
    connection.execute(_SESSIONS_TABLE)
    connection.execute(
        "INSERT INTO memory_sessions (name) SELECT session FROM memory_entries "
        "WHERE session IS NOT NULL GROUP BY session ORDER BY MIN(seq)"
    )
    connection.execute(_ENTRIES_TABLE.format(name="memory_entries_5"))
    same = [
        "seq",
        "scope",
        "key",
        "title",
        "body",
        "context",
        "level",
        "archived",
        "archive_reason",
        "source",
        "reinforce_count",
        "superseded_by",
        "previous_seq",
        "next_seq",
    ]
    converted = {
        "id": "memory_stored_id(id)",
        "kind": f"CASE kind {kinds} END",
        "title_hash": "CASE WHEN key IS NULL THEN title_hash END",
        "tags": "NULLIF(tags, '[]')",
        "archive_ref": "NULLIF(archive_ref, '[]')",
        "created_at": "memory_milliseconds(created_at)",
        "updated_at": "CASE WHEN updated_at != created_at THEN memory_milliseconds(updated_at) END",
        "accessed_at": "CASE WHEN accessed_at != updated_at "
        "THEN memory_milliseconds(accessed_at) END",
        "event_time": "CASE WHEN event_time != created_at THEN memory_milliseconds(event_time) END",
        "bucket_day": "memory_bucket_day(bucket, level)",
        "session": "(SELECT id FROM memory_sessions WHERE name = memory_entries.session)",
    }
    connection.execute(
        f"INSERT INTO memory_entries_5 ({', '.join([*same, *converted])}) "
        f"SELECT {', '.join([*same, *converted.values()])} FROM memory_entries ORDER BY seq"
    )
    if connection.execute(
        "SELECT 1 FROM memory_entries_5 WHERE typeof(id) = 'text' LIMIT 1"
    ).fetchone():
        _note_text_ids(connection)
    connection.execute("DROP TABLE memory_entries")
    connection.execute("ALTER TABLE memory_entries_5 RENAME TO memory_entries")


def _milliseconds_or_none(text: str) -> int | None:
    try:
        return stamp_milliseconds(text)
    except MemoryServiceError:
        return None


def _bucket_day_or_none(bucket: str, level: Level | None) -> int | None:
    try:
        return bucket_day(bucket, level)
    except (MemoryServiceError, ValueError):
        return None


def _give_back_free_pages(connection: sqlite3.Connection) -> None:
    """After an upgrade the old table's pages are free: give them back to the file system
    rather than keep a file a third larger than it needs to be. Best effort: the upgrade has
    committed, and a file that another process keeps busy past the timeout stays as large, its
    free pages reused by later writes."""
    try:
        connection.execute("VACUUM")
    except sqlite3.OperationalError:
        return


def _link_sessions(connection: sqlite3.Connection) -> None:
    """Link the episodic entries of each (scope, session) in the order they were written,
    and record each session's last one (an upgrade from schema 1)."""
    tails: dict[tuple[str, str], int] = {}
    rows = connection.execute(
        f"SELECT seq, {_SCOPE_NAME.format(column='scope')}, "
        f"{_SESSION_NAME.format(column='session')} FROM memory_entries "
        f"WHERE kind = {_EPISODIC} AND session IS NOT NULL ORDER BY seq"
    ).fetchall()
    for seq, scope, session in rows:
        previous = tails.get((scope, session))
        if previous is not None:
            connection.execute(
                "UPDATE memory_entries SET previous_seq = ? WHERE seq = ?", (previous, seq)
            )
            connection.execute(
                "UPDATE memory_entries SET next_seq = ? WHERE seq = ?", (seq, previous)
            )
        tails[(scope, session)] = int(seq)
    connection.executemany(
        "INSERT OR REPLACE INTO memory_session_tails (scope, session, seq) VALUES (?, ?, ?)",
        [(scope, session, seq) for (scope, session), seq in tails.items()],
    )


def _unlink(connection: sqlite3.Connection, scope: str, seq: int) -> None:
    """Take an entry out of its session's chain, joining its neighbours to each other."""
    row = connection.execute(
        f"SELECT previous_seq, next_seq, {_SESSION_NAME.format(column='session')} "
        f"FROM memory_entries WHERE seq = ? AND +scope = {_SCOPE_ID}",
        (seq, scope),
    ).fetchone()
    if row is None:
        return
    previous, following, session = row
    if previous is not None:
        connection.execute(
            f"UPDATE memory_entries SET next_seq = ? WHERE seq = ? AND +scope = {_SCOPE_ID}",
            (following, previous, scope),
        )
    if following is not None:
        connection.execute(
            f"UPDATE memory_entries SET previous_seq = ? WHERE seq = ? AND +scope = {_SCOPE_ID}",
            (previous, following, scope),
        )
    if session is not None:
        if previous is None:
            connection.execute(
                "DELETE FROM memory_session_tails WHERE scope = ? AND session = ? AND seq = ?",
                (scope, session, seq),
            )
        else:
            connection.execute(
                "UPDATE memory_session_tails SET seq = ? WHERE scope = ? AND session = ? "
                "AND seq = ?",
                (previous, scope, session, seq),
            )


def _forget_unused_sessions(connection: sqlite3.Connection) -> None:
    """Drop the names of sessions no entry refers to (what deletes left)."""
    connection.execute(
        "DELETE FROM memory_sessions WHERE id NOT IN "
        "(SELECT session FROM memory_entries WHERE session IS NOT NULL)"
    )


def _write_touches(
    connection: sqlite3.Connection, pending: dict[tuple[tuple[str, ...], str], list[str]]
) -> None:
    for (scopes, moment), ids in pending.items():
        stamp = stamp_milliseconds(moment, "accessed_at")
        connection.execute(
            f"UPDATE memory_entries SET accessed_at = ? WHERE +scope IN {_scope_ids(scopes)} "
            f"AND id IN ({_marks(ids)}) AND {_ACCESSED.format(p='')} < ?",
            [stamp, *scopes, *map(stored_id, ids), stamp],
        )


def _searchable(query: TextQuery) -> list[str]:
    """The query's terms that can be FTS5 phrases (every analysed term is letters and digits;
    anything else can never be, so user text is never FTS5 syntax)."""
    return list(dict.fromkeys(term for term in query.terms if term.isalnum()))


def _best(
    connection: sqlite3.Connection, scored: dict[int, float], where: EntryFilter, limit: int
) -> list[Sequence[Any]]:
    """The rows (`_MATCH_COLUMNS`, the seq as the second) of the best `limit` entries of
    `scored` that pass `where`, best first: by score, then accessed_at (most recent first),
    then id. Only the best few are loaded; more only when the filter turns some away."""
    wanted = limit
    while True:
        if len(scored) <= wanted:
            chosen = list(scored)
        else:
            floor = heapq.nlargest(wanted, scored.values())[-1]
            # Every entry tied with the last one is a candidate: ties go by accessed_at and id.
            chosen = list(compress(scored.keys(), map(floor.__le__, scored.values())))
        rows = _rows_of(connection, chosen, where)
        if len(rows) >= limit or len(chosen) == len(scored):
            break
        wanted *= 4
    # One sort: accessed_at is stored as integer milliseconds, so negating it orders it
    # descending inside a key that orders the id ascending.
    return sorted(rows, key=lambda row: (-scored[row[1]], -row[5], row[0]))[:limit]


def _rows_of(
    connection: sqlite3.Connection, seqs: list[int], where: EntryFilter
) -> list[Sequence[Any]]:
    """(id, seq, session, recency, bucket, accessed) of these entries that pass `where`, the
    id and the bucket as the Entry gives them, the times as stored."""
    clause, parameters = _where(where, "e.")
    rows = connection.execute(
        # CROSS JOIN makes the few seqs the outer loop: each is looked up, no scope scanned.
        f"SELECT {_MATCH_COLUMNS.format(score='e.seq')} FROM json_each(?) AS j "
        f"CROSS JOIN memory_entries AS e ON e.seq = j.value WHERE {clause}",
        [json.dumps(seqs), *parameters],
    )
    return [
        (id_text(identifier), seq, session, recency, bucket_text(day, level), accessed)
        for identifier, seq, session, recency, level, day, accessed in rows
    ]


def _count_among(
    connection: sqlite3.Connection, scored: sqlite_postings.SeqArray, where: EntryFilter
) -> int:
    """How many of the entries `scored` (seqs, ascending) pass `where`. They are all in the
    filter's scopes already, so a filter on nothing but the archived flag needs only the
    scopes' archived entries, few as a rule; any other filter checks every match."""
    if not len(scored):
        return 0
    if where == EntryFilter(scopes=where.scopes, archived=where.archived):
        if where.archived is None:
            return len(scored)
        archived_seqs = [
            int(seq)
            for (seq,) in connection.execute(
                f"SELECT seq FROM memory_entries WHERE scope IN {_scope_ids(where.scopes)} "
                "AND archived = 1",
                where.scopes,
            )
        ]
        archived = int(np.isin(archived_seqs, scored).sum()) if archived_seqs else 0
        return archived if where.archived else len(scored) - archived
    clause, parameters = _where(where, "e.")
    return int(
        connection.execute(
            f"SELECT COUNT(*) FROM json_each(?) AS j "
            f"CROSS JOIN memory_entries AS e ON e.seq = j.value WHERE {clause}",
            [json.dumps(scored.tolist()), *parameters],
        ).fetchone()[0]
    )


def _match(row: Sequence[Any], score: float, touches: PendingTouches) -> Match:
    """The Match of a row of `_MATCH_COLUMNS`, with the accessed_at of a pending touch."""
    identifier, seq, session, recency, bucket, accessed = row
    return Match(
        identifier,
        score,
        session,
        recency * 1000,  # stored milliseconds, as microseconds
        bucket,
        touches.accessed(identifier, stamp_text(accessed)),
        seq,
    )


def _entries_at(
    connection: sqlite3.Connection, where: EntryFilter, matches: Sequence[Match]
) -> list[Entry]:
    """The entries of `matches` that pass `where`, each found by its seq (the table's rowid:
    one look-up, where an id is two, and no ordering to compute), and kept only while the
    row still holds the matched id (a seq freed by a delete may be taken again)."""
    if not matches:
        return []
    clause, parameters = _where(where, "")
    rows = connection.execute(
        f"SELECT {_COLUMNS} FROM memory_entries "
        f"WHERE seq IN (SELECT value FROM json_each(?)) AND {clause}",
        [json.dumps([match.seq for match in matches]), *parameters],
    )
    asked = {match.id for match in matches}
    return [entry for entry in map(_entry_of, rows) if entry.id in asked]


def _rebuild(connection: sqlite3.Connection, analyzer: Analyzer) -> None:
    """Index every entry again with `analyzer`, count the entries of each scope again, and
    record the analyser's signature (inside a write)."""
    sqlite_postings.clear(connection)
    connection.execute("DELETE FROM memory_scope_counts")
    connection.execute(
        "INSERT INTO memory_scope_counts (scope, active) "
        "SELECT s.name, SUM(e.archived = 0) FROM memory_entries AS e "
        "JOIN memory_scopes AS s ON s.id = e.scope GROUP BY e.scope"
    )
    rows = connection.execute(
        f"SELECT seq, previous_seq, {_COLUMNS} FROM memory_entries ORDER BY seq"
    ).fetchall()
    entries = {int(row[0]): _entry_of(row[2:]) for row in rows}
    chain = {int(row[0]): (row[1], entries[int(row[0])].body) for row in rows}
    batch: list[sqlite_postings.IndexedEntry] = []
    for row in rows:
        seq, entry = int(row[0]), entries[int(row[0])]
        batch.append(_indexed(seq, entry, bodies_before(row[1], chain), analyzer))
        if len(batch) == _REBUILD_BATCH:
            sqlite_postings.add(connection, batch)
            batch = []
    sqlite_postings.add(connection, batch)
    connection.executemany(
        "INSERT OR REPLACE INTO memory_meta (name, value) VALUES (?, ?)",
        [("schema", SCHEMA_VERSION), ("analyzer", analyzer.signature)],
    )


def _raise_conflict(entry: Entry, error: sqlite3.IntegrityError) -> NoReturn:
    """The StoreConflict a failed write of `entry` means, or `error` itself when it is not
    one of the constraints a conflict breaks."""
    text = str(error)
    if "memory_entries_key" in text:
        message = f"scope {entry.scope} already has an active entry with key {entry.key!r}"
    elif "memory_entries.scope, memory_entries.level" in text:
        message = (
            f"scope {entry.scope} already has an active {entry.level} summary for bucket "
            f"{entry.bucket}"
        )
    elif "memory_entries.id" in text:
        message = f"an entry with id {entry.id} already exists"
    else:
        raise error
    raise StoreConflict(message) from error


def _marks(values: Sequence[object]) -> str:
    return ", ".join("?" * len(values))


def _scope_ids(scopes: Sequence[str]) -> str:
    """The SQL list of the numbers of these scopes (their names are its parameters)."""
    return f"(SELECT id FROM memory_scopes WHERE name IN ({_marks(scopes)}))"


def _linked_context(
    connection: sqlite3.Connection, entry: Entry, seq: int, bodies: Mapping[int, str]
) -> str:
    """linked_context (store.py) of the entry at `seq`, walking its session's links; `bodies`
    stands in for stored bodies (a body being replaced)."""
    if entry.context or entry.kind != "episodic" or entry.source.session is None:
        return entry.context
    found: list[str] = []
    current = seq
    for _ in range(LINKED_CONTEXT_TURNS):
        row = connection.execute(
            "SELECT p.seq, p.body FROM memory_entries AS e JOIN memory_entries AS p "
            "ON p.seq = e.previous_seq "
            f"WHERE e.seq = ? AND +e.scope = {_SCOPE_ID} AND +p.scope = {_SCOPE_ID}",
            (current, entry.scope, entry.scope),
        ).fetchone()
        if row is None:
            break
        current = int(row[0])
        found.append(bodies.get(current, row[1]))
    return linked_context(entry, found)


def _later(connection: sqlite3.Connection, scope: str, seq: int) -> list[int]:
    """The LINKED_CONTEXT_TURNS entries after `seq` in its session, nearest first."""
    found: list[int] = []
    current = seq
    for _ in range(LINKED_CONTEXT_TURNS):
        row = connection.execute(
            f"SELECT next_seq FROM memory_entries WHERE seq = ? AND +scope = {_SCOPE_ID}",
            (current, scope),
        ).fetchone()
        if row is None or row[0] is None:
            break
        current = int(row[0])
        found.append(current)
    return found


def _stored(connection: sqlite3.Connection, scope: str, seq: int) -> Entry:
    row = connection.execute(
        f"SELECT {_COLUMNS} FROM memory_entries WHERE seq = ? AND +scope = {_SCOPE_ID}",
        (seq, scope),
    ).fetchone()
    return _entry_of(row)


def _index_at(connection: sqlite3.Connection, scope: str, seq: int, analyzer: Analyzer) -> None:
    _index(connection, seq, _stored(connection, scope, seq), analyzer)


def _unindex_at(
    connection: sqlite3.Connection,
    scope: str,
    seq: int,
    analyzer: Analyzer,
    bodies: Mapping[int, str] | None = None,
) -> None:
    _unindex(connection, seq, _stored(connection, scope, seq), analyzer, bodies)


def _index(connection: sqlite3.Connection, seq: int, entry: Entry, analyzer: Analyzer) -> None:
    context = _linked_context(connection, entry, seq, {})
    sqlite_postings.add(connection, [_indexed(seq, entry.evolve(context=context), [], analyzer)])


def _unindex(
    connection: sqlite3.Connection,
    seq: int,
    entry: Entry,
    analyzer: Analyzer,
    bodies: Mapping[int, str] | None = None,
) -> None:
    """Remove an entry from the index, which needs the tokens it was indexed with: the same
    analyser makes them again from the stored entry and its session's entries before it
    (whose bodies and links have not changed since, as every change to them re-indexes
    it)."""
    context = _linked_context(connection, entry, seq, bodies or {})
    sqlite_postings.remove(connection, [_indexed(seq, entry.evolve(context=context), [], analyzer)])


def _indexed(
    seq: int, entry: Entry, before: Sequence[str], analyzer: Analyzer
) -> sqlite_postings.IndexedEntry:
    """What the index holds of the entry at `seq`, whose session's bodies before it are
    `before` (nearest first; used when it has no context of its own)."""
    counts, length = postings(entry, analyzer, linked_context(entry, before))
    return sqlite_postings.IndexedEntry.of(seq, entry.scope, counts, length)


def _entry_of(row: Sequence[Any]) -> Entry:
    """The entry of a row of `_COLUMNS`: the stored forms read back (sqlite_values.py), the
    title taken from the body when not stored. Built field by field, without the generic
    `entry_from_row`'s dict: a recall with limit 100 builds a hundred of these, and at
    conversation size that was most of its time (docs/memory-service.md, "Scale benchmark")."""
    (
        identifier,
        kind,
        scope,
        key,
        title,
        body,
        context,
        tags,
        created_at,
        updated_at,
        accessed_at,
        event_time,
        level,
        day,
        archived,
        archive_reason,
        source,
        archive_ref,
        reinforce_count,
        superseded_by,
    ) = row
    return Entry(
        id=id_text(identifier),
        kind=KIND_NAMES[kind],
        scope=scope,
        key=key,
        title=title_from_text(body) if title is None else title,
        body=body,
        context=context,
        tags=_strings(tags),
        created_at=stamp_text(created_at),
        updated_at=stamp_text(updated_at),
        accessed_at=stamp_text(accessed_at),
        event_time=stamp_text(event_time),
        level=level,
        bucket=bucket_text(day, level),
        archived=bool(archived),
        archive_reason=archive_reason,
        source=_source(source),
        archive_ref=_strings(archive_ref),
        reinforce_count=int(reinforce_count),
        superseded_by=superseded_by,
    )


def _strings(stored: str | None) -> tuple[str, ...]:
    """A list column (tags, archive_ref) read back: NULL or empty is none, else JSON."""
    return tuple(json.loads(stored)) if stored else ()


@lru_cache(maxsize=4096)
def _source(stored: str) -> Source:
    """The Source of a stored source object, decoded once per distinct text: the turns of one
    session share it, and a Source is immutable."""
    return Source(**json.loads(stored))


# The columns an entry's values are written to (`_row`), in order; an insert adds the link to
# the previous turn of its session.
_ROW_COLUMNS = (
    "id",
    "kind",
    "scope",
    "key",
    "title",
    "title_hash",
    "body",
    "context",
    "tags",
    "created_at",
    "updated_at",
    "accessed_at",
    "event_time",
    "level",
    "bucket_day",
    "archived",
    "archive_reason",
    "source",
    "archive_ref",
    "reinforce_count",
    "superseded_by",
    "session",
)
_INSERT_ENTRY = (
    f"INSERT INTO memory_entries ({', '.join(_ROW_COLUMNS)}, previous_seq) "
    f"VALUES ({_marks([*_ROW_COLUMNS, 'previous_seq'])})"
)
_UPDATE_ENTRY = (
    f"UPDATE memory_entries SET {', '.join(f'{name} = ?' for name in _ROW_COLUMNS)} WHERE seq = ?"
)


def _row(entry: Entry, scope_id: int, session_id: int | None) -> tuple[Any, ...]:
    """The values of `_ROW_COLUMNS` for an entry whose scope and session have these numbers,
    in the forms of sqlite_values.py and without what the row gives on read (see
    `_SESSION_NAME` and `_TITLE_HASH`)."""
    require_storable(entry)
    # A new entry's times are mostly one moment: each distinct text is converted once.
    created = stamp_milliseconds(entry.created_at, "created_at")
    updated = (
        created
        if entry.updated_at == entry.created_at
        else stamp_milliseconds(entry.updated_at, "updated_at")
    )
    accessed = (
        updated
        if entry.accessed_at == entry.updated_at
        else stamp_milliseconds(entry.accessed_at, "accessed_at")
    )
    event = stamp_milliseconds(entry.event_time, "event_time")
    source = entry.source
    return (
        stored_id(entry.id),
        KIND_CODES[entry.kind],
        scope_id,
        entry.key,
        None if entry.title == _derived_title(entry.body) else entry.title,
        title_hash(entry.title_norm) if entry.key is None else None,
        entry.body,
        entry.context,
        json_list(list(entry.tags)) if entry.tags else None,
        created,
        None if updated == created else updated,
        None if accessed == updated else accessed,
        None if event == created else event,
        entry.level,
        bucket_day(entry.bucket, entry.level),
        int(entry.archived),
        entry.archive_reason,
        None
        if source.run is None and source.reason is None
        else json.dumps(source.to_dict(), ensure_ascii=False),
        json_list(list(entry.archive_ref)) if entry.archive_ref else None,
        entry.reinforce_count,
        entry.superseded_by,
        session_id,
    )


def title_hash(title_norm: str) -> int:
    """The signed 64-bit hash of a normalised title the table keeps in its place."""
    digest = hashlib.blake2b(title_norm.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _derived_title(body: str) -> str | None:
    """The title `remember` takes from this body (None for a body without any line)."""
    try:
        return title_from_text(body)
    except MemoryServiceError:
        return None


def _stored_title_norm(title: str | None, body: str) -> str:
    """The normalised title of a stored row (SQL function `memory_title_norm`)."""
    return normalise_title(title if title is not None else title_from_text(body))


def _where(where: EntryFilter, prefix: str) -> tuple[str, list[Any]]:
    """The SQL condition of a filter; the scope predicate always comes first. With ids, the
    scope column is written `+scope` so the planner looks the ids up by their unique index
    instead of scanning the scope (the predicate still applies to every row)."""
    column = f"+{prefix}scope" if where.ids is not None else f"{prefix}scope"
    clauses = [f"{column} IN {_scope_ids(where.scopes)}"]
    parameters: list[Any] = list(where.scopes)
    if where.ids is not None:
        clauses.append(f"{prefix}id IN ({_marks(where.ids)})" if where.ids else "0")
        parameters.extend(map(stored_id, where.ids))
    if where.kinds is not None:
        clauses.append(f"{prefix}kind IN ({_marks(where.kinds)})" if where.kinds else "0")
        parameters.extend(KIND_CODES[kind] for kind in where.kinds)
    if where.levels is not None:
        named = [level for level in where.levels if level is not None]
        options = [f"{prefix}level IN ({_marks(named)})"] if named else []
        if None in where.levels:
            options.append(f"{prefix}level IS NULL")
        clauses.append(f"({' OR '.join(options)})" if options else "0")
        parameters.extend(named)
    for tag in where.tags:
        clauses.append(f"EXISTS (SELECT 1 FROM json_each({prefix}tags) WHERE value = ?)")
        parameters.append(tag)
    if where.key is not None:
        clauses.append(f"{prefix}key = ?")
        parameters.append(where.key)
    if where.keyed is not None:
        clauses.append(f"{prefix}key IS {'NOT ' if where.keyed else ''}NULL")
    if where.keys is not None:
        clauses.append(f"{prefix}key IN ({_marks(where.keys)})" if where.keys else "0")
        parameters.extend(where.keys)
    for norms in (
        None if where.title_norm is None else (where.title_norm,),
        where.title_norms,
    ):
        if norms is not None:
            clause, values = _title_clause(norms, where.keyed, prefix)
            clauses.append(clause)
            parameters.extend(values)
    if where.since is not None:
        clauses.append(f"{_EVENT.format(p=prefix)} >= ?")
        parameters.append(bound_milliseconds(where.since))
    if where.until is not None:
        clauses.append(f"{_EVENT.format(p=prefix)} < ?")
        parameters.append(bound_milliseconds(where.until))
    if where.bucket is not None:
        days = bucket_range(*where.bucket)
        clauses.append(f"{prefix}bucket_day >= ? AND {prefix}bucket_day < ?" if days else "0")
        parameters.extend(days or ())
    if where.archived is not None:
        # With a list of keys or titles, `+archived` keeps the planner on their index: it
        # would rather walk the whole scope by (scope, archived) than look a list up.
        unary = "+" if where.keys is not None or where.title_norms is not None else ""
        clauses.append(f"{unary}{prefix}archived = ?")
        parameters.append(int(where.archived))
    return " AND ".join(clauses), parameters


def _title_clause(norms: tuple[str, ...], keyed: bool | None, prefix: str) -> tuple[str, list[Any]]:
    """The condition "the normalised title is one of `norms`". An unkeyed entry is found by
    its title's hash (indexed), then the title itself; a keyed one keeps no hash, so where
    keyed entries may match, their titles are compared directly."""
    if not norms:
        return "0", []
    titles = f"{_TITLE_NORM}({prefix}title, {prefix}body) IN ({_marks(norms)})"
    hashes = f"{prefix}title_hash IN ({_marks(norms)})"
    parameters = [*map(title_hash, norms), *norms]
    if keyed is False:
        return f"{hashes} AND {titles}", parameters
    return f"({hashes} OR {prefix}key IS NOT NULL) AND {titles}", parameters


def _id_order(connection: sqlite3.Connection) -> str:
    known = connection.execute("SELECT 1 FROM memory_meta WHERE name = ?", (_TEXT_IDS,))
    return _ID_ORDER if known.fetchone() else "id"


def _note_text_ids(connection: sqlite3.Connection) -> None:
    connection.execute(
        "INSERT OR IGNORE INTO memory_meta (name, value) VALUES (?, '1')", (_TEXT_IDS,)
    )


def _select(
    connection: sqlite3.Connection,
    where: EntryFilter,
    order: Order,
    descending: bool,
    limit: int | None,
    offset: int,
    id_order: str | None = None,
) -> list[Entry]:
    """`id_order`: how ties are broken (`_id_order`), when the caller knows it."""
    clause, parameters = _where(where, "")
    direction = "DESC" if descending else "ASC"
    ties = id_order or _id_order(connection)
    statement = (
        f"SELECT {_COLUMNS} FROM memory_entries WHERE {clause} "
        f"ORDER BY {_ORDERS[order]} {direction}, {ties} {direction} "
        "LIMIT ? OFFSET ?"
    )
    rows = connection.execute(statement, [*parameters, -1 if limit is None else limit, offset])
    return [_entry_of(row) for row in rows.fetchall()]


def _count(connection: sqlite3.Connection, where: EntryFilter) -> int:
    clause, parameters = _where(where, "")
    row = connection.execute(f"SELECT COUNT(*) FROM memory_entries WHERE {clause}", parameters)
    return int(row.fetchone()[0])


def _tally(
    connection: sqlite3.Connection, where: EntryFilter, by: tuple[Dimension, ...], min_count: int
) -> list[tuple[tuple[str | None, ...], int]]:
    """Grouped by the stored values (a bucket level by first days), each group's values then
    read as the dimensions give them, the groups that read the same merged (the days of a
    week), and ordered as SQL orders text descending (None last)."""
    clause, parameters = _where(where, "")
    columns = ", ".join(_DIMENSIONS[dimension] for dimension in by)
    totals: dict[tuple[str | None, ...], int] = {}
    for *values, total in connection.execute(
        f"SELECT {columns}, COUNT(*) FROM memory_entries WHERE {clause} GROUP BY {columns}",
        parameters,
    ):
        group = tuple(_dimension_value(d, v) for d, v in zip(by, values, strict=True))
        totals[group] = totals.get(group, 0) + int(total)
    kept = [(group, total) for group, total in totals.items() if total >= min_count]
    return sorted(
        kept,
        key=lambda item: tuple((value is not None, value or "") for value in item[0]),
        reverse=True,
    )


def _dimension_value(dimension: Dimension, stored: Any) -> str | None:
    if stored is None:
        return None
    if dimension == "kind":
        return KIND_NAMES[stored]
    if dimension in ("day", "week", "month", "year"):
        return day_keys(stored)[dimension]
    return cast(str, stored)
