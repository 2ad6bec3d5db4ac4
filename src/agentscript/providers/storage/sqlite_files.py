"""SQLite files the way every store of this project uses them.

WAL mode, a long busy timeout (a writer in another process makes us wait, not fail), explicit
`BEGIN IMMEDIATE` write transactions, and one connection per store object guarded by a lock so
the threads of a run take turns. A write inside a write of the same thread joins it, so a
caller can make several store writes one transaction (one commit instead of several). Stores differ only in their schema, their durability level and
the error type they raise; those are parameters here. Imports nothing of ours.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

BUSY_TIMEOUT_SECONDS = 60.0

# FULL: a commit survives power loss (memory stores: never lose an acknowledged record).
# NORMAL: with WAL, a commit survives the process being killed (the run journal).
Synchronous = Literal["FULL", "NORMAL"]


def connect(
    path: Path, synchronous: Synchronous = "FULL", *, incremental_vacuum: bool = False
) -> sqlite3.Connection:
    """A connection in WAL mode with the busy timeout. Transactions are explicit: the module's
    `write_transaction` for writes, nothing implicit (isolation_level=None).

    `incremental_vacuum`: a new file is made in SQLite's incremental auto-vacuum mode, so its
    owner can give free pages back to the file system (`PRAGMA incremental_vacuum`); it has
    to be chosen before the file's first page is written, i.e. before WAL mode. An existing
    file keeps its mode until its next VACUUM, which then takes this one (2, incremental)."""
    connection = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
    )
    try:
        # Set only when not set: setting it again writes the file's header (a commit).
        if incremental_vacuum and connection.execute("PRAGMA auto_vacuum").fetchone()[0] != 2:
            connection.execute("PRAGMA auto_vacuum=INCREMENTAL")
        _enter_wal_mode(connection)
        connection.execute(f"PRAGMA synchronous={synchronous}")
    except BaseException:
        connection.close()
        raise
    return connection


def _enter_wal_mode(connection: sqlite3.Connection) -> None:
    """Switch to WAL unless the file already uses it. Switching needs the database to itself
    and SQLite does not wait for that, so a file another process is creating at this moment is
    retried until the busy timeout, like any other lock."""
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    delay = 0.001
    while True:
        try:
            if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) and "busy" not in str(error):
                raise
            if time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.1)


def execute_rows(
    connection: sqlite3.Connection, statement: str, rows: Sequence[Sequence[object]]
) -> None:
    """Run `statement` for each of `rows`: `executemany` for several, a plain `execute` for
    one (which is what a single write has, and executemany's setup costs more than that)."""
    if len(rows) == 1:
        connection.execute(statement, rows[0])
    elif rows:
        connection.executemany(statement, rows)


@contextmanager
def write_transaction(connection: sqlite3.Connection) -> Iterator[None]:
    """`BEGIN IMMEDIATE` takes the write lock first, so a writer waits for it (busy timeout)
    instead of failing later when a read transaction could not be upgraded."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


class SqliteFile:
    """One store's lock-guarded connection to a SQLite file, opened on first use.

    `prepare` creates the schema inside the first write transaction; `failure` turns a
    `sqlite3.Error` into the store's own error type (naming the file). Reading a file that
    does not exist yet yields None instead of creating it.
    """

    def __init__(
        self,
        path: Path,
        prepare: Callable[[sqlite3.Connection], None],
        failure: Callable[[sqlite3.Error], Exception],
        synchronous: Synchronous = "FULL",
    ) -> None:
        self.path = path
        self._prepare = prepare
        self._failure = failure
        self._synchronous: Synchronous = synchronous
        self._connection: sqlite3.Connection | None = None
        # Re-entrant: a write (or read) inside a write of the same thread joins it.
        self._lock = threading.RLock()
        self._writing = False

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """The connection inside a write transaction, committed when the outermost `writing`
        block of this thread ends (an inner one joins the transaction already open)."""
        with self._lock, self.errors():
            connection = self._open()
            if self._writing:
                yield connection
                return
            self._writing = True
            try:
                with write_transaction(connection):
                    yield connection
            finally:
                self._writing = False

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection | None]:
        """The connection for reads, or None when the file does not exist yet."""
        with self._lock, self.errors():
            if self._connection is None and not self.path.exists():
                yield None
                return
            yield self._open()

    @contextmanager
    def errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as error:
            raise self._failure(error) from error

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def _open(self) -> sqlite3.Connection:
        if self._connection is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = connect(self.path, self._synchronous)
            try:
                with write_transaction(connection):
                    self._prepare(connection)
            except BaseException:
                connection.close()
                raise
            self._connection = connection
        return self._connection
