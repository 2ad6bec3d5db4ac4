"""The default store: one SQLite file (`~/.agentscript/memory.db` unless told otherwise).

Entries live in `memory_entries`; their analysed terms in the FTS5 table `memory_terms`, whose
`ascii` tokenizer splits only on the spaces between our terms, so FTS5 indexes exactly what the
Analyzer produced and ranks it with its own BM25. Every entry's scope is also an indexed term
(`scope_term`, weight 0), so a text search intersects with the scope inside the index, and the
SQL that joins the entries names the scopes again.

The file runs in WAL mode with `synchronous=FULL` and a long busy timeout; writers take the lock
first (`BEGIN IMMEDIATE`), so processes queue instead of failing, and an acknowledged write has
been fsynced. Only `touch` (accessed_at bookkeeping) commits with `synchronous=NORMAL`.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from agentscript.memory.entries import Entry
from agentscript.memory.errors import STORE_FAILURE, MemoryServiceError
from agentscript.memory.store import (
    ENTRY_COLUMNS,
    INDEXED_FIELDS,
    Dimension,
    EntryFilter,
    Match,
    Order,
    ScopeCount,
    StoreConflict,
    TextQuery,
    entry_from_row,
    entry_row,
    index_terms,
    indexed_text,
    json_list,
    matching_vectors,
    pack_vector,
)
from agentscript.memory.text import DEFAULT_ANALYZER, Analyzer
from agentscript.providers.storage.sqlite_files import connect, write_transaction

SCHEMA_VERSION = "1"

_COLUMNS = ", ".join(ENTRY_COLUMNS)
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS memory_entries (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        scope TEXT NOT NULL,
        kind TEXT NOT NULL,
        key TEXT,
        title TEXT NOT NULL,
        title_norm TEXT NOT NULL,
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
        source TEXT NOT NULL,
        archive_ref TEXT NOT NULL,
        reinforce_count INTEGER NOT NULL,
        superseded_by TEXT,
        session TEXT
    )""",
    "CREATE UNIQUE INDEX IF NOT EXISTS memory_entries_active_key "
    "ON memory_entries (scope, key) WHERE key IS NOT NULL AND archived = 0",
    "CREATE UNIQUE INDEX IF NOT EXISTS memory_entries_active_summary "
    "ON memory_entries (scope, level, bucket) WHERE kind = 'summary' AND archived = 0",
    "CREATE INDEX IF NOT EXISTS memory_entries_title "
    "ON memory_entries (scope, kind, title_norm) WHERE archived = 0",
    "CREATE INDEX IF NOT EXISTS memory_entries_key ON memory_entries (scope, key) "
    "WHERE key IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS memory_entries_updated "
    "ON memory_entries (scope, archived, updated_at)",
    "CREATE INDEX IF NOT EXISTS memory_entries_event ON memory_entries (scope, event_time)",
    "CREATE INDEX IF NOT EXISTS memory_entries_day ON memory_entries (scope, kind, day)",
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS memory_terms USING fts5(
        scope_term, {", ".join(INDEXED_FIELDS)}, tokenize = 'ascii'
    )""",
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
_DIMENSIONS: dict[str, str] = {
    "scope": "scope",
    "kind": "kind",
    "level": "level",
    "archived": "CAST(archived AS TEXT)",
    "title_norm": "title_norm",
    "day": "day",
    "week": "week",
    "month": "month",
    "year": "year",
}
_ORDERS: dict[str, str] = {"updated": "updated_at", "event": "event_time", "created": "created_at"}


def scope_term(scope: str) -> str:
    """The term standing for a scope in the text index: letters and digits only."""
    return "s" + hashlib.sha256(scope.encode("utf-8")).hexdigest()[:24]


class SqliteStore:
    """A MemoryStore over one SQLite file, one connection per store, shared by threads one
    operation at a time. Open one store per process: a connection never crosses a fork."""

    def __init__(self, path: str | Path, analyzer: Analyzer = DEFAULT_ANALYZER) -> None:
        self.path = Path(path)
        self.analyzer = analyzer
        self._lock = threading.RLock()
        self._connection: sqlite3.Connection | None = None

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
            return _select(connection, where, order, descending, limit, offset)

    def count(self, where: EntryFilter) -> int:
        with self._reading() as connection:
            return _count(connection, where)

    def tally(
        self, where: EntryFilter, by: tuple[Dimension, ...], *, min_count: int = 1
    ) -> list[tuple[tuple[str | None, ...], int]]:
        with self._reading() as connection:
            return _tally(connection, where, by, min_count)

    def search(self, query: TextQuery, where: EntryFilter, limit: int) -> list[Match]:
        terms = [term for term in query.terms if term.isalnum()]
        if not terms or limit <= 0:
            return []
        clause, parameters = _where(where, "e.")
        scopes = " OR ".join(f'"{scope_term(scope)}"' for scope in where.scopes)
        wanted = " OR ".join(f'"{term}"' for term in dict.fromkeys(terms))
        expression = f"scope_term : ({scopes}) AND {{{' '.join(INDEXED_FIELDS)}}} : ({wanted})"
        weights = ", ".join(f"{weight!r}" for weight in (0.0, *query.weights.as_tuple()))
        statement = (
            "SELECT e.id, bm25(memory_terms, "
            f"{weights}) AS rank, e.session, CASE WHEN e.kind IN ('episodic', 'summary') "
            "THEN e.event_time ELSE e.updated_at END, e.bucket "
            "FROM memory_terms JOIN memory_entries AS e ON e.seq = memory_terms.rowid "
            f"WHERE memory_terms MATCH ? AND {clause} ORDER BY rank, e.id LIMIT ?"
        )
        with self._reading() as connection:
            rows = connection.execute(statement, [expression, *parameters, limit]).fetchall()
        # FTS5's bm25() is negative, better matches lower; the contract wants positive, higher.
        return [
            Match(identifier, -float(rank), session, recency, bucket)
            for identifier, rank, session, recency, bucket in rows
        ]

    def scopes(self) -> list[ScopeCount]:
        with self._reading() as connection:
            rows = connection.execute(
                "SELECT scope, SUM(archived = 0), SUM(archived = 1) FROM memory_entries "
                "GROUP BY scope ORDER BY scope"
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
                    yield _entry_of(row)
                connection.execute("COMMIT")
            finally:
                connection.close()

    def verify(self) -> list[str]:
        problems: list[str] = []
        with self._reading() as connection:
            for (result,) in connection.execute("PRAGMA quick_check"):
                if result != "ok":
                    problems.append(f"SQLite integrity: {result}")
            entries = connection.execute("SELECT COUNT(*) FROM memory_entries").fetchone()[0]
            indexed = connection.execute("SELECT COUNT(*) FROM memory_terms").fetchone()[0]
            if entries != indexed:
                problems.append(
                    f"the text index holds {indexed} rows for {entries} entries "
                    "(SqliteStore.rebuild_index rebuilds it from the entries)"
                )
            try:
                connection.execute(
                    "INSERT INTO memory_terms (memory_terms) VALUES ('integrity-check')"
                )
            except sqlite3.DatabaseError as error:
                problems.append(f"the text index is damaged: {error}")
            missing = connection.execute(
                "SELECT COUNT(*) FROM memory_entries WHERE seq NOT IN "
                "(SELECT rowid FROM memory_terms)"
            ).fetchone()[0]
            if missing:
                problems.append(f"{missing} entries are missing from the text index")
        return problems

    # ---------------------------------------------------------------------------- writes

    @contextmanager
    def transaction(self) -> Iterator[_Transaction]:
        with self._lock, self._errors():
            connection = self._open()
            with write_transaction(connection):
                yield _Transaction(connection, self.analyzer)

    def touch(self, scopes: tuple[str, ...], ids: tuple[str, ...], moment: str) -> None:
        if not ids:
            return
        EntryFilter(scopes=scopes)  # the same scope check as every read
        with self._bookkeeping() as connection:
            connection.execute(
                f"UPDATE memory_entries SET accessed_at = ? WHERE +scope IN "
                f"({_marks(scopes)}) AND id IN ({_marks(ids)})",
                [moment, *scopes, *ids],
            )

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
                f"WHERE v.model = ? AND e.scope IN ({_marks(scopes)}) "
                f"AND e.id IN ({_marks(list(digests))})",
                [model, *scopes, *digests],
            ).fetchall()
        return matching_vectors(rows, digests)

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
                f"AND scope IN ({_marks(scopes)})",
                [
                    [model, digest, pack_vector(vector), identifier, *scopes]
                    for identifier, (digest, vector) in vectors.items()
                ],
            )

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
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
                    for statement in _SCHEMA:
                        connection.execute(statement)
                    self._prepare_index(connection)
            except BaseException:
                connection.close()
                raise
            self._connection = connection
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
        """Re-create the text index from the entries: the index is derived data, so this is
        always safe, and it repairs an index that `verify` reports as damaged."""
        with self._lock, self._errors():
            connection = self._open()
            with write_transaction(connection):
                _rebuild(connection, self.analyzer)

    def scrub(self) -> None:
        """Leave no trace of deleted text in the files: the text index keeps a deleted
        entry's terms in its older segments until they are merged, so merge them all (FTS5
        `optimize`), then copy the WAL into the database and empty it. Freed pages are zeroed
        (secure_delete). Costs a pass over the index: for purges, not for every write."""
        with self._lock, self._errors():
            connection = self._open()
            with write_transaction(connection):
                connection.execute("INSERT INTO memory_terms(memory_terms) VALUES ('optimize')")
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
    """The StoreTransaction of a SqliteStore: runs on its connection inside BEGIN IMMEDIATE."""

    def __init__(self, connection: sqlite3.Connection, analyzer: Analyzer) -> None:
        self._connection = connection
        self._analyzer = analyzer

    def select(
        self,
        where: EntryFilter,
        *,
        order: Order = "updated",
        descending: bool = True,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Entry]:
        return _select(self._connection, where, order, descending, limit, offset)

    def count(self, where: EntryFilter) -> int:
        return _count(self._connection, where)

    def tally(
        self, where: EntryFilter, by: tuple[Dimension, ...], *, min_count: int = 1
    ) -> list[tuple[tuple[str | None, ...], int]]:
        return _tally(self._connection, where, by, min_count)

    def insert(self, entry: Entry) -> None:
        values = entry_row(entry, json_list)
        with _conflicts(entry):
            cursor = self._connection.execute(
                f"INSERT INTO memory_entries ({', '.join(values)}) VALUES ({_marks(list(values))})",
                list(values.values()),
            )
        _index(self._connection, cast(int, cursor.lastrowid), entry, self._analyzer)

    def replace(self, entry: Entry) -> None:
        found = self._connection.execute(
            f"SELECT seq, {_COLUMNS} FROM memory_entries WHERE id = ? AND +scope = ?",
            (entry.id, entry.scope),
        ).fetchone()
        if found is None:
            raise StoreConflict(f"entry {entry.id} does not exist in scope {entry.scope}")
        seq, previous = int(found[0]), _entry_of(found[1:])
        values = entry_row(entry, json_list)
        with _conflicts(entry):
            self._connection.execute(
                f"UPDATE memory_entries SET {', '.join(f'{name} = ?' for name in values)} "
                "WHERE seq = ?",
                [*values.values(), seq],
            )
        if indexed_text(previous) != indexed_text(entry):
            self._connection.execute("DELETE FROM memory_terms WHERE rowid = ?", (seq,))
            self._connection.execute(
                "DELETE FROM memory_vectors WHERE seq IN "
                "(SELECT seq FROM memory_entries WHERE seq = ? AND +scope = ?)",
                (seq, entry.scope),
            )
            _index(self._connection, seq, entry, self._analyzer)

    def delete(self, scope: str, ids: tuple[str, ...]) -> int:
        if not ids:
            return 0
        where = f"+scope = ? AND id IN ({_marks(ids)})"
        for table, column in (("memory_terms", "rowid"), ("memory_vectors", "seq")):
            self._connection.execute(
                f"DELETE FROM {table} WHERE {column} IN (SELECT seq FROM memory_entries "
                f"WHERE {where})",
                [scope, *ids],
            )
        cursor = self._connection.execute(
            f"DELETE FROM memory_entries WHERE {where}", [scope, *ids]
        )
        return cursor.rowcount


# ------------------------------------------------------------------------------- helpers


def _connect(path: Path) -> sqlite3.Connection:
    connection = connect(path, "FULL")
    # Freed pages are zeroed, so a purged entry's text does not linger in the file.
    connection.execute("PRAGMA secure_delete=ON")
    return connection


def _rebuild(connection: sqlite3.Connection, analyzer: Analyzer) -> None:
    """Index every entry again with `analyzer` and record its signature (inside a write)."""
    connection.execute("DELETE FROM memory_terms")
    rows = connection.execute(f"SELECT seq, {_COLUMNS} FROM memory_entries").fetchall()
    for row in rows:
        _index(connection, int(row[0]), _entry_of(row[1:]), analyzer)
    connection.executemany(
        "INSERT OR REPLACE INTO memory_meta (name, value) VALUES (?, ?)",
        [("schema", SCHEMA_VERSION), ("analyzer", analyzer.signature)],
    )


@contextmanager
def _conflicts(entry: Entry) -> Iterator[None]:
    try:
        yield
    except sqlite3.IntegrityError as error:
        text = str(error)
        if "memory_entries.scope, memory_entries.key" in text:
            message = f"scope {entry.scope} already has an active entry with key {entry.key!r}"
        elif "memory_entries.scope, memory_entries.level" in text:
            message = (
                f"scope {entry.scope} already has an active {entry.level} summary for bucket "
                f"{entry.bucket}"
            )
        elif "memory_entries.id" in text:
            message = f"an entry with id {entry.id} already exists"
        else:
            raise
        raise StoreConflict(message) from error


def _marks(values: Sequence[object]) -> str:
    return ", ".join("?" * len(values))


def _index(connection: sqlite3.Connection, seq: int, entry: Entry, analyzer: Analyzer) -> None:
    terms = index_terms(entry, analyzer)
    connection.execute(
        f"INSERT INTO memory_terms (rowid, scope_term, {', '.join(INDEXED_FIELDS)}) "
        f"VALUES (?, ?, {_marks(INDEXED_FIELDS)})",
        [seq, scope_term(entry.scope), *(" ".join(terms[name]) for name in INDEXED_FIELDS)],
    )


def _entry_of(row: Sequence[Any]) -> Entry:
    return entry_from_row(row, json.loads)


def _where(where: EntryFilter, prefix: str) -> tuple[str, list[Any]]:
    """The SQL condition of a filter; the scope predicate always comes first. With ids, the
    scope column is written `+scope` so the planner looks the ids up by their unique index
    instead of scanning the scope (the predicate still applies to every row)."""
    column = f"+{prefix}scope" if where.ids is not None else f"{prefix}scope"
    clauses = [f"{column} IN ({_marks(where.scopes)})"]
    parameters: list[Any] = list(where.scopes)
    if where.ids is not None:
        clauses.append(f"{prefix}id IN ({_marks(where.ids)})" if where.ids else "0")
        parameters.extend(where.ids)
    if where.kinds is not None:
        clauses.append(f"{prefix}kind IN ({_marks(where.kinds)})" if where.kinds else "0")
        parameters.extend(where.kinds)
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
    if where.title_norm is not None:
        clauses.append(f"{prefix}title_norm = ?")
        parameters.append(where.title_norm)
    if where.since is not None:
        clauses.append(f"{prefix}event_time >= ?")
        parameters.append(where.since)
    if where.until is not None:
        clauses.append(f"{prefix}event_time < ?")
        parameters.append(where.until)
    if where.bucket is not None:
        level, key = where.bucket
        clauses.append(f"{prefix}{_DIMENSIONS[level]} = ?")
        parameters.append(key)
    if where.archived is not None:
        clauses.append(f"{prefix}archived = ?")
        parameters.append(int(where.archived))
    return " AND ".join(clauses), parameters


def _select(
    connection: sqlite3.Connection,
    where: EntryFilter,
    order: Order,
    descending: bool,
    limit: int | None,
    offset: int,
) -> list[Entry]:
    clause, parameters = _where(where, "")
    direction = "DESC" if descending else "ASC"
    statement = (
        f"SELECT {_COLUMNS} FROM memory_entries WHERE {clause} "
        f"ORDER BY {_ORDERS[order]} {direction}, id {direction} LIMIT ? OFFSET ?"
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
    clause, parameters = _where(where, "")
    columns = ", ".join(_DIMENSIONS[dimension] for dimension in by)
    ordering = ", ".join(f"{index + 1} DESC" for index in range(len(by)))
    rows = connection.execute(
        f"SELECT {columns}, COUNT(*) FROM memory_entries WHERE {clause} GROUP BY {columns} "
        f"HAVING COUNT(*) >= ? ORDER BY {ordering}",
        [*parameters, min_count],
    ).fetchall()
    return [(tuple(row[:-1]), int(row[-1])) for row in rows]
