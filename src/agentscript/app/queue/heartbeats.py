"""Workers' heartbeats, in the queue's own database: how a live worker tells that another died.

One row per live worker (`agentscript_workers`: executor id, last beat in seconds since the
epoch). A worker beats every second; a row older than the dead-after time belongs to a worker
that was killed or lost its machine, and its pending jobs are handed back to the queue. The
table lives beside DBOS's tables (SQLite file or PostgreSQL database), so workers on other
machines see it.
"""

from __future__ import annotations

import time

from agentscript.app.queue.database import QueueDatabase

_TABLE = (
    "CREATE TABLE IF NOT EXISTS agentscript_workers "
    "(executor_id TEXT PRIMARY KEY, seen_at DOUBLE PRECISION NOT NULL)"
)


class Heartbeats:
    def __init__(self, database: QueueDatabase) -> None:
        self._database = database
        database.execute(_TABLE)

    def beat(self, executor_id: str) -> None:
        self._database.execute(
            "INSERT INTO agentscript_workers (executor_id, seen_at) VALUES (?, ?) "
            "ON CONFLICT (executor_id) DO UPDATE SET seen_at = excluded.seen_at",
            (executor_id, time.time()),
        )

    def dead(self, after_seconds: float, me: str) -> list[str]:
        """The workers not heard from for `after_seconds`, this one never among them."""
        rows = self._database.execute(
            "SELECT executor_id FROM agentscript_workers WHERE seen_at < ? AND executor_id <> ?",
            (time.time() - after_seconds, me),
        )
        return [str(row[0]) for row in rows]

    def forget(self, executor_id: str) -> None:
        self._database.execute(
            "DELETE FROM agentscript_workers WHERE executor_id = ?", (executor_id,)
        )
