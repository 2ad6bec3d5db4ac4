"""PostgresMemoryStore: the same results as SqliteStore, and what a shared server adds.

The store, service and recall suites already run on both stores (memory_backend). Here: the
rankings of a fixed corpus compared with SQLite's to the last bit, real processes writing at
once and being killed, scope and namespace isolation, hostile text and namespaces, credentials,
and the schema's life (creation by concurrent first users, versions, rebuilds, verify).
Every test uses namespaces of its own in the session's throwaway cluster (pg_cluster.py).
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agentscript.memory import (
    DEFAULT_ANALYZER,
    Analyzer,
    Entry,
    EntryFilter,
    FieldWeights,
    FixedClock,
    MemoryConfig,
    MemoryService,
    MemoryServiceError,
    Source,
    SqliteStore,
    StoreConflict,
)
from agentscript.memory.entries import clean_key, clean_tags, clean_title
from agentscript.memory.postgres_store import PostgresMemoryStore, scope_hash
from agentscript.memory.recall import RecallTuning, rank
from agentscript.memory.store import MemoryStore, TextQuery
from agentscript.memory.timehints import time_windows
from zygote_support import kill_writers

pytest_plugins = ["memsvc_support"]


@pytest.fixture
def memory_backend() -> str:
    """memsvc_support's services (`memory`, `open_memory`) use PostgreSQL in this module."""
    return "postgres"


WRITER = Path(__file__).parents[1] / "support" / "memsvc_support.py"
HELPER = Path(__file__).parents[1] / "support" / "memsvc_postgres_support.py"
WORKERS = 6
REMEMBERS_PER_WORKER = 40
KILLS = 20
LATEST_KILL_SECONDS = 0.05
PROCESS_TIMEOUT_SECONDS = 600
STAMP = "2026-05-06T09:30:00.000Z"
NOW = datetime(2026, 5, 20, 12, 0, tzinfo=UTC)


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
def new_uri(memory_postgres: Any) -> Callable[[], str]:
    """`new_uri()`: a URI naming a namespace no test has used (over the Unix socket)."""
    return lambda: str(memory_postgres.socket_uri(f"t{uuid.uuid4().hex[:12]}"))


@pytest.fixture
def open_store(new_uri: Callable[[], str]) -> Iterator[Callable[..., PostgresMemoryStore]]:
    """`open_store(uri=None, analyzer=...)`: a store, in a fresh namespace unless given one."""
    opened: list[PostgresMemoryStore] = []

    def make(uri: str | None = None, analyzer: Analyzer | None = None) -> PostgresMemoryStore:
        store = PostgresMemoryStore(uri or new_uri(), analyzer or DEFAULT_ANALYZER)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: Callable[..., PostgresMemoryStore]) -> PostgresMemoryStore:
    return open_store()


def sql(store: PostgresMemoryStore, statement: str, *parameters: object) -> list[tuple[Any, ...]]:
    """Run `statement` on the store's namespace (`{schema}` is its quoted name)."""
    with store._connection() as connection:
        cursor = connection.execute(statement.format(schema=store._schema), parameters or None)
        return cursor.fetchall() if cursor.description else []


# ------------------------------------------------------------------ the same results as SQLite

WORDS = """
deploy release staging server cache bug rollback database migration index query latency
coffee lunch meeting standup review design budget travel flight hotel conference talk
python rust typescript test lint format build docker kubernetes helm chart canary paint
melanie caroline painted painting paints children child swimming pottery camping hiking
sunrise lake beach mountain garden dinner recipe pasta bread music guitar concert ticket
""".split()
EXTRA = ["部署流程", "运行测试", "发布版本", "团队午餐", "de-stress", "follow-up", "e-mail", "2026"]
SCOPES = ("global", "/work/alpha", "/work/beta")
SESSIONS = (None, "s-1", "s-2", "s-3", "s-4")
QUERIES = (
    "deploy the release to staging",
    "What did Melanie paint?",
    "children swimming at the lake",
    "cache bug rollback",
    "部署",
    "运行测试 发布",
    "de-stress",
    "destress follow-up",
    "python test lint format",
    "coffee",
    "kubernetes helm canary chart",
    "budget meeting review design",
    "flight hotel travel in May 2026",
    "pottery camping hiking",
    "concert ticket guitar music",
    "sunrise",
    "2026",
    "paints painted painting",
)


def corpus(seed: int = 20260506) -> list[Entry]:
    """A fixed corpus: three scopes, every kind, keys, tags, contexts, summaries, archived
    entries, repeated words (a term several times in several fields), CJK text, compounds,
    and identical entries whose scores tie, so only the id can order them."""
    rng = random.Random(seed)
    vocabulary = WORDS + EXTRA
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]

    def words(low: int, high: int) -> str:
        return " ".join(rng.choices(vocabulary, weights, k=rng.randint(low, high)))

    entries: list[Entry] = []
    keys: set[tuple[str, str]] = set()
    for index in range(260):
        scope = rng.choice(SCOPES)
        kind = rng.choice(("fact", "knowledge", "episodic", "episodic"))
        key = f"key-{rng.randint(0, 40)}" if kind == "fact" else None
        archived = rng.random() < 0.1
        if key is not None and not archived:
            if (scope, key) in keys:
                key = None
            else:
                keys.add((scope, key))
        day = datetime(2026, 4, 1, tzinfo=UTC) + timedelta(days=rng.randint(0, 45))
        moment = day.strftime("%Y-%m-%dT%H:%M:00.000Z")
        entries.append(
            Entry(
                id=str(uuid.UUID(int=rng.getrandbits(128))),
                kind=kind,
                scope=scope,
                key=key,
                title=words(1, 5),
                body=words(3, 60),
                context=words(0, 15) if rng.random() < 0.5 else "",
                tags=tuple(dict.fromkeys(rng.choices(vocabulary, weights, k=rng.randint(0, 3)))),
                created_at=moment,
                updated_at=moment,
                accessed_at=moment,
                event_time=moment,
                bucket=day.strftime("%Y-%m-%d"),
                archived=archived,
                source=Source(session=rng.choice(SESSIONS)),
                reinforce_count=index % 3,
            )
        )
    twin = entries[0]
    for _ in range(4):
        entries.append(replace(twin, id=str(uuid.UUID(int=rng.getrandbits(128))), key=None))
    for week, scope in (("2026-W15", "global"), ("2026-W16", "/work/alpha")):
        entries.append(
            replace(
                entries[1],
                id=str(uuid.UUID(int=rng.getrandbits(128))),
                kind="summary",
                scope=scope,
                key=None,
                level="week",
                bucket=week,
                title=f"Week summary deploy release {week}",
                body="Deploy deploy deploy; the release went out after the cache bug rollback.",
            )
        )
    return entries


def fill(store: MemoryStore, entries: list[Entry]) -> None:
    """Insert the corpus, then delete, rewrite and archive some of it, so the totals that
    BM25 uses have been through every kind of write."""
    with store.transaction() as tx:
        for item in entries:
            tx.insert(item)
    deleted = entries[10:40:3]
    with store.transaction() as tx:
        for item in deleted:
            tx.delete(item.scope, (item.id,))
        for item in entries[11:60:4]:
            if item not in deleted:
                tx.replace(
                    item.evolve(body=f"{item.body} deploy coffee 部署流程", tags=("coffee",))
                )
        for item in entries[60:80:5]:
            if not item.archived:
                tx.replace(item.evolve(archived=True, archive_reason="forgotten"))


@pytest.fixture(scope="module")
def twins(
    memory_postgres: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[SqliteStore, PostgresMemoryStore]]:
    """The fixed corpus in a SqliteStore and in a PostgresMemoryStore, written the same way."""
    sqlite = SqliteStore(tmp_path_factory.mktemp("twins") / "memory.db")
    postgres = PostgresMemoryStore(memory_postgres.socket_uri(f"t{uuid.uuid4().hex[:12]}"))
    entries = corpus()
    for store in (sqlite, postgres):
        fill(store, entries)
    yield sqlite, postgres
    sqlite.close()
    postgres.close()


def filters() -> list[EntryFilter]:
    return [
        EntryFilter(scopes=("global",)),
        EntryFilter(scopes=("/work/alpha", "global")),
        EntryFilter(scopes=SCOPES, archived=None),
        EntryFilter(scopes=SCOPES, archived=True),
        EntryFilter(scopes=SCOPES, kinds=("episodic", "summary")),
        EntryFilter(scopes=SCOPES, levels=(None,)),
        EntryFilter(scopes=SCOPES, levels=("week",), archived=None),
        EntryFilter(scopes=SCOPES, tags=("coffee",)),
        EntryFilter(scopes=SCOPES, keyed=True, archived=None),
        EntryFilter(scopes=SCOPES, since="2026-04-10T00:00:00.000Z", until="2026-05-01"),
        EntryFilter(scopes=("/work/beta",), bucket=("week", "2026-W16"), archived=None),
        EntryFilter(scopes=SCOPES, bucket=("month", "2026-04")),
    ]


WEIGHTS = (FieldWeights(), FieldWeights(tags=3.3, title=1.7, key=0.9, body=1.1, context=0.7))


def test_search_scores_and_orders_exactly_as_sqlite(
    twins: tuple[SqliteStore, PostgresMemoryStore],
) -> None:
    sqlite, postgres = twins
    analyzer = sqlite.analyzer
    compared = ties = 0
    for query in QUERIES:
        terms = tuple(analyzer.unique_terms(query))
        for where in filters():
            for weights in WEIGHTS:
                expected = sqlite.search(TextQuery(terms, weights), where, 40)
                assert postgres.search(TextQuery(terms, weights), where, 40) == expected, query
                compared += len(expected)
                scores = [match.score for match in expected]
                ties += len(scores) - len(set(scores))
    # The comparison covered many matches, including equal scores ordered by id.
    assert compared > 2000 and ties > 50


def test_recall_ranks_exactly_as_sqlite(twins: tuple[SqliteStore, PostgresMemoryStore]) -> None:
    sqlite, postgres = twins
    tunings = (
        RecallTuning(),
        RecallTuning(recency_weight=0.0, session_weight=0.0),
        RecallTuning(feedback_docs=3, feedback_terms=4, feedback_weight=0.3, weights=WEIGHTS[1]),
    )
    for query in QUERIES:
        terms = sqlite.analyzer.unique_terms(query)
        for tuning in tunings:
            for where in filters()[:4]:
                expected = rank(sqlite, terms, where, 25, tuning, NOW, time_windows(query)).results
                found = rank(postgres, terms, where, 25, tuning, NOW, time_windows(query)).results
                assert [(r.entry, r.score) for r in found] == [
                    (r.entry, r.score) for r in expected
                ], query


def test_the_service_recalls_the_same_ids_in_the_same_order(
    twins: tuple[SqliteStore, PostgresMemoryStore],
) -> None:
    services = [
        MemoryService(store, config=MemoryConfig(), clock=FixedClock(NOW)) for store in twins
    ]
    found = 0
    for query in QUERIES:
        for scope in ("global", "/work/alpha", "/work/beta"):
            sqlite, postgres = (
                service.recall(query, scope=scope, limit=20, include_archived=True)
                for service in services
            )
            assert postgres == sqlite, query
            found += sqlite["count"]
    assert found > 500


def test_listings_counts_and_tallies_match_sqlite(
    twins: tuple[SqliteStore, PostgresMemoryStore],
) -> None:
    sqlite, postgres = twins
    for where in filters():
        for order in ("updated", "event", "created"):
            for descending in (True, False):
                for limit, offset in ((None, 0), (7, 3), (-1, -2)):
                    options: dict[str, Any] = {
                        "order": order,
                        "descending": descending,
                        "limit": limit,
                        "offset": offset,
                    }
                    assert postgres.select(where, **options) == sqlite.select(where, **options)
        assert postgres.count(where) == sqlite.count(where)
        for by in (("scope",), ("kind", "level", "archived"), ("day",), ("week", "title_norm")):
            assert postgres.tally(where, by) == sqlite.tally(where, by)
        assert postgres.tally(where, ("month",), min_count=5) == sqlite.tally(
            where, ("month",), min_count=5
        )
    assert postgres.scopes() == sqlite.scopes()
    assert list(postgres.export(SCOPES)) == list(sqlite.export(SCOPES))
    assert postgres.verify() == []


# ------------------------------------------------------------------ processes, kills, threads


def test_concurrent_processes_lose_and_duplicate_nothing(
    new_uri: Callable[[], str],
) -> None:
    from memsvc_support import SHARED_KEY, SHARED_TITLE, STRESS_CONFIG, STRESS_SCOPE

    database = new_uri()
    stressed = subprocess.run(
        [sys.executable, str(WRITER), "stress", database, str(WORKERS), str(REMEMBERS_PER_WORKER)],
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_SECONDS,
    )
    assert stressed.returncode == 0, stressed.stdout + stressed.stderr
    with MemoryService.open(None, database=database, config=STRESS_CONFIG) as memory:
        everything = memory.store.select(EntryFilter(scopes=(STRESS_SCOPE,), archived=None))
        assert len({item.id for item in everything}) == len(everything)
        findings = sorted(item.body for item in everything if item.kind == "episodic")
        assert findings == sorted(
            f"Worker {w} finding number {i}"
            for w in range(WORKERS)
            for i in range(REMEMBERS_PER_WORKER)
        )
        versions = [item for item in everything if item.key == SHARED_KEY]
        assert len(versions) == WORKERS * REMEMBERS_PER_WORKER
        assert sum(item.active for item in versions) == 1
        assert sum(item.superseded_by is not None for item in versions) == len(versions) - 1
        (merged,) = [item for item in everything if item.title == SHARED_TITLE]
        assert merged.reinforce_count == WORKERS * REMEMBERS_PER_WORKER - 1
        notes = [line for line in merged.body.splitlines() if line.startswith("note ")]
        assert sorted(notes) == sorted(
            f"note {w}-{i}" for w in range(WORKERS) for i in range(REMEMBERS_PER_WORKER)
        )
        assert memory.check(scope=STRESS_SCOPE)["ok"]


def test_killed_writers_never_lose_an_acknowledged_memory(new_uri: Callable[[], str]) -> None:
    from memsvc_support import STRESS_CONFIG, STRESS_SCOPE

    database = new_uri()
    acknowledged, outcomes = kill_writers(
        [sys.executable, str(WRITER), "zygote", database],
        kills=KILLS,
        seed=20260506,
        latest_kill_seconds=LATEST_KILL_SECONDS,
        timeout=PROCESS_TIMEOUT_SECONDS,
    )
    assert outcomes == [-signal.SIGKILL] * KILLS
    assert acknowledged, "no remember returned before a kill: the test tested nothing"
    with MemoryService.open(None, database=database, config=STRESS_CONFIG) as memory:
        stored = [item.id for item in memory.store.export((STRESS_SCOPE,))]
        assert len(stored) == len(set(stored))
        assert set(acknowledged) <= set(stored)
        assert memory.check(scope=STRESS_SCOPE)["ok"]
        recalled = memory.recall("crash test memory", scope=STRESS_SCOPE, limit=5)
        assert recalled["count"] == min(5, len(stored))


def test_a_writer_killed_inside_its_transaction_leaves_nothing_and_no_lock(
    open_store: Callable[..., PostgresMemoryStore], new_uri: Callable[[], str]
) -> None:
    from memsvc_postgres_support import SCOPE

    uri = new_uri()
    store = open_store(uri)
    with store.transaction() as tx:
        tx.insert(entry(SCOPE, id="before"))
    holder = subprocess.Popen(
        [sys.executable, str(HELPER), "hold", uri, "doomed"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    line = holder.stdout.readline()
    assert line == "inserted doomed\n", line + (holder.stderr.read() if holder.stderr else "")
    holder.send_signal(signal.SIGKILL)
    assert holder.wait(timeout=PROCESS_TIMEOUT_SECONDS) == -signal.SIGKILL
    # The server rolls the dead client's transaction back and frees its lock: this write waits
    # for that, then sees no trace of it.
    with store.transaction() as tx:
        assert tx.select(EntryFilter(scopes=(SCOPE,), archived=None)) == [entry(SCOPE, id="before")]
        tx.insert(entry(SCOPE, id="after"))
    assert [item.id for item in store.export((SCOPE,))] == ["before", "after"]
    assert store.verify() == []
    assert sql(store, "SELECT documents FROM {schema}.memory_stats") == [(2,)]


def test_a_fork_neither_shares_nor_breaks_pooled_connections(new_uri: Callable[[], str]) -> None:
    from memsvc_postgres_support import SCOPE

    uri = new_uri()
    forked = subprocess.run(
        [sys.executable, str(HELPER), "fork", uri],
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_SECONDS,
    )
    assert forked.returncode == 0, forked.stderr
    assert forked.stdout == "child 0\n"
    store = PostgresMemoryStore(uri)
    try:
        stored = sorted(item.id for item in store.export((SCOPE,)))
    finally:
        store.close()
    assert stored == ["child", "parent-1", "parent-2"]


def test_concurrent_first_users_create_the_namespace_once(new_uri: Callable[[], str]) -> None:
    """The tables are created without IF NOT EXISTS: a second creator would fail."""
    uri = new_uri()
    start = threading.Barrier(8)
    failures: list[BaseException] = []

    def first_use(index: int) -> None:
        # A harmless parameter of its own gives each user a pool, so all eight connect at once.
        base, namespace = uri.split("#")
        own = PostgresMemoryStore(f"{base}&keepalives_idle={30 + index}#{namespace}")
        try:
            start.wait()
            with own.transaction() as tx:
                tx.insert(entry(id=f"writer-{index}"))
        except BaseException as error:
            failures.append(error)
        finally:
            own.close()

    threads = [threading.Thread(target=first_use, args=(index,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    reader = PostgresMemoryStore(uri)
    try:
        assert reader.count(EntryFilter(scopes=("/w",))) == 8
        assert reader.verify() == []
    finally:
        reader.close()


def test_threads_of_one_process_share_a_store(store: PostgresMemoryStore) -> None:
    def write(worker: int) -> None:
        for index in range(15):
            with store.transaction() as tx:
                tx.insert(entry(id=f"{worker}-{index}", title=f"Thread {worker} note {index}"))

    threads = [threading.Thread(target=write, args=(worker,)) for worker in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.count(EntryFilter(scopes=("/w",))) == 90
    assert store.verify() == []


# ------------------------------------------------------------------------------- isolation


def test_every_store_call_keeps_to_its_scopes(store: PostgresMemoryStore) -> None:
    mine, theirs = entry("/a", title="secret plan"), entry("/b", title="secret plan")
    with store.transaction() as tx:
        tx.insert(mine)
        tx.insert(theirs)
    only_a = EntryFilter(scopes=("/a",), archived=None)
    assert store.select(only_a) == [mine]
    assert store.select(replace(only_a, ids=(theirs.id,))) == []
    assert store.count(replace(only_a, ids=(theirs.id,))) == 0
    assert store.tally(only_a, ("scope", "title_norm")) == [(("/a", "secret plan"), 1)]
    assert [m.id for m in store.search(TextQuery(("secret",)), only_a, 10)] == [mine.id]
    assert store.search(TextQuery(("secret",)), replace(only_a, ids=(theirs.id,)), 10) == []
    assert list(store.export(("/a",))) == [mine]
    store.touch(("/a",), (theirs.id,), "2030-01-01T00:00:00.000Z")
    with store.transaction() as tx:
        assert tx.delete("/a", (theirs.id,)) == 0
        with pytest.raises(StoreConflict, match="does not exist in scope /a"):
            tx.replace(replace(theirs, scope="/a", title="hijacked"))
        assert tx.select(replace(only_a, ids=(theirs.id,))) == []
    assert list(store.export(("/b",))) == [theirs]


def test_every_statement_names_the_scopes_it_reads(
    store: PostgresMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scope is a predicate of the SQL itself: each statement on the entries or the postings
    carries the scopes (or their hashes) as parameters; nothing is filtered afterwards."""
    import psycopg

    item = entry("/a", title="secret plan", tags=("x",))
    with store.transaction() as tx:
        tx.insert(item)
    seen: list[tuple[str, Any]] = []

    def recorder(original: Callable[..., Any]) -> Callable[..., Any]:
        def recording(cursor: Any, query: Any, params: Any = None, **options: Any) -> Any:
            seen.append((str(query), params))
            return original(cursor, query, params, **options)

        return recording

    for cursor_class in (psycopg.Cursor, psycopg.ServerCursor):
        monkeypatch.setattr(cursor_class, "execute", recorder(cursor_class.execute))
    where = EntryFilter(scopes=("/a",), tags=("x",), archived=None)
    store.select(where)
    store.count(where)
    store.tally(where, ("day",))
    store.search(TextQuery(("secret", "plan")), where, 5)
    list(store.export(("/a",)))
    store.touch(("/a",), (item.id,), STAMP)
    store.save_vectors(("/a",), "test://model", {item.id: ("digest", [1.0, 0.0])})
    assert store.vectors(("/a",), "test://model", {item.id: "digest"}) == {item.id: (1.0, 0.0)}
    with store.transaction() as tx:
        tx.select(where)
        tx.replace(item.evolve(title="secret plans"))
        tx.delete("/a", (item.id,))
    hashed = scope_hash("/a")
    touching = [(query, params) for query, params in seen if "memory_" in query]
    assert len(touching) >= 12
    for query, params in touching:
        per_scope = ("memory_entries", "memory_postings", "memory_scope_counts", "memory_session")
        if not any(table in query for table in per_scope):
            # The totals BM25 takes over the whole namespace, as FTS5 does: numbers, no text.
            assert "memory_stats" in query or "memory_terms" in query, query
            continue
        values = list(params.values()) if isinstance(params, dict) else list(params or [])
        assert "scope" in query, query
        # The scope itself, or (for postings) its hash, once or once per row.
        assert any(
            value in ("/a", ["/a"], hashed) or (isinstance(value, list) and {*value} == {hashed})
            for value in values
        ), query


def test_namespaces_of_one_database_are_isolated(
    open_store: Callable[..., PostgresMemoryStore],
) -> None:
    first, second = open_store(), open_store()
    shared = entry("/w", title="budget review")
    with first.transaction() as tx:
        tx.insert(shared)
    before = first.search(TextQuery(("budget",)), EntryFilter(scopes=("/w",)), 5)
    with second.transaction() as tx:
        tx.insert(shared)  # the same id and scope: another namespace, no conflict
        for index in range(5):
            tx.insert(entry("/w", title=f"budget budget {index}"))
    assert first.search(TextQuery(("budget",)), EntryFilter(scopes=("/w",)), 5) == before
    assert [(s.scope, s.active) for s in first.scopes()] == [("/w", 1)]
    assert [(s.scope, s.active) for s in second.scopes()] == [("/w", 6)]
    with first.transaction() as tx:
        assert tx.delete("/w", (shared.id,)) == 1
    assert second.count(EntryFilter(scopes=("/w",), ids=(shared.id,))) == 1


@pytest.fixture
def two_workspaces(
    tmp_path: Path, open_memory: Callable[..., MemoryService]
) -> tuple[MemoryService, MemoryService]:
    """Two services on one namespace (memsvc_support.memory_database), one per workspace."""
    (tmp_path / "alpha").mkdir()
    (tmp_path / "beta").mkdir()
    return open_memory(workspace=tmp_path / "alpha"), open_memory(workspace=tmp_path / "beta")


def test_no_service_operation_leaks_across_workspaces(
    two_workspaces: tuple[MemoryService, MemoryService],
) -> None:
    alpha, beta = two_workspaces
    secret = alpha.remember(
        "Alpha launch codename Bluebird", kind="fact", key="codename", tags=["secret"]
    )["id"]
    alpha.remember("Alpha merges notes\nfirst")
    beta.remember("Beta public notes")
    assert beta.recall("bluebird codename launch")["results"] == []
    assert beta.recall("bluebird", include_archived=True, kind="fact")["results"] == []
    assert beta.recall()["count"] == 1
    assert beta.history("codename")["versions"] == []
    assert beta.browse(include_archived=True)["total_entries"] == 1
    assert beta.stats()["active"] == 1
    assert "Bluebird" not in beta.digest()["text"]
    for operation in (
        lambda: beta.get(secret),
        lambda: beta.update(secret, text="overwritten"),
        lambda: beta.forget(secret),
        lambda: beta.forget(secret, purge=True),
    ):
        with pytest.raises(MemoryServiceError) as error:
            operation()
        assert error.value.code == "not_found"
    assert beta.remember("Beta codename", kind="fact", key="codename")["action"] == "created"
    assert beta.remember("Alpha merges notes\nsecond")["action"] == "created"
    assert alpha.get(secret)["archived"] is False
    assert alpha.recall("bluebird")["count"] == 1


# ------------------------------------------------------------------------------- injection

HOSTILE = [
    "'; DROP SCHEMA public CASCADE; --",
    "\\'; SELECT pg_sleep(30); --",
    "$$; DROP TABLE memory_entries; $$",
    "$tag$ ) OR 1=1 --$tag$",
    "%s %(w_scopes)s %% {schema} {clause} $1 :name ?",
    "E'\\x27' || chr(39) || '",
    "*/ SELECT 1; /* ARRAY['a']::text[] @> '{}' ",
    '" OR "1"="1 \\" \\\\',
    "NEAR(a b) AND NOT c* ^d scope_term: x",
    "ЁЖ ∑ 🚀 \u202e reversed \u200b zero-width \u2028 separator",
    "a" * 300 + " OR " + "b" * 300,
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_is_stored_verbatim_in_every_field(memory: MemoryService, text: str) -> None:
    result = memory.remember(
        f"{text}\nbody {text}",
        title=text[:200].replace("\n", " "),
        key=text[:200],
        tags=[text[:64]],
        context=text,
        source={"session": text[:200], "run": text[:200], "reason": text[:200]},
    )
    stored = memory.get(result["id"])
    assert stored["body"] == f"{text}\nbody {text}".strip()
    assert stored["title"] == clean_title(text[:200].replace("\n", " "))
    assert stored["key"] == clean_key(text[:200])
    assert stored["tags"] == list(clean_tags([text[:64]]))
    assert stored["context"] == text.strip()
    assert stored["source"] == {name: text[:200].strip() for name in ("session", "run", "reason")}
    assert memory.recall(tags=[text[:64]])["count"] == 1
    assert memory.history(text[:200])["versions"][0]["id"] == result["id"]
    assert memory.stats()["active"] == 1
    assert memory.check()["ok"]
    assert memory.store.verify() == []


@pytest.mark.parametrize("query", [*HOSTILE, "'", '"', "%", "%%s", "{", "}", "$1", ";", "\\"])
def test_query_syntax_in_recall_is_inert(memory: MemoryService, query: str) -> None:
    target = memory.remember("Bluebird launch plan", tags=["launch"])["id"]
    memory.remember("Unrelated entry")
    assert isinstance(memory.recall(query)["results"], list)
    assert target in [hit["id"] for hit in memory.recall(f"{query} bluebird")["results"]]
    assert memory.recall(query, tags=[query[:64]])["results"] == []
    assert memory.stats()["active"] == 2


def test_hostile_filters_and_scopes_are_values_not_syntax(memory: MemoryService) -> None:
    memory.remember("Tagged", tags=["ops"])
    assert memory.recall(tags=["ops' OR '1'='1"])["results"] == []
    assert memory.browse(tags=["{ops}"])["total_entries"] == 0
    assert memory.recall("tagged", scope="/tmp/x' OR scope != '")["results"] == []
    assert memory.recall("tagged", scope="/tmp/$$ OR TRUE $$")["results"] == []
    with pytest.raises(MemoryServiceError):
        memory.get("x' OR '1'='1")
    assert memory.stats()["active"] == 1


@pytest.mark.parametrize(
    "namespace",
    [
        'x"; DROP SCHEMA public CASCADE; --',
        "x'; DROP SCHEMA public CASCADE; --",
        "Upper",
        "9lives",
        "pg_catalog",
        "pg_temp",
        "information_schema",
        "two words",
        "dotted.name",
        "semi;colon",
        "x" * 64,
        "",
        "ünicode",
        "x%00y",
        "x\x00y",
    ],
)
def test_a_hostile_or_invalid_namespace_is_refused_before_any_sql(
    memory_postgres: Any, namespace: str
) -> None:
    before = _schemas(memory_postgres)
    with pytest.raises(MemoryServiceError) as error:
        PostgresMemoryStore(memory_postgres.socket_uri(namespace))
    assert error.value.code == "invalid_argument"
    assert error.value.field == "database"
    assert "namespace" in error.value.message
    assert _schemas(memory_postgres) == before


def _schemas(cluster: Any) -> list[str]:
    with cluster.connect() as connection:
        rows = connection.execute("SELECT nspname FROM pg_namespace ORDER BY nspname").fetchall()
    return [name for (name,) in rows]


# ------------------------------------------------------------------------------ credentials


def test_a_password_never_appears_in_errors_or_reprs(memory_postgres: Any) -> None:
    wrong = "Wr0ng-s3cret-Passw0rd"
    namespace = f"t{uuid.uuid4().hex[:12]}"
    store = PostgresMemoryStore(memory_postgres.tcp_uri(namespace, password=wrong))
    assert wrong not in repr(store) and "***" in repr(store)
    with pytest.raises(MemoryServiceError) as error:
        store.count(EntryFilter(scopes=("/w",)))
    assert error.value.code == "store_failure"
    assert "password authentication failed" in error.value.message
    assert wrong not in str(error.value) and wrong not in repr(error.value)
    assert error.value.__cause__ is None and error.value.__suppress_context__
    store.close()
    right = PostgresMemoryStore(memory_postgres.tcp_uri(namespace))
    try:
        assert right.count(EntryFilter(scopes=("/w",))) == 0
        assert memory_postgres.password not in repr(right)
    finally:
        right.close()


def test_credentials_can_come_from_the_pg_environment(
    memory_postgres: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGUSER", "postgres")
    monkeypatch.setenv("PGPASSWORD", memory_postgres.password)
    namespace = f"t{uuid.uuid4().hex[:12]}"
    store = PostgresMemoryStore(
        f"postgresql://127.0.0.1:{memory_postgres.port}/postgres#{namespace}"
    )
    try:
        with store.transaction() as tx:
            tx.insert(entry())
        assert store.count(EntryFilter(scopes=("/w",))) == 1
    finally:
        store.close()


# ------------------------------------------------------------------------ schema and index


def test_the_schema_is_created_once_with_durable_read_committed_writes(
    store: PostgresMemoryStore,
) -> None:
    with store.transaction() as tx:
        tx.insert(entry())
    tables = sql(
        store,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
        "ORDER BY table_name",
        store.namespace,
    )
    assert tables == [
        ("memory_entries",),
        ("memory_meta",),
        ("memory_postings",),
        ("memory_scope_counts",),
        ("memory_session_tails",),
        ("memory_stats",),
        ("memory_terms",),
        ("memory_vectors",),
    ]
    assert sql(
        store, "SELECT proname FROM pg_proc WHERE pronamespace = %s::regnamespace", store.namespace
    ) == [("memory_frequency",)]
    assert sql(store, "SELECT name, value FROM {schema}.memory_meta ORDER BY name") == [
        ("analyzer", store.analyzer.signature),
        ("schema", "2"),
    ]
    assert sql(store, "SHOW synchronous_commit") == [("on",)]
    with store._connection() as connection, connection.transaction():
        isolation = connection.execute("SHOW transaction_isolation").fetchone()
    assert isolation == ("read committed",)


def test_a_user_who_may_not_create_schemas_uses_one_made_for_it(memory_postgres: Any) -> None:
    role, namespace = f"r{uuid.uuid4().hex[:12]}", f"t{uuid.uuid4().hex[:12]}"
    with memory_postgres.connect() as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
    uri = (
        f"postgresql://{role}@/postgres?host={memory_postgres.socket_dir}"
        f"&port={memory_postgres.port}#{namespace}"
    )
    refused = PostgresMemoryStore(uri)
    with pytest.raises(MemoryServiceError, match="permission denied for database postgres"):
        refused.count(EntryFilter(scopes=("/w",)))
    refused.close()
    with memory_postgres.connect() as admin:
        admin.execute(f"CREATE SCHEMA {namespace} AUTHORIZATION {role}")
    store = PostgresMemoryStore(uri)
    try:
        with store.transaction() as tx:
            tx.insert(entry(title="Least privilege"))
        assert [
            m.score > 0
            for m in store.search(TextQuery(("privileg",)), EntryFilter(scopes=("/w",)), 5)
        ] == [True]
        assert store.verify() == []
    finally:
        store.close()


def test_a_conflict_undoes_one_write_and_the_transaction_goes_on(
    store: PostgresMemoryStore,
) -> None:
    keyed = entry(key="k")
    kept = entry(title="kept")
    with store.transaction() as tx:
        tx.insert(keyed)
        with pytest.raises(StoreConflict, match="already has an active entry with key 'k'"):
            tx.insert(entry(key="k"))
        with pytest.raises(StoreConflict, match="already exists"):
            tx.insert(entry(id=keyed.id, key=None))
        tx.insert(kept)
        with pytest.raises(StoreConflict, match="already has an active entry with key 'k'"):
            tx.replace(kept.evolve(key="k"))
    assert {item.id for item in store.export(("/w",))} == {keyed.id, kept.id}
    assert store.select(EntryFilter(scopes=("/w",), ids=(kept.id,)))[0].key is None
    assert store.verify() == []


def test_an_index_built_by_another_analyser_is_rebuilt(
    open_store: Callable[..., PostgresMemoryStore], new_uri: Callable[[], str]
) -> None:
    uri = new_uri()
    plain = open_store(uri, Analyzer(stem=False))
    with plain.transaction() as tx:
        tx.insert(entry(title="Painting lessons"))
    assert plain.search(TextQuery(("paint",)), EntryFilter(scopes=("/w",)), 5) == []
    plain.close()
    stemmed = open_store(uri)
    assert len(stemmed.search(TextQuery(("paint",)), EntryFilter(scopes=("/w",)), 5)) == 1
    assert stemmed.verify() == []


def test_a_newer_schema_is_refused(
    open_store: Callable[..., PostgresMemoryStore], new_uri: Callable[[], str]
) -> None:
    uri = new_uri()
    store = open_store(uri)
    store.verify()
    sql(store, "UPDATE {schema}.memory_meta SET value = '99' WHERE name = 'schema'")
    with pytest.raises(MemoryServiceError, match="has memory schema 99") as error:
        open_store(uri).verify()
    assert error.value.code == "store_failure"


def test_purge_removes_the_text_from_the_index_and_the_totals(
    store: PostgresMemoryStore,
) -> None:
    item = entry(title="Credit card 4111 1111")
    other = entry(title="Grocery list")  # its scope, groceri, list, bodi: 4 tokens
    with store.transaction() as tx:
        tx.insert(item)
        tx.insert(other)
    traces = (
        "SELECT (SELECT count(*) FROM {schema}.memory_postings WHERE term = '4111'), "
        "(SELECT count(*) FROM {schema}.memory_terms WHERE term IN ('4111', 'credit', 'card'))"
    )
    assert sql(store, traces) == [(1, 3)]
    with store.transaction() as tx:
        assert tx.delete("/w", (item.id,)) == 1
    assert sql(store, traces) == [(0, 0)]
    assert sql(store, "SELECT documents, tokens FROM {schema}.memory_stats") == [(1, 4)]
    assert store.verify() == []


def test_verify_finds_a_damaged_index_and_rebuild_repairs_it(
    store: PostgresMemoryStore,
) -> None:
    with store.transaction() as tx:
        for index in range(3):
            tx.insert(entry(title=f"Deploy note {index}", body="deploy the release"))
    sql(store, "DELETE FROM {schema}.memory_postings WHERE term = 'releas'")
    sql(store, "UPDATE {schema}.memory_stats SET tokens = tokens + 7")
    problems = store.verify()
    assert len(problems) == 3
    assert "(3, 25), the table's (3, 18)" in problems[0]
    assert "1 of the text index's term counts disagree" in problems[1]
    assert "3 entries disagree with the text index" in problems[2]
    assert all("rebuild_index" in problem for problem in problems)
    store.rebuild_index()
    assert store.verify() == []
    assert len(store.search(TextQuery(("releas",)), EntryFilter(scopes=("/w",)), 5)) == 3


def test_a_store_can_be_used_again_after_close(store: PostgresMemoryStore) -> None:
    with store.transaction() as tx:
        tx.insert(entry())
    store.close()
    assert store.count(EntryFilter(scopes=("/w",))) == 1
    assert "PostgresMemoryStore('postgresql://postgres@/postgres?host=" in repr(store)
