"""Each index of the SQLite entries table serves a query the service sends, and each such query
finds its index: a scope of 100k entries is never walked to answer one of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscript.memory import EntryFilter, SqliteStore
from agentscript.memory.sqlite_store import _COLUMNS, _ORDERS, _where

SCOPE = ("/plans/workspace",)


@pytest.mark.parametrize(
    ("where", "order", "index"),
    [
        # browse, digest, history: newest first
        (EntryFilter(scopes=SCOPE), "updated", "memory_entries_updated"),
        # list --since/--until, recap: a time window, in event order
        (
            EntryFilter(scopes=SCOPE, since="2026-05-01T00:00:00.000Z", until="2026-05-08"),
            "event",
            "memory_entries_event",
        ),
        # compaction's sources of a day, the timeline's groups of a week
        (
            EntryFilter(
                scopes=SCOPE, kinds=("episodic",), levels=(None,), bucket=("day", "2026-05-04")
            ),
            "event",
            "memory_entries_bucket",
        ),
        (
            EntryFilter(
                scopes=SCOPE, kinds=("summary",), levels=("day",), bucket=("week", "2026-W19")
            ),
            "event",
            "memory_entries_bucket",
        ),
        # a key's versions (history) and its active entry
        (EntryFilter(scopes=SCOPE, key="colour", archived=None), "updated", "memory_entries_key"),
        # a remember's merge candidate
        (
            EntryFilter(scopes=SCOPE, kinds=("knowledge",), title_norm="a", keyed=False),
            "created",
            "memory_entries_title",
        ),
        # get, forget, update by id
        (
            EntryFilter(scopes=SCOPE, ids=("5d0f7a52-3c1e-4f8e-9a57-0b7f4c2d9e11",)),
            "updated",
            "sqlite_autoindex_memory_entries_1",
        ),
    ],
)
def test_a_query_of_the_service_uses_its_index(
    tmp_path: Path, where: EntryFilter, order: str, index: str
) -> None:
    store = SqliteStore(tmp_path / "memory.db")
    try:
        clause, parameters = _where(where, "")
        with store.transaction() as tx:
            plan = tx._connection.execute(
                f"EXPLAIN QUERY PLAN SELECT id FROM memory_entries WHERE {clause} "
                f"ORDER BY {_ORDERS[order]} LIMIT 20",
                parameters,
            ).fetchall()
        searches = [row[3] for row in plan if "memory_entries " in row[3]]
        assert searches and f"USING INDEX {index} " in searches[0], plan
    finally:
        store.close()


def test_ranking_loads_its_matches_by_rowid(tmp_path: Path) -> None:
    """`entries_at` looks each match up by its seq (the rowid), never walks the scope."""
    store = SqliteStore(tmp_path / "memory.db")
    try:
        clause, parameters = _where(EntryFilter(scopes=SCOPE, archived=False), "")
        with store.transaction() as tx:
            plan = tx._connection.execute(
                f"EXPLAIN QUERY PLAN SELECT {_COLUMNS} FROM memory_entries "
                f"WHERE seq IN (SELECT value FROM json_each(?)) AND {clause}",
                ["[1, 2, 3]", *parameters],
            ).fetchall()
        searches = [row[3] for row in plan if "memory_entries " in row[3]]
        assert searches == ["SEARCH memory_entries USING INTEGER PRIMARY KEY (rowid=?)"], plan
    finally:
        store.close()
