"""The store contract (SqliteStore and PostgresMemoryStore) and the hooks compaction builds on."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from agentscript.memory import (
    Analyzer,
    Entry,
    EntryFilter,
    FixedClock,
    MemoryService,
    MemoryServiceError,
    Source,
    SqliteStore,
    StoreConflict,
    sqlite_postings,
)
from agentscript.memory.postgres_store import PostgresMemoryStore, is_postgres_uri
from agentscript.memory.store import MemoryStore, TextQuery

pytest_plugins = ["memsvc_support"]

STAMP = "2026-05-06T09:30:00.000Z"


def entry(scope: str = "/w", **fields: object) -> Entry:
    values: dict[str, object] = {
        "id": str(uuid.uuid4()),
        "kind": "knowledge",
        "scope": scope,
        "title": "A title",
        "body": "A body",
        "created_at": STAMP,
        "updated_at": STAMP,
        "accessed_at": STAMP,
        "event_time": STAMP,
        "bucket": "2026-05-06",
    }
    values.update(fields)
    return Entry(**values)  # type: ignore[arg-type]


@pytest.fixture
def memory_backend(each_memory_backend: str) -> str:
    """Every test here that uses a store runs on SQLite and on PostgreSQL."""
    return each_memory_backend


@pytest.fixture
def store(memory_database: str | Path) -> Iterator[MemoryStore]:
    opened: MemoryStore
    if is_postgres_uri(memory_database):
        opened = PostgresMemoryStore(memory_database)
    else:
        opened = SqliteStore(memory_database)
    yield opened
    opened.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqliteStore]:
    """For the tests of SQLite's own file; test_memsvc_postgres.py has PostgreSQL's."""
    opened = SqliteStore(tmp_path / "store.db")
    yield opened
    opened.close()


def test_every_filter_needs_a_scope() -> None:
    with pytest.raises(ValueError, match="scope is never optional"):
        EntryFilter(scopes=())
    with pytest.raises(ValueError):
        EntryFilter(scopes=("",))


def test_reads_never_cross_scopes(store: MemoryStore) -> None:
    mine, theirs = entry("/a", title="secret plan"), entry("/b", title="secret plan")
    with store.transaction() as tx:
        tx.insert(mine)
        tx.insert(theirs)
    only_a = EntryFilter(scopes=("/a",))
    assert [e.id for e in store.select(only_a)] == [mine.id]
    assert [m.id for m in store.search(TextQuery(("secret",)), only_a, 10)] == [mine.id]
    assert store.select(EntryFilter(scopes=("/a",), ids=(theirs.id,))) == []
    assert store.count(only_a) == 1
    assert store.tally(only_a, ("scope",)) == [(("/a",), 1)]
    with store.transaction() as tx:
        assert tx.delete("/a", (theirs.id,)) == 0
    assert [e.id for e in store.export(("/b",))] == [theirs.id]


def test_constraints_raise_store_conflicts(store: MemoryStore) -> None:
    keyed = entry(key="k")
    with store.transaction() as tx:
        tx.insert(keyed)
    for duplicate, message in (
        (entry(key="k"), "already has an active entry with key 'k'"),
        (entry(id=keyed.id), "already exists"),
    ):
        with pytest.raises(StoreConflict, match=message), store.transaction() as tx:
            tx.insert(duplicate)
    with store.transaction() as tx:
        tx.insert(entry(key="k", archived=True))
        tx.insert(entry(key="k", scope="/other"))
    summary = {"kind": "summary", "level": "week", "bucket": "2026-W19"}
    with store.transaction() as tx:
        tx.insert(entry(**summary))
    conflict = pytest.raises(StoreConflict, match="active week summary for bucket 2026-W19")
    with conflict, store.transaction() as tx:
        tx.insert(entry(**summary))
    with pytest.raises(StoreConflict, match="does not exist"), store.transaction() as tx:
        tx.replace(entry())


def test_a_transaction_counts_its_own_writes_before_it_commits(store: MemoryStore) -> None:
    """The cap reads the count inside the transaction that is changing it: every insert,
    archive, revival and delete of that transaction counts at once, and the count it commits
    is what a scan finds."""
    first, second, third = entry(), entry(), entry(scope="/other")
    with store.transaction() as tx:
        seen = [tx.active_entries("/w")]
        for written in (first, second, third, entry(archived=True)):
            tx.insert(written)
            seen.append(tx.active_entries("/w"))
        tx.replace(first.evolve(archived=True))
        seen.append(tx.active_entries("/w"))
        tx.replace(first)
        seen.append(tx.active_entries("/w"))
        tx.delete("/w", (second.id,))
        seen.append(tx.active_entries("/w"))
    assert seen == [0, 1, 2, 2, 2, 1, 2, 1]
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.insert(entry())
        raise RuntimeError("abort")
    with store.transaction() as tx:
        assert (tx.active_entries("/w"), tx.active_entries("/other")) == (1, 1)
    assert {count.scope: count.active for count in store.scopes()} == {"/w": 1, "/other": 1}


def test_a_failed_transaction_leaves_nothing(store: MemoryStore) -> None:
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.insert(entry())
        raise RuntimeError("abort")
    assert store.count(EntryFilter(scopes=("/w",), archived=None)) == 0


def test_search_ranks_by_weighted_fields_and_applies_filters(store: MemoryStore) -> None:
    tagged = entry(tags=("zebra",), title="Other")
    titled = entry(title="Zebra crossing")
    archived = entry(title="Zebra zebra", archived=True)
    with store.transaction() as tx:
        for item in (tagged, titled, archived):
            tx.insert(item)
    found = store.search(TextQuery(("zebra",)), EntryFilter(scopes=("/w",)), 10)
    assert [m.id for m in found] == [tagged.id, titled.id]
    assert all(m.score > 0 for m in found)
    both = store.search(TextQuery(("zebra",)), EntryFilter(scopes=("/w",), archived=None), 10)
    assert archived.id in [m.id for m in both]


def test_entries_at_loads_the_matches_that_still_pass_the_filter(store: MemoryStore) -> None:
    """Ranking loads its best matches by `entries_at`: the entries themselves, current, and
    only those the filter still lets through (an entry archived since its search is not)."""
    first = entry(title="Zebra one")
    second = entry(title="Zebra two", tags=("stripes",))
    third = entry(title="Zebra three")
    with store.transaction() as tx:
        for item in (first, second, third):
            tx.insert(item)
    where = EntryFilter(scopes=("/w",))
    matches = store.search(TextQuery(("zebra",)), where, 10)
    assert {match.id for match in matches} == {first.id, second.id, third.id}
    with store.transaction() as tx:
        tx.replace(third.evolve(archived=True))
        tx.replace(second.evolve(body="A body, corrected"))
    loaded = {item.id: item for item in store.entries_at(where, matches)}
    assert set(loaded) == {first.id, second.id}
    assert loaded[first.id] == first
    assert loaded[second.id].body == "A body, corrected" and loaded[second.id].tags == ("stripes",)
    assert store.entries_at(where, []) == []
    assert store.entries_at(EntryFilter(scopes=("/other",)), matches) == []


def test_entries_at_never_loads_another_entry_in_a_reused_row(sqlite_store: SqliteStore) -> None:
    """A seq freed by a delete may be given to the next entry: a match of the deleted one
    then loads nothing, never the newcomer."""
    gone = entry(title="Zebra gone")
    with sqlite_store.transaction() as tx:
        tx.insert(gone)
    where = EntryFilter(scopes=("/w",))
    (match,) = sqlite_store.search(TextQuery(("zebra",)), where, 10)
    with sqlite_store.transaction() as tx:
        tx.delete("/w", (gone.id,))
        tx.insert(entry(title="Zebra newcomer"))
    (newcomer,) = sqlite_store.search(TextQuery(("zebra",)), where, 10)
    assert newcomer.seq == match.seq  # the row was taken again
    assert sqlite_store.entries_at(where, [match]) == []


def test_replace_reindexes_changed_text(store: MemoryStore) -> None:
    item = entry(title="Alpha")
    with store.transaction() as tx:
        tx.insert(item)
        tx.replace(item.evolve(title="Beta"))
    where = EntryFilter(scopes=("/w",))
    assert store.search(TextQuery(("alpha",)), where, 5) == []
    assert [m.id for m in store.search(TextQuery(("beta",)), where, 5)] == [item.id]


def test_an_index_built_by_another_analyser_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    plain = SqliteStore(path, Analyzer(stem=False))
    with plain.transaction() as tx:
        tx.insert(entry(title="Painting lessons"))
    assert plain.search(TextQuery(("paint",)), EntryFilter(scopes=("/w",)), 5) == []
    plain.close()
    stemmed = SqliteStore(path)
    assert len(stemmed.search(TextQuery(("paint",)), EntryFilter(scopes=("/w",)), 5)) == 1
    assert stemmed.verify() == []
    stemmed.close()


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    SqliteStore(path).verify()
    connection = sqlite3.connect(path)
    connection.execute("UPDATE memory_meta SET value = '99' WHERE name = 'schema'")
    connection.commit()
    connection.close()
    with pytest.raises(MemoryServiceError, match="has memory schema 99"):
        SqliteStore(path).verify()


@pytest.mark.parametrize("packed", [False, True], ids=["in the tail", "in a block"])
def test_purge_removes_text_from_the_index(sqlite_store: SqliteStore, packed: bool) -> None:
    item = entry(title="Credit card 4111 1111")
    other = entry(title="Credit card renewal")
    with sqlite_store.transaction() as tx:
        tx.insert(item)
        tx.insert(other)
    if packed:
        with sqlite_store.transaction():
            sqlite_postings.pack(sqlite_store._open())
    with sqlite_store.transaction() as tx:
        assert tx.delete("/w", (item.id,)) == 1
    with sqlite3.connect(sqlite_store.path) as connection:
        terms = {
            term
            for table in ("memory_postings", "memory_term_documents")
            for (term,) in connection.execute(f"SELECT term FROM {table}")
        }
        terms.update(
            term
            for (waiting,) in connection.execute("SELECT terms FROM memory_postings_tail")
            for term in waiting.split(" ")
        )
    assert "4111" not in terms and "1111" not in terms
    assert {"credit", "card", "renew"} <= terms
    assert sqlite_store.verify() == []
    found = sqlite_store.search(TextQuery(("credit", "4111")), EntryFilter(scopes=("/w",)), 10)
    assert [match.id for match in found] == [other.id]


def test_the_database_runs_in_wal_mode_with_durable_commits(sqlite_store: SqliteStore) -> None:
    sqlite_store.verify()
    with sqlite3.connect(sqlite_store.path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    connection = sqlite_store._open()
    assert connection.execute("PRAGMA synchronous").fetchone() == (2,)


# ------------------------------------------------------------------------ compaction hooks


def test_pending_buckets_are_ended_buckets_with_active_sources(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    scope = memory.workspace or ""
    for day in ("2026-05-04", "2026-05-04T18:00", "2026-05-05", "2026-05-06"):
        memory.remember(f"Episode on {day}", kind="episodic", event_time=day)
    memory.remember("Knowledge is never a source")
    pending = memory.pending_buckets(scope, "day")
    assert pending == [
        {"bucket": "2026-05-04", "sources": 2, "summary_id": None},
        {"bucket": "2026-05-05", "sources": 1, "summary_id": None},
    ]
    assert memory.pending_buckets(scope, "week") == []
    memory_clock.advance(timedelta(days=7))
    assert [p["bucket"] for p in memory.pending_buckets(scope, "day")][-1] == "2026-05-06"


def test_write_summary_archives_its_sources_atomically(memory: MemoryService) -> None:
    scope = memory.workspace or ""
    first = memory.remember("Standup", kind="episodic", event_time="2026-05-04", tags=["team"])
    second = memory.remember("Lunch", kind="episodic", event_time="2026-05-04", tags=["food"])
    sources = memory.compaction_sources(scope, "day", "2026-05-04")
    # Oldest first by event time; these two share one, so only the set is fixed.
    assert {e.id for e in sources} == {first["id"], second["id"]}
    result = memory.write_summary(
        scope,
        "day",
        "2026-05-04",
        title="Monday",
        body="Standup, then lunch.",
        source_ids=[first["id"], second["id"]],
        source={"reason": "compaction"},
    )
    summary = memory.get(result["id"])
    assert (summary["kind"], summary["level"], summary["bucket"]) == (
        "summary",
        "day",
        "2026-05-04",
    )
    assert summary["event_time"] == "2026-05-04T00:00:00.000Z"
    assert summary["archive_ref"] == [first["id"], second["id"]]
    assert summary["tags"] == ["team", "food"]
    for identifier in (first["id"], second["id"]):
        archived = memory.get(identifier)
        assert archived["archived"]
        assert archived["archive_reason"] == f"summarised in {result['id']}"
    assert memory.compaction_sources(scope, "day", "2026-05-04") == []
    assert [e.id for e in memory.compaction_sources(scope, "week", "2026-W19")] == [result["id"]]
    assert memory.pending_buckets(scope, "day") == []
    hits = memory.recall("standup lunch")["results"]
    assert [(hit["id"], hit["level"]) for hit in hits] == [(result["id"], "day")]


def test_a_summary_of_changed_sources_is_refused_and_writes_nothing(
    memory: MemoryService,
) -> None:
    scope = memory.workspace or ""
    kept = memory.remember("Kept", kind="episodic", event_time="2026-05-04")["id"]
    gone = memory.remember("Gone", kind="episodic", event_time="2026-05-04")["id"]
    memory.forget(gone)
    with pytest.raises(MemoryServiceError, match="no longer active sources") as error:
        memory.write_summary(
            scope, "day", "2026-05-04", title="T", body="B", source_ids=[kept, gone]
        )
    assert error.value.code == "conflict"
    assert not memory.get(kept)["archived"]
    assert memory.recall(kind="summary")["results"] == []
    with pytest.raises(MemoryServiceError, match="no longer active sources"):
        memory.write_summary(scope, "day", "2026-05-05", title="T", body="B", source_ids=[kept])


def test_one_active_summary_per_bucket_and_rebuilding_one(memory: MemoryService) -> None:
    scope = memory.workspace or ""
    early = memory.remember("Early", kind="episodic", event_time="2026-05-04")["id"]
    first = memory.write_summary(
        scope, "day", "2026-05-04", title="v1", body="Early.", source_ids=[early]
    )
    late = memory.remember("Late arrival", kind="episodic", event_time="2026-05-04")["id"]
    assert memory.pending_buckets(scope, "day") == [
        {"bucket": "2026-05-04", "sources": 1, "summary_id": first["id"]}
    ]
    with pytest.raises(MemoryServiceError, match="pass replaces to rebuild it"):
        memory.write_summary(scope, "day", "2026-05-04", title="v2", body="B", source_ids=[late])
    other = memory.remember("Tuesday", kind="episodic", event_time="2026-05-05")["id"]
    with pytest.raises(MemoryServiceError, match="is not the active day summary"):
        memory.write_summary(
            scope,
            "day",
            "2026-05-05",
            title="x",
            body="x",
            source_ids=[other],
            replaces=first["id"],
        )
    second = memory.write_summary(
        scope,
        "day",
        "2026-05-04",
        title="v2",
        body="Early, then late.",
        source_ids=[late],
        replaces=first["id"],
    )
    assert second["archived"] == [late, first["id"]]
    assert memory.get(first["id"])["archived"]


@pytest.mark.parametrize(
    ("level", "bucket", "message"),
    [
        ("hour", "2026-05-04", "level must be one of"),
        ("day", "2026-W19", "is a week bucket, not a day bucket"),
        ("week", "someday", "is not a bucket key"),
    ],
)
def test_compaction_arguments_are_checked(
    memory: MemoryService, level: str, bucket: str, message: str
) -> None:
    with pytest.raises(MemoryServiceError, match=message):
        memory.compaction_sources("global", level, bucket)


def test_summaries_cannot_be_remembered_or_updated(
    memory: MemoryService, open_memory: Callable[..., MemoryService]
) -> None:
    scope = memory.workspace or ""
    source = memory.remember("Source", kind="episodic", event_time="2026-05-04")["id"]
    summary = memory.write_summary(
        scope, "day", "2026-05-04", title="S", body="S", source_ids=[source]
    )
    with pytest.raises(MemoryServiceError, match="summaries belong to compaction"):
        memory.update(summary["id"], text="edited")
    with pytest.raises(MemoryServiceError):
        memory.remember("fake summary", kind="summary")


def test_ties_in_a_listing_go_by_id_text_whatever_form_the_ids_have(store: MemoryStore) -> None:
    """The SQLite store keeps a UUID as bytes and any other id as text; a listing of equal
    times still orders them all by their text, as PostgreSQL does."""
    uuids = [str(uuid.uuid4()) for _ in range(6)]
    with store.transaction() as tx:
        for identifier in uuids:
            tx.insert(entry(id=identifier, title=identifier))
    assert [e.id for e in store.select(EntryFilter(scopes=("/w",)))] == sorted(uuids)[::-1]
    others = ["0-imported", "9", "b-imported", "zz", "Upper"]
    with store.transaction() as tx:
        for identifier in others:
            tx.insert(entry(id=identifier, title=identifier))
    everything = sorted(uuids + others)
    listed = store.select(EntryFilter(scopes=("/w",)), order="event", descending=False)
    assert [e.id for e in listed] == everything
    assert [e.id for e in store.select(EntryFilter(scopes=("/w",)))] == everything[::-1]


def test_a_deleted_turn_s_session_name_goes_with_scrub_and_a_lost_one_is_reported(
    sqlite_store: SqliteStore,
) -> None:
    """Session names are stored once for all their turns: scrub drops those no entry names
    any more, so a purge leaves none behind; verify reports an entry whose name is lost."""
    kept = entry(kind="episodic", source=Source(session="kept-session"))
    gone = entry(kind="episodic", source=Source(session="secret-session-name"))
    with sqlite_store.transaction() as tx:
        tx.insert(kept)
        tx.insert(gone)
    with sqlite_store.transaction() as tx:
        tx.delete("/w", (gone.id,))
    sqlite_store.scrub()
    sqlite_store.close()
    assert b"secret-session-name" not in sqlite_store.path.read_bytes()
    with sqlite3.connect(sqlite_store.path) as connection:
        connection.execute("DELETE FROM memory_sessions")
    assert sqlite_store.verify() == ["1 entries name a source session that is not stored"]
