"""`postgresql://user@host:port/db#namespace`: the SQLite design on a shared server, via psycopg 3.

psycopg is the optional extra `agentscript[postgres]` and is imported only when a PostgreSQL
memory is used. Credentials come from the URI or libpq's standard sources (`PGUSER`,
`PGPASSWORD`, `PGHOST`, `~/.pgpass`, ...). A password from the URI is handed to libpq as a
keyword of its own and nowhere else: messages use the scrubbed URI, and driver errors are
scrubbed once more before they are raised.
An `add` is one autocommitted INSERT, acknowledged once the server has flushed its WAL: every
connection sets `synchronous_commit=on` (the server's `fsync` must stay on, as by default).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from types import ModuleType
from typing import TYPE_CHECKING, Any

from agentscript.providers.memory.locations import PostgresLocation
from agentscript.providers.memory.rules import Envelope, MemoryQuery
from agentscript.providers.memory.sql import SqlDialect, envelopes, row_values
from agentscript.providers.memory.store import MemoryStoreError
from agentscript.providers.storage.postgres_connections import (
    CONNECT_TIMEOUT_SECONDS,
    ConnectionPool,
    PostgresServer,
)

if TYPE_CHECKING:
    from psycopg import Connection

# Rows fetched per round trip while reading candidates; a query stops once it has its limit.
FETCH_ROWS = 100

DIALECT = SqlDialect(
    name="postgresql",
    placeholder="%s",
    contains="strpos(search_text, {p}) > 0",
)

# created_at sorts byte-wise ("C"), as SQLite and Python compare it, whatever the database's
# own collation. `seq` is numbered by the server; the advisory lock serialises the
# `IF NOT EXISTS` statements, which are not safe to run concurrently on their own.
_SCHEMA = (
    "SELECT pg_advisory_xact_lock(hashtext('agentscript.memory_records'))",
    """CREATE TABLE IF NOT EXISTS memory_records (
        namespace TEXT NOT NULL,
        id TEXT NOT NULL,
        created_at TEXT COLLATE "C" NOT NULL,
        updated_at TEXT NOT NULL,
        kind TEXT,
        text TEXT,
        record_json TEXT NOT NULL,
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        search_text TEXT,
        PRIMARY KEY (namespace, id)
    )""",
    "CREATE INDEX IF NOT EXISTS memory_records_kind "
    "ON memory_records (namespace, kind, created_at, seq)",
    "CREATE INDEX IF NOT EXISTS memory_records_recent "
    "ON memory_records (namespace, created_at, seq)",
)


def driver() -> ModuleType:
    """psycopg, or an error that says how to install it."""
    try:
        import psycopg
    except ImportError:
        raise MemoryStoreError(
            "PostgreSQL memory needs psycopg: install agentscript[postgres]"
        ) from None
    return psycopg


def connection_pool(server: PostgresServer) -> ConnectionPool:
    """The pool of one server: its connections acknowledge an add once its WAL is flushed."""
    return ConnectionPool(partial(_connect, server), server.display)


def _connect(server: PostgresServer) -> Connection:
    connection: Connection = driver().connect(
        server.conninfo,
        user=server.user,
        password=server.password,
        autocommit=True,
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        application_name="agentscript",
    )
    try:
        # An acknowledged add must survive a server crash, whatever the server's default.
        connection.execute("SET synchronous_commit TO on")
    except BaseException:
        connection.close()
        raise
    return connection


class PostgresStore:
    """A MemoryStore over one namespace of a PostgreSQL database, through a shared pool."""

    def __init__(self, location: PostgresLocation, pool: ConnectionPool) -> None:
        self.location = location
        self._pool = pool
        self._schema_ready = False
        self._schema_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"PostgresStore({self.location.display!r})"

    def add(self, envelope: Envelope) -> None:
        with self._connection() as connection:
            connection.execute(DIALECT.insert(), row_values(self.location.namespace, envelope))

    def query(self, query: MemoryQuery) -> list[Envelope]:
        statement, parameters = DIALECT.select(query)
        batch = max(FETCH_ROWS, query.limit)
        with self._rows(statement, [self.location.namespace, *parameters], batch) as rows:
            return query.select(envelopes(DIALECT, rows))

    def export(self) -> Iterator[Envelope]:
        with self._rows(DIALECT.select_all(), [self.location.namespace], FETCH_ROWS * 10) as rows:
            yield from envelopes(DIALECT, rows)

    def import_envelopes(self, items: list[Envelope]) -> int:
        rows = [row_values(self.location.namespace, item) for item in items]
        with self._connection() as connection, connection.transaction():
            # Ids already stored are skipped by the insert itself; rowcount sums the rest.
            cursor = connection.cursor()
            cursor.executemany(DIALECT.insert(), rows)
            return cursor.rowcount

    def close(self) -> None:
        """The pool belongs to whoever made it (see OpenStores)."""

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        """A pooled connection with the schema in place; driver errors become scrubbed
        MemoryStoreErrors naming the database by its display URI."""
        psycopg = driver()
        try:
            with self._pool.connection() as connection:
                self._ensure_schema(connection)
                yield connection
        except psycopg.Error as error:
            message = self.location.server.scrub(str(error).strip())
            raise MemoryStoreError(
                f"PostgreSQL memory {self.location.display}: {message}"
            ) from None

    @contextmanager
    def _rows(
        self, statement: str, parameters: list[str], batch: int
    ) -> Iterator[Iterable[tuple[Any, ...]]]:
        """The rows of a server-side cursor, fetched `batch` at a time, so a reader can stop
        early (a query at its limit) without pulling the whole namespace over the wire."""
        with (
            self._connection() as connection,
            connection.transaction(),
            connection.cursor(name="agentscript_memory") as cursor,
        ):
            cursor.itersize = batch
            cursor.execute(statement, parameters)
            yield cursor

    def _ensure_schema(self, connection: Connection) -> None:
        with self._schema_lock:
            if self._schema_ready:
                return
            with connection.transaction():
                for statement in _SCHEMA:
                    connection.execute(statement)
            self._schema_ready = True
