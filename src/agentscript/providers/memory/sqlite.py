"""`sqlite://path.db#namespace`: records in one `memory_records` table, one namespace per URI.

The database runs in WAL mode with `synchronous=FULL`: every commit fsyncs the log before
`add` returns, so an acknowledged record survives a process crash and a power loss alike
(NORMAL would only survive the former). Writers take the write lock up front (`BEGIN
IMMEDIATE`) and wait up to `BUSY_TIMEOUT_SECONDS` for it, so concurrent processes queue
instead of failing. Databases written by the 0.1.0 runtime are upgraded in place on open.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agentscript.providers.memory.rules import Envelope, MemoryQuery
from agentscript.providers.memory.sql import (
    SqlDialect,
    envelopes,
    parse_record,
    row_values,
    search_column,
)
from agentscript.providers.memory.store import MemoryStoreError

BUSY_TIMEOUT_SECONDS = 60.0

DIALECT = SqlDialect(
    name="sqlite",
    placeholder="?",
    contains="instr(search_text, {p}) > 0",
    # Numbered inside the insert's own write transaction, so numbers never collide. (The
    # rowid is not a stable order: VACUUM may renumber a table without an INTEGER PRIMARY KEY.)
    seq_column=", seq",
    seq_value=", (SELECT COALESCE(MAX(seq), 0) + 1 FROM memory_records)",
)

_TABLE = """CREATE TABLE IF NOT EXISTS memory_records (
        namespace TEXT NOT NULL,
        id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        kind TEXT,
        text TEXT,
        record_json TEXT NOT NULL,
        seq INTEGER,
        search_text TEXT,
        PRIMARY KEY (namespace, id)
    )"""
_INDEXES = (
    "CREATE UNIQUE INDEX IF NOT EXISTS memory_records_seq ON memory_records (seq)",
    "CREATE INDEX IF NOT EXISTS memory_records_kind "
    "ON memory_records (namespace, kind, created_at, seq)",
    "CREATE INDEX IF NOT EXISTS memory_records_recent "
    "ON memory_records (namespace, created_at, seq)",
)


class SqliteStore:
    """A MemoryStore over one namespace of a SQLite file, with one connection kept open for
    the run and shared by its threads one operation at a time."""

    def __init__(self, path: Path, namespace: str) -> None:
        self.path = path
        self.namespace = namespace
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def add(self, envelope: Envelope) -> None:
        with self._lock, self._errors():
            connection = self._open()
            with _write_transaction(connection):
                connection.execute(DIALECT.insert(), row_values(self.namespace, envelope))

    def query(self, query: MemoryQuery) -> list[Envelope]:
        with self._lock, self._errors():
            if not self.path.exists() and self._connection is None:
                return []
            statement, parameters = DIALECT.select(query)
            cursor = self._open().execute(statement, [self.namespace, *parameters])
            try:
                return query.select(envelopes(DIALECT, cursor))
            finally:
                cursor.close()

    def export(self) -> Iterator[Envelope]:
        """Streams from a connection of its own, in one read transaction, so a long export
        neither blocks this store's other operations nor sees a half-written state."""
        if not self.path.exists():
            return
        with self._lock, self._errors():
            self._open()
        with self._errors():
            connection = _connect(self.path)
            try:
                connection.execute("BEGIN")
                yield from envelopes(
                    DIALECT, connection.execute(DIALECT.select_all(), [self.namespace])
                )
                connection.execute("COMMIT")
            finally:
                connection.close()

    def import_envelopes(self, items: list[Envelope]) -> int:
        with self._lock, self._errors():
            connection = self._open()
            rows = [row_values(self.namespace, item) for item in items]
            with _write_transaction(connection):
                # Ids already stored are skipped by the insert itself; rowcount sums the rest.
                return connection.executemany(DIALECT.insert(), rows).rowcount

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def _open(self) -> sqlite3.Connection:
        """The store's connection, creating the database, its schema and WAL mode if needed."""
        if self._connection is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = _connect(self.path)
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                with _write_transaction(connection):
                    connection.execute(_TABLE)
                    _upgrade(connection)
                    for statement in _INDEXES:
                        connection.execute(statement)
            except BaseException:
                connection.close()
                raise
            self._connection = connection
        return self._connection

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Database errors as MemoryStoreErrors naming the file."""
        try:
            yield
        except sqlite3.Error as error:
            raise MemoryStoreError(f"SQLite memory {self.path}: {error}") from error


def _connect(path: Path) -> sqlite3.Connection:
    # isolation_level=None: transactions are the explicit BEGIN/COMMIT below, nothing implicit.
    connection = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
    )
    connection.execute("PRAGMA synchronous=FULL")
    return connection


@contextmanager
def _write_transaction(connection: sqlite3.Connection) -> Iterator[None]:
    """`BEGIN IMMEDIATE` takes the write lock first, so a writer waits for it (busy timeout)
    instead of failing later when a read transaction could not be upgraded."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def _upgrade(connection: sqlite3.Connection) -> None:
    """Give a 0.1.0 table (no `seq`, no `search_text`) the two columns, numbering its rows in
    rowid order, which was its insertion order."""
    columns = {row[1] for row in connection.execute("PRAGMA table_info(memory_records)")}
    if "seq" in columns:
        return
    connection.execute("ALTER TABLE memory_records ADD COLUMN seq INTEGER")
    connection.execute("ALTER TABLE memory_records ADD COLUMN search_text TEXT")
    rows = connection.execute("SELECT rowid, id, record_json FROM memory_records ORDER BY rowid")
    for seq, (rowid, identifier, record_json) in enumerate(rows.fetchall(), start=1):
        record = parse_record(DIALECT, identifier, record_json)
        connection.execute(
            "UPDATE memory_records SET seq = ?, search_text = ? WHERE rowid = ?",
            (seq, search_column(record), rowid),
        )
