"""Where a PostgreSQL database is and a few autocommit connections to it shared by a process's
threads: what both PostgreSQL stores of this project use (memory resources and the memory
service).

A connection goes back to the pool only when it is healthy and outside any transaction;
anything else is closed, so a failure never leaks into the next operation. After a fork the
child starts with no connections: the parent's are left alone (psycopg never closes a
connection in a process other than the one that opened it), so they keep working there. Stores
differ only in how they connect (settings, error type); that is the `connect` parameter, which
is also where psycopg is first imported.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from agentscript.runtime.uris import HIDDEN, SplitUri

if TYPE_CHECKING:
    from psycopg import Connection

# Connections kept per database; a thread that finds them all busy waits for one.
POOL_SIZE = 4
CONNECT_TIMEOUT_SECONDS = 10


@dataclass(frozen=True, slots=True)
class PostgresServer:
    """A database to connect to. The credentials are kept apart from `conninfo` (the URI with
    no user part, no password parameter and no fragment) and handed to libpq as separate
    keywords, so not even libpq's own URI errors can quote them; reprs show `display` only."""

    conninfo: str
    display: str
    user: str | None = field(repr=False, default=None)
    password: str | None = field(repr=False, default=None)

    @classmethod
    def of(cls, parts: SplitUri, display: str) -> PostgresServer:
        """The database a split `postgresql://` URI names, shown as `display`."""
        return cls(
            conninfo=f"{parts.scheme}://{parts.address}",
            display=display,
            user=unquote(parts.user) if parts.user else None,
            password=parts.password,
        )

    def scrub(self, message: str) -> str:
        """`message` with the password replaced, as a last guard on driver errors."""
        if not self.password:
            return message
        for form in sorted({self.password, quote(self.password, safe="")}, key=len, reverse=True):
            message = message.replace(form, HIDDEN)
        return message


class ConnectionPool:
    """Up to `size` connections made by `connect`; `display` names the database (no password)."""

    def __init__(
        self, connect: Callable[[], Connection], display: str, size: int = POOL_SIZE
    ) -> None:
        self._connect = connect
        self.display = display
        self._size = size
        self._idle: list[Connection] = []
        self._opened = 0
        self._available = threading.Condition()
        self._pid = os.getpid()
        self._closed = False

    def __repr__(self) -> str:
        return f"ConnectionPool({self.display!r})"

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        connection = self._acquire()
        try:
            yield connection
        finally:
            self._release(connection)

    def close(self) -> None:
        """Close the idle connections now and the busy ones when they come back."""
        with self._available:
            self._closed = True
            idle, self._idle = self._idle, []
            self._opened -= len(idle)
        for connection in idle:
            connection.close()

    def _acquire(self) -> Connection:
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._idle, self._opened = [], 0
            self._available = threading.Condition()
        with self._available:
            while True:
                while self._idle:
                    connection = self._idle.pop()
                    if not connection.broken:
                        return connection
                    self._opened -= 1
                if self._opened < self._size:
                    break
                self._available.wait()
            self._opened += 1
        try:
            return self._connect()
        except BaseException:
            with self._available:
                self._opened -= 1
                self._available.notify()
            raise

    def _release(self, connection: Connection) -> None:
        if self._pid != os.getpid():
            return  # taken before a fork: the parent's, so not even closed here
        from psycopg.pq import TransactionStatus  # loaded already: `connect` made it

        reusable = (
            not self._closed
            and not connection.closed
            and connection.info.transaction_status == TransactionStatus.IDLE
        )
        with self._available:
            if reusable:
                self._idle.append(connection)
            else:
                self._opened -= 1
            self._available.notify()
        if not reusable:
            connection.close()
