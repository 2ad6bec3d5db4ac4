"""Writes at scale, on SQLite and PostgreSQL: remember_many, the kept active-entry counts that
enforce the cap, linked context of plain turns, and accessed_at kept off the read path."""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from agentscript.memory import (
    EntryFilter,
    MemoryConfig,
    MemoryService,
    MemoryServiceError,
    SqliteStore,
)
from agentscript.memory.postgres_store import is_postgres_uri
from agentscript.memory.results import RememberResult
from agentscript.memory.sqlite_store import _where
from zygote_support import kill_writers

pytest_plugins = ["memsvc_support"]

WRITER = Path(__file__).parents[1] / "support" / "memsvc_support.py"
CAPPED_WORKERS = 4
KILLS = 8
BATCH = 20
LATEST_KILL_SECONDS = 0.6
PROCESS_TIMEOUT_SECONDS = 600


@pytest.fixture
def memory_backend(each_memory_backend: str) -> str:
    return each_memory_backend


def turn(text: str, session: str = "chat-1", **more: Any) -> dict[str, Any]:
    return {"text": text, "kind": "episodic", "source": {"session": session}, **more}


def active_counts(memory: MemoryService) -> dict[str, int]:
    """The kept counts, read the way the cap reads them, for every scope of the store."""
    scopes = [count.scope for count in memory.store.scopes()]
    with memory.store.transaction() as tx:
        return {scope: tx.active_entries(scope) for scope in scopes}


def scanned_counts(memory: MemoryService) -> dict[str, int]:
    return {count.scope: count.active for count in memory.store.scopes()}


# ------------------------------------------------------------------------- remember_many


def test_remember_many_returns_one_result_per_item_in_order(memory: MemoryService) -> None:
    results = memory.remember_many(
        [
            {"text": "Deploys go through make release", "tags": ["deploy"]},
            {"text": "blue", "kind": "fact", "key": "colour"},
            {"text": "green", "kind": "fact", "key": "colour"},
            {"text": "Deploys go through make release", "tags": ["ops"]},
        ]
    )
    assert all(isinstance(result, RememberResult) for result in results)
    assert [result.action for result in results] == ["created", "created", "updated", "merged"]
    assert results[3].id == results[0].id
    assert memory.get(results[0].id)["tags"] == ["deploy", "ops"]
    assert [v["body"] for v in memory.history("colour")["versions"]] == ["green", "blue"]


# Written before the batch (some), then as a batch or one by one: keys superseded and
# reinforced twice over, titles merged into entries older than the batch and into the batch's
# own, turns of two sessions, two scopes, an explicit scope among implicit ones.
EARLIER = [
    {"text": "blue", "kind": "fact", "key": "colour"},
    {"text": "Deploys go through make release", "tags": ["deploy"]},
    turn("Did you ever try pottery?"),
]
MIXED_BATCH = [
    {"text": "green", "kind": "fact", "key": "colour"},
    {"text": "green", "kind": "fact", "key": "colour", "tags": ["again"]},
    {"text": "red", "kind": "fact", "key": "Colour "},
    {"text": "deploys go through  make release", "tags": ["ops"]},
    {"text": "Tabs, not spaces"},
    {"text": "Tabs, not spaces\nin every file", "tags": ["style"]},
    {"text": "Tabs, not spaces", "kind": "episodic"},
    turn("Yes, a bowl."),
    turn("Glazed in blue", session="chat-2"),
    turn("It survived the kiln"),
    {"text": "The user's name is Ada", "kind": "fact", "key": "user.name", "scope": "global"},
    {"text": "Ada Lovelace", "kind": "fact", "key": "user.name", "scope": "global"},
]


def _stored_state(memory: MemoryService) -> list[tuple[Any, ...]]:
    """Everything stored, ids left out (they are random) but who replaced whom kept."""
    scopes = tuple(count.scope for count in memory.store.scopes())
    entries = list(memory.store.export(scopes))
    order = {entry.id: position for position, entry in enumerate(entries)}
    return [
        (
            entry.kind,
            entry.scope,
            entry.key,
            entry.title,
            entry.body,
            entry.tags,
            entry.archived,
            entry.reinforce_count,
            order.get(entry.superseded_by or ""),
        )
        for entry in entries
    ]


def test_a_batch_stores_what_the_same_remembers_one_by_one_store(
    open_memory: Callable[..., MemoryService],
    memory_backend: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    if memory_backend == "postgres":
        cluster = request.getfixturevalue("memory_postgres")
        one_by_one, batched = (
            open_memory(database=str(cluster.socket_uri(f"t{uuid.uuid4().hex[:12]}")))
            for _ in range(2)
        )
    else:
        one_by_one, batched = (
            open_memory(database=tmp_path / name) for name in ("one.db", "batched.db")
        )
    for memory in (one_by_one, batched):
        memory.remember_many(EARLIER)
    singles = [one_by_one.remember(**item) for item in MIXED_BATCH]
    together = batched.remember_many(MIXED_BATCH)
    assert [(r.action, r.kind, r.title) for r in together] == [
        (r.action, r.kind, r.title) for r in singles
    ]
    assert [r.action for r in together] == [
        "updated",
        "merged",
        "updated",
        "merged",
        "created",
        "merged",
        "created",
        "created",
        "created",
        "created",
        "created",
        "updated",
    ]
    assert _stored_state(batched) == _stored_state(one_by_one)
    assert batched.recall("pottery kiln bowl")["results"][0]["body"] == "It survived the kiln"
    assert active_counts(batched) == scanned_counts(batched) == active_counts(one_by_one)


def test_an_invalid_item_stores_nothing_and_is_named(memory: MemoryService) -> None:
    with pytest.raises(MemoryServiceError) as refused:
        memory.remember_many([{"text": "fine"}, {"text": "bad", "kind": "opinion"}])
    assert refused.value.field == "items[1].kind"
    assert refused.value.message.startswith("items[1].kind: ")
    for items, field in (
        ([{"text": "fine"}, {"body": "no text"}], "items[1].body"),
        ([{"kind": "fact"}], "items[0].text"),
        (["just text"], "items[0]"),
        ({"text": "not a list"}, "items"),
    ):
        with pytest.raises(MemoryServiceError) as refused:
            memory.remember_many(items)  # type: ignore[arg-type]
        assert refused.value.field == field
    assert memory.recall("")["count"] == 0


def test_a_batch_that_would_overfill_its_scope_stores_nothing(
    open_memory: Callable[..., MemoryService],
) -> None:
    memory = open_memory(config=MemoryConfig(max_entries=3))
    memory.remember("first")
    with pytest.raises(MemoryServiceError) as refused:
        memory.remember_many([{"text": "second"}, {"text": "third"}, {"text": "fourth"}])
    assert (refused.value.code, refused.value.field) == ("scope_full", "items[2].max_entries")
    assert memory.stats()["active"] == 1
    assert len(memory.remember_many([{"text": "second"}, {"text": "third"}])) == 2


def test_a_batch_is_limited_to_a_thousand_items(memory: MemoryService) -> None:
    with pytest.raises(MemoryServiceError, match="at most 1000 items"):
        memory.remember_many({"text": f"note {n}"} for n in range(1001))
    assert memory.recall("")["count"] == 0


@pytest.mark.parametrize(
    ("where", "index"),
    [
        (EntryFilter(scopes=("global",), keys=("a", "b")), "memory_entries_key"),
        (
            EntryFilter(
                scopes=("global",), kinds=("knowledge",), title_norms=("a", "b"), keyed=False
            ),
            "memory_entries_title",
        ),
    ],
)
def test_a_batch_looks_its_keys_and_titles_up_in_an_index(
    tmp_path: Path, where: EntryFilter, index: str
) -> None:
    """One query per batch for all its keys (or titles), by the index: never a walk over a
    scope of 100k entries."""
    store = SqliteStore(tmp_path / "memory.db")
    try:
        clause, parameters = _where(where, "")
        with store.transaction() as tx:
            for order in ("", " ORDER BY created_at, id"):
                plan = tx._connection.execute(
                    f"EXPLAIN QUERY PLAN SELECT id FROM memory_entries WHERE {clause}{order}",
                    parameters,
                ).fetchall()
                assert f"USING INDEX {index} " in plan[0][3]
    finally:
        store.close()


# ------------------------------------------------------------------------------ counters


def test_the_cap_follows_the_kept_counts_through_every_kind_of_write(
    open_memory: Callable[..., MemoryService],
) -> None:
    memory = open_memory(config=MemoryConfig(max_entries=3))
    first = memory.remember("one")["id"]
    memory.remember("v1", kind="fact", key="k")
    memory.remember("v2", kind="fact", key="k")  # supersedes: still two active
    memory.remember("one")  # merges: still two
    third = memory.remember("three")["id"]
    with pytest.raises(MemoryServiceError, match="holds 3 active entries"):
        memory.remember("four")
    memory.forget(first)  # archived: room for one
    fourth = memory.remember("four")["id"]
    memory.forget(third, purge=True)
    memory.forget(fourth, purge=True)
    assert len(memory.remember_many([{"text": "five"}, {"text": "six"}])) == 2
    assert active_counts(memory) == scanned_counts(memory)
    assert memory.store.verify() == []


def test_concurrent_batch_writers_fill_a_capped_scope_exactly(memory_database: str | Path) -> None:
    from memsvc_support import CAPPED_BATCH, CAPPED_CONFIG, CAPPED_SCOPE

    filled = subprocess.run(
        [sys.executable, str(WRITER), "capped", str(memory_database), str(CAPPED_WORKERS)],
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_SECONDS,
    )
    assert filled.returncode == 0, filled.stdout + filled.stderr
    acknowledged = [line.split()[1] for line in filled.stdout.splitlines()]
    with MemoryService.open(None, database=memory_database, config=CAPPED_CONFIG) as memory:
        stored = [entry.id for entry in memory.store.export((CAPPED_SCOPE,))]
        assert sorted(stored) == sorted(acknowledged)
        # Whole batches only, and as many as fit: the cap is never passed nor left unused.
        limit = CAPPED_CONFIG.max_entries
        assert len(stored) == limit - limit % CAPPED_BATCH
        assert active_counts(memory) == scanned_counts(memory)
        assert memory.store.verify() == []


def test_killed_batch_writers_leave_whole_batches_and_true_counts(
    memory_database: str | Path,
) -> None:
    from memsvc_support import STRESS_CONFIG, STRESS_SCOPE

    acknowledged, outcomes = kill_writers(
        [sys.executable, str(WRITER), "zygote", str(memory_database), str(BATCH)],
        kills=KILLS,
        seed=20261201,
        latest_kill_seconds=LATEST_KILL_SECONDS,
        timeout=PROCESS_TIMEOUT_SECONDS,
    )
    assert outcomes == [-signal.SIGKILL] * KILLS
    assert acknowledged, "no batch returned before a kill: the test tested nothing"
    with MemoryService.open(None, database=memory_database, config=STRESS_CONFIG) as memory:
        entries = list(memory.store.export((STRESS_SCOPE,)))
        assert {entry.id for entry in entries} >= set(acknowledged)
        batches = Counter(entry.body.rsplit(" item ", 1)[0] for entry in entries)
        assert set(batches.values()) == {BATCH}
        assert active_counts(memory) == scanned_counts(memory)
        assert memory.check(scope=STRESS_SCOPE)["ok"]
        assert memory.store.verify() == []


# ------------------------------------------------------------------------ linked context


def test_a_plain_turn_is_found_by_the_words_of_the_turns_before_it(
    memory: MemoryService,
) -> None:
    answers = memory.remember_many(
        [
            turn("Did you ever try pottery?"),
            turn("Yes! I made a bowl last week."),
            turn("It is blue with white dots."),
            turn("Completely unrelated chatter", session="chat-2"),
        ]
    )
    hits = memory.recall("pottery", limit=5)["results"]
    assert [hit["id"] for hit in hits[:3]] == [answers[0]["id"], answers[1]["id"], answers[2]["id"]]
    # The question's turn matches in its own body, the answers only through their context,
    # weighted below a body; the other session's turn does not match at all.
    assert hits[0]["score"] > hits[1]["score"]
    assert len(hits) == 3


def test_an_explicit_context_wins_over_the_linked_one(memory: MemoryService) -> None:
    memory.remember_many(
        [
            turn("Did you ever try pottery?"),
            turn("Yes, a bowl.", context="talking about ceramics"),
        ]
    )
    assert [hit["body"] for hit in memory.recall("pottery")["results"]] == [
        "Did you ever try pottery?"
    ]
    assert [hit["body"] for hit in memory.recall("ceramics")["results"]] == ["Yes, a bowl."]


def test_changing_or_purging_a_turn_reindexes_the_turns_after_it(memory: MemoryService) -> None:
    question, answer = memory.remember_many(
        [turn("Did you ever try pottery?", key="q"), turn("Yes, a bowl.", key="a")]
    )
    memory.remember("Did you ever try kayaking?", kind="episodic", key="q")
    # What was said before the answer stays said: the superseded question is its context.
    assert [hit["key"] for hit in memory.recall("pottery")["results"]] == ["a"]
    memory.forget(question["id"], purge=True)
    assert memory.recall("pottery", include_archived=True)["count"] == 0
    assert memory.store.verify() == []
    assert memory.check()["ok"]
    assert memory.get(answer["id"])["context"] == ""


def test_linked_context_ranks_alike_on_both_stores(memory: MemoryService) -> None:
    """Pinned order and scores, so SQLite and PostgreSQL are held to the same figures."""
    memory.remember_many(
        [turn(f"Turn {n} about {'pottery' if n % 3 == 0 else 'weather'}") for n in range(7)]
        + [{"text": f"Note {n} on gardening"} for n in range(20)]
    )
    ranked = [(hit["body"], round(hit["score"], 4)) for hit in memory.recall("pottery")["results"]]
    # Equal scores are ordered by id, which is random: compare them by body.
    assert sorted(ranked, key=lambda hit: (-hit[1], hit[0])) == PINNED_RANKING


# ------------------------------------------------------------------------------- touches


def test_a_recall_writes_nothing_until_the_next_write_or_close(
    open_memory: Callable[..., MemoryService], memory_database: str | Path
) -> None:
    memory = open_memory()
    found = memory.remember("Deploys go through make release")["id"]
    before = memory.get(found)["accessed_at"]
    memory.store.close()
    changes = _change_counter(memory_database)
    later = _later_clock(memory)
    memory.recall("deploys")
    assert _change_counter(memory_database) == changes
    assert memory.get(found)["accessed_at"] == later > before
    memory.close()
    with MemoryService.open(None, database=memory_database) as reopened:
        assert (
            reopened.store.select(EntryFilter(scopes=(memory.scopes_for().write,)))[0].accessed_at
            == later
        )


def _later_clock(memory: MemoryService) -> str:
    from datetime import timedelta

    from agentscript.memory.timeline import format_timestamp

    clock = memory.clock
    clock.set(clock.now() + timedelta(hours=1))  # type: ignore[attr-defined]
    return format_timestamp(clock.now())


def _change_counter(database: str | Path) -> object:
    """Something that moves with every committed write: SQLite's WAL size and the entries'
    accessed_at; PostgreSQL's count of updated tuples of the namespace."""
    if is_postgres_uri(database):
        import psycopg

        uri, _, namespace = database.partition("#")
        with psycopg.connect(uri) as connection:
            return connection.execute(
                f'SELECT array_agg(accessed_at ORDER BY id) FROM "{namespace}".memory_entries'
            ).fetchone()
    wal = Path(f"{database}-wal")
    with sqlite3.connect(database) as connection:
        stamps = connection.execute("SELECT accessed_at FROM memory_entries").fetchall()
    return (wal.stat().st_size if wal.exists() else 0, stamps)


# Turn 0 has no turn before it, so it is the shortest document; 1 and 4 follow one pottery
# turn (2 and 5 follow one as the second turn before them).
PINNED_RANKING = [
    ("Turn 0 about pottery", 2.1563),
    ("Turn 3 about pottery", 1.9895),
    ("Turn 6 about pottery", 1.9895),
    ("Turn 1 about weather", 0.9801),
    ("Turn 2 about weather", 0.9063),
    ("Turn 4 about weather", 0.9063),
    ("Turn 5 about weather", 0.9063),
]


# ------------------------------------------------------------------------------ upgrade


FIXTURES = Path(__file__).parents[1] / "fixtures" / "memory"
FIXTURE_SCOPE = "/fixture/workspace"


# What the fixtures hold beyond what the body and the session give: explicit titles, sources.
STORED_TITLES = {"Release notes", "deploys go through make release"}
STORED_SOURCES = [{"session": "chat-1", "run": "r-7", "reason": "turn"}]
SCHEMA_4_TITLES = {"Week of code reviews"}
SCHEMA_4_SOURCES = [{"reason": "compaction"}]


@pytest.mark.parametrize("schema", ["schema2", "schema3", "schema4", "schema5"])
def test_a_file_of_an_older_schema_is_upgraded_in_place_and_loses_nothing(
    tmp_path: Path, schema: str
) -> None:
    """tests/fixtures/memory/schema2.db was written by the code of schema 2 (commit 57c2ffd),
    schema3.db by that of schema 3 (the postings index), each by the same calls: merged,
    superseded, titled, forgotten entries, session turns with and without context, two
    scopes; the .json beside each holds its entries as that code exported them and what its
    recalls found. schema4.db was written by the store of schema 4 (commit d312c0e): the
    entries of schema3.json inserted in order through its transaction, then two more of the
    global scope (a week summary with sources, tags and later update and access times; an
    entry whose local-day bucket is not its UTC day), a cached vector, and the recalls.
    schema5.db was written by the store of schema 5 (commit 532ea09): schema4.db upgraded,
    its tail packed into blocks, then three more entries of the global scope (in the tail)
    and the recalls, whose accessed_at bookkeeping it holds."""
    path = tmp_path / "memory.db"
    shutil.copy(FIXTURES / f"{schema}.db", path)
    _assert_upgraded_whole(path, schema)
    with sqlite3.connect(path) as connection:
        tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master")}
        assert "memory_terms" not in tables and "memory_postings" in tables
        columns = {row[1] for row in connection.execute("PRAGMA table_info(memory_entries)")}
        assert "title_norm" not in columns and "title_hash" in columns
        # Only what the body and the session do not give is stored: the explicit title, the
        # one the merge after the upgrade gave (not its new body's first line), one source.
        titles = connection.execute("SELECT title FROM memory_entries WHERE title IS NOT NULL")
        extra_titles = SCHEMA_4_TITLES if schema in ("schema4", "schema5") else set()
        assert {title for (title,) in titles} == STORED_TITLES | extra_titles
        assert connection.execute("PRAGMA freelist_count").fetchone() == (0,)  # vacuumed
        sources = connection.execute("SELECT source FROM memory_entries WHERE source IS NOT NULL")
        extra_sources = SCHEMA_4_SOURCES if schema in ("schema4", "schema5") else []
        assert [json.loads(source) for (source,) in sources] == STORED_SOURCES + extra_sources
        stored = connection.execute("SELECT value FROM memory_meta WHERE name = 'schema'")
        assert stored.fetchone() == ("6",)
        # Schema 5's forms: UUIDs as 16 bytes, times as integers (a time equal to the one it
        # defaults to not stored), a bucket as its first day, session names numbered.
        assert not {"bucket", "day", "week", "month", "year"} & columns
        forms = connection.execute(
            "SELECT DISTINCT typeof(id), typeof(kind), typeof(created_at), typeof(bucket_day) "
            "FROM memory_entries"
        )
        assert forms.fetchall() == [("blob", "integer", "integer", "integer")]
        sessions = connection.execute("SELECT name FROM memory_sessions ORDER BY id")
        extra_sessions = ["studio-9"] if schema == "schema5" else []
        assert [name for (name,) in sessions] == ["chat-1", "chat-2", *extra_sessions]
        # Schema 5's text index: a tail row per entry.
        tail = {row[1] for row in connection.execute("PRAGMA table_info(memory_postings_tail)")}
        assert tail == {"seq", "scope_key", "terms", "shapes"}
        # Schema 6's: blocks whose arrays are in their row or in memory_posting_blocks, in a
        # file that gives back its free pages.
        blocks = {row[1] for row in connection.execute("PRAGMA table_info(memory_postings)")}
        assert {"block", "seqs", "shapes"} <= blocks
        assert connection.execute("PRAGMA auto_vacuum").fetchone() == (2,)


def test_a_schema_4_index_with_blocks_and_a_tail_is_rebuilt_in_schema_5(tmp_path: Path) -> None:
    """tests/fixtures/memory/schema4_packed.db was written by the code of schema 4 (commit
    d312c0e): schema3.db upgraded, its tail packed into blocks, then three more entries of the
    global scope (in the tail, one row per term); schema4_packed.json holds its export and
    what its recalls found. The upgrade rebuilds the index in schema 5's layout."""
    path = tmp_path / "memory.db"
    shutil.copy(FIXTURES / "schema4_packed.db", path)
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT COUNT(*) FROM memory_postings").fetchone()[0] > 0
        assert connection.execute("SELECT COUNT(*) FROM memory_postings_tail").fetchone()[0] > 0
    _assert_upgraded_whole(path, "schema4_packed")
    with sqlite3.connect(path) as connection:
        counted = connection.execute("SELECT COUNT(*) FROM memory_entries").fetchone()[0]
        rows = connection.execute("SELECT COUNT(*) FROM memory_postings_tail").fetchone()[0]
        assert 0 < rows <= counted  # one row per entry (each has terms), none per term


# A child that upgrades a file and is SIGKILLed once one step of the upgrade has run (`step` of
# `module`), before the commit; a one-page cache makes SQLite write the pages it moved (and a
# copy of `table`) to the WAL before then.
KILLED_UPGRADE = """
import os, signal, sys
from agentscript.memory import sqlite_postings, sqlite_store
module = {module}
moved = module.{step}
def killed(connection):
    connection.execute("PRAGMA cache_size=1")
    moved(connection)
    connection.execute("CREATE TABLE spilled AS SELECT * FROM {table}")
    os.kill(os.getpid(), signal.SIGKILL)
module.{step} = killed
sqlite_store.SqliteStore(sys.argv[1]).count(sqlite_store.EntryFilter(scopes=("global",)))
"""


def _kill_upgrade_after(path: Path, module: str, step: str, table: str) -> None:
    """Upgrade the file at `path` in a child SIGKILLed after `step` (KILLED_UPGRADE), which
    had written pages by then."""
    script = KILLED_UPGRADE.format(module=module, step=step, table=table)
    child = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        timeout=PROCESS_TIMEOUT_SECONDS,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert Path(f"{path}-wal").stat().st_size > 0  # the killed upgrade had written pages


def test_an_upgrade_killed_before_it_commits_leaves_the_old_file_usable(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    shutil.copy(FIXTURES / "schema4.db", path)
    _kill_upgrade_after(path, "sqlite_store", "_entries_to_5", "memory_entries")
    with sqlite3.connect(path) as connection:
        stored = connection.execute("SELECT value FROM memory_meta WHERE name = 'schema'")
        assert stored.fetchone() == ("4",)
        columns = {row[1] for row in connection.execute("PRAGMA table_info(memory_entries)")}
        assert "day" in columns and "bucket_day" not in columns
    _assert_upgraded_whole(path, "schema4")


def test_a_move_from_schema_5_killed_before_it_commits_leaves_the_old_file_usable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.db"
    shutil.copy(FIXTURES / "schema5.db", path)
    _kill_upgrade_after(path, "sqlite_postings", "relayout", "memory_posting_blocks")
    with sqlite3.connect(path) as connection:
        stored = connection.execute("SELECT value FROM memory_meta WHERE name = 'schema'")
        assert stored.fetchone() == ("5",)
        tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master")}
        assert "memory_posting_blocks" not in tables and "memory_postings_5" not in tables
    _assert_upgraded_whole(path, "schema5")


def test_a_schema_5_file_with_a_damaged_block_is_upgraded_by_a_rebuild(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    shutil.copy(FIXTURES / "schema5.db", path)
    with sqlite3.connect(path) as connection:
        connection.execute(
            "UPDATE memory_postings SET seqs = X'5a01' WHERE term = "
            "(SELECT term FROM memory_postings ORDER BY term LIMIT 1)"
        )
    _assert_upgraded_whole(path, "schema5")
    with sqlite3.connect(path) as connection:
        tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master")}
        assert "memory_postings_5" not in tables


def test_a_schema_1_file_is_upgraded_in_place(tmp_path: Path) -> None:
    """A file as schema 1 left it (a text index holding its own copy of the terms, no kept
    counts, no session links) is upgraded on first use and loses nothing."""
    path = tmp_path / "memory.db"
    shutil.copy(FIXTURES / "schema2.db", path)
    _downgrade_to_schema_1(path)
    _assert_upgraded_whole(path, "schema2")


def _assert_upgraded_whole(path: Path, schema: str) -> None:
    """The upgraded file holds every entry as exported before, its indexes agree with its
    entries, recall finds what it found, and writes merge and supersede against old entries."""
    expected = json.loads((FIXTURES / f"{schema}.json").read_text(encoding="utf-8"))
    store = SqliteStore(path)
    try:
        assert [entry.to_dict() for entry in store.export((FIXTURE_SCOPE, "global"))] == (
            expected["entries"]
        )
        assert store.verify() == []
        with store.transaction() as tx:
            assert tx.active_entries(FIXTURE_SCOPE) == 7
    finally:
        store.close()
    with MemoryService.open(None, database=path) as memory:
        found = {
            question: [hit["id"] for hit in memory.recall(question, scope=FIXTURE_SCOPE)["results"]]
            for question in expected["recalls"]
        }
        assert found == expected["recalls"]
        cast(SqliteStore, memory.store).rebuild_index()
        assert found == {
            question: [hit["id"] for hit in memory.recall(question, scope=FIXTURE_SCOPE)["results"]]
            for question in expected["recalls"]
        }
        merged = memory.remember("deploys go through  make release", scope=FIXTURE_SCOPE)
        updated = memory.remember("red", kind="fact", key="colour", scope=FIXTURE_SCOPE)
        assert (merged.action, updated.action) == ("merged", "updated")
        versions = memory.history("colour", scope=FIXTURE_SCOPE)["versions"]
        assert [version["body"] for version in versions] == ["red", "green", "blue"]


def _downgrade_to_schema_1(path: Path) -> None:
    """schema2.db made into what schema 1 left: a text index holding its own (stale) copy
    of the terms, no kept counts, no session links."""
    with sqlite3.connect(path) as connection:
        for statement in (
            "DROP TABLE memory_terms",
            "DROP TABLE memory_terms_vocab",
            "DROP TABLE memory_scope_counts",
            "DROP TABLE memory_session_tails",
            "DROP TRIGGER memory_entries_counted_insert",
            "DROP TRIGGER memory_entries_counted_delete",
            "DROP TRIGGER memory_entries_counted_update",
            "ALTER TABLE memory_entries DROP COLUMN previous_seq",
            "ALTER TABLE memory_entries DROP COLUMN next_seq",
            "CREATE VIRTUAL TABLE memory_terms USING fts5(scope_term, tags, title, key, body, "
            "context, tokenize = 'ascii')",
            "INSERT INTO memory_terms (rowid, scope_term, body) SELECT seq, 'stale', body "
            "FROM memory_entries",
            "UPDATE memory_meta SET value = '1' WHERE name = 'schema'",
        ):
            connection.execute(statement)
