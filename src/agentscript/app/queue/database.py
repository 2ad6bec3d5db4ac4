"""One connection to the queue's own database (the SQLite file or the PostgreSQL database DBOS
keeps its tables in), for the small tables agentscript keeps beside DBOS's: workers'
heartbeats and the counters of the limits every worker shares. Both dialects take the same
SQL here but for the parameter mark, and `exclusive()` serialises the writers of every worker
process on every machine."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any


class QueueDatabase:
    """Safe to share between the threads of one worker (one statement at a time)."""

    def __init__(self, url: str) -> None:
        self.sqlite = url.startswith("sqlite:///")
        self._connection: Any
        if self.sqlite:
            self._connection = sqlite3.connect(
                url.removeprefix("sqlite:///"),
                timeout=30,
                isolation_level=None,
                check_same_thread=False,
            )
            # Write-ahead logging, kept by the file for every connection (DBOS's too): one
            # sync a commit instead of a rollback journal's several, and readers beside the
            # writer. Commits stay as durable.
            self._connection.execute("PRAGMA journal_mode=WAL")
            self.mark = "?"
        else:
            import psycopg

            self._connection = psycopg.connect(url, autocommit=True)
            self.mark = "%s"
        self._lock = threading.RLock()

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement (`?` marks its parameters) and return its rows, if any."""
        with self._lock:
            cursor = self._connection.execute(sql.replace("?", self.mark), tuple(parameters))
            return list(cursor.fetchall()) if cursor.description is not None else []

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """A transaction no other writer of the queue's database runs beside: SQLite's
        `BEGIN IMMEDIATE`, PostgreSQL's transaction-scoped advisory lock."""
        with self._lock:
            self._connection.execute("BEGIN IMMEDIATE" if self.sqlite else "BEGIN")
            try:
                if not self.sqlite:
                    self._connection.execute("SELECT pg_advisory_xact_lock(726173)")
                yield
            except BaseException:
                self._connection.execute("ROLLBACK")
                raise
            self._connection.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._connection.close()
