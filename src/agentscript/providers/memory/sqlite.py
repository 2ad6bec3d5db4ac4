"""`sqlite://path.db#namespace`: records in one `memory_records` table, one namespace per URI.

The database runs in WAL mode with `synchronous=FULL`: every commit fsyncs the log before
`add` returns, so an acknowledged record survives a process crash and a power loss alike
(NORMAL would only survive the former). Writers take the write lock up front (`BEGIN
IMMEDIATE`) and wait for it, so concurrent processes queue
instead of failing (see agentscript.providers.storage.sqlite_files). Databases written by the 0.1.0 runtime are
upgraded in place on open.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
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
from agentscript.providers.storage.sqlite_files import SqliteFile, connect

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
        self._file = SqliteFile(
            path, _prepare, lambda error: MemoryStoreError(f"SQLite memory {path}: {error}")
        )

    def add(self, envelope: Envelope) -> None:
        with self._file.writing() as connection:
            connection.execute(DIALECT.insert(), row_values(self.namespace, envelope))

    def query(self, query: MemoryQuery) -> list[Envelope]:
        with self._file.reading() as connection:
            if connection is None:
                return []
            statement, parameters = DIALECT.select(query)
            cursor = connection.execute(statement, [self.namespace, *parameters])
            try:
                return query.select(envelopes(DIALECT, cursor))
            finally:
                cursor.close()

    def export(self) -> Iterator[Envelope]:
        """Streams from a connection of its own, in one read transaction, so a long export
        neither blocks this store's other operations nor sees a half-written state."""
        with self._file.reading() as existing:
            if existing is None:
                return
        with self._file.errors():
            connection = connect(self.path)
            try:
                connection.execute("BEGIN")
                yield from envelopes(
                    DIALECT, connection.execute(DIALECT.select_all(), [self.namespace])
                )
                connection.execute("COMMIT")
            finally:
                connection.close()

    def import_envelopes(self, items: list[Envelope]) -> int:
        rows = [row_values(self.namespace, item) for item in items]
        with self._file.writing() as connection:
            # Ids already stored are skipped by the insert itself; rowcount sums the rest.
            return connection.executemany(DIALECT.insert(), rows).rowcount

    def close(self) -> None:
        self._file.close()


def _prepare(connection: sqlite3.Connection) -> None:
    """The table, its indexes, and the upgrade of a table written by the 0.1.0 runtime."""
    connection.execute(_TABLE)
    _upgrade(connection)
    for statement in _INDEXES:
        connection.execute(statement)


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
