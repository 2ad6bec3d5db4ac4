"""Workers' heartbeats, in the queue's own database: how a live worker tells that another died.

One row per live worker (`agentscript_workers`: executor id, last beat in seconds since the
epoch). A worker beats every second; a row older than the dead-after time belongs to a worker
that was killed or lost its machine, and its pending jobs are handed back to the queue. The
table lives beside DBOS's tables (SQLite file or PostgreSQL database), so workers on other
machines see it.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

_TABLE = (
    "CREATE TABLE IF NOT EXISTS agentscript_workers "
    "(executor_id TEXT PRIMARY KEY, seen_at DOUBLE PRECISION NOT NULL)"
)


class Heartbeats:
    def __init__(self, url: str) -> None:
        self._sqlite = url.startswith("sqlite:///")
        self._connection: Any
        if self._sqlite:
            self._connection = sqlite3.connect(
                url.removeprefix("sqlite:///"), timeout=30, isolation_level=None
            )
            self._mark = "?"
        else:
            import psycopg

            self._connection = psycopg.connect(url, autocommit=True)
            self._mark = "%s"
        self._connection.execute(_TABLE)

    def beat(self, executor_id: str) -> None:
        mark = self._mark
        self._connection.execute(
            f"INSERT INTO agentscript_workers (executor_id, seen_at) VALUES ({mark}, {mark}) "
            "ON CONFLICT (executor_id) DO UPDATE SET seen_at = excluded.seen_at",
            (executor_id, time.time()),
        )

    def dead(self, after_seconds: float, me: str) -> list[str]:
        """The workers not heard from for `after_seconds`, this one never among them."""
        mark = self._mark
        rows = self._connection.execute(
            f"SELECT executor_id FROM agentscript_workers WHERE seen_at < {mark} "
            f"AND executor_id <> {mark}",
            (time.time() - after_seconds, me),
        ).fetchall()
        return [str(row[0]) for row in rows]

    def forget(self, executor_id: str) -> None:
        self._connection.execute(
            f"DELETE FROM agentscript_workers WHERE executor_id = {self._mark}", (executor_id,)
        )

    def close(self) -> None:
        self._connection.close()
