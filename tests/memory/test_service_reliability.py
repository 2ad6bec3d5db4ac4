"""Real processes, killed writers, scope isolation, and hostile text in every field.

Writers are separate processes forked by memsvc_support.py run as a script. Nothing here
measures time; a writer is SIGKILLed at a moment drawn from a seeded generator, and the test
then checks that the store opens and every remember that had returned is still there.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agentscript.memory import EntryFilter, MemoryService, MemoryServiceError
from zygote_support import kill_writers

pytest_plugins = ["memsvc_support"]

WRITER = Path(__file__).parents[1] / "support" / "memsvc_support.py"
WORKERS = 6
REMEMBERS_PER_WORKER = 60
KILLS = 30
LATEST_KILL_SECONDS = 0.05
PROCESS_TIMEOUT_SECONDS = 600


def test_concurrent_processes_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    from memsvc_support import SHARED_KEY, SHARED_TITLE, STRESS_CONFIG, STRESS_SCOPE

    database = tmp_path / "memory.db"
    stressed = subprocess.run(
        [
            sys.executable,
            str(WRITER),
            "stress",
            str(database),
            str(WORKERS),
            str(REMEMBERS_PER_WORKER),
        ],
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_SECONDS,
    )
    assert stressed.returncode == 0, stressed.stdout + stressed.stderr
    memory = MemoryService.open(None, database=database, config=STRESS_CONFIG)
    try:
        store = memory.store
        everything = store.select(EntryFilter(scopes=(STRESS_SCOPE,), archived=None))
        assert len({entry.id for entry in everything}) == len(everything)
        findings = sorted(entry.body for entry in everything if entry.kind == "episodic")
        assert findings == sorted(
            f"Worker {w} finding number {i}"
            for w in range(WORKERS)
            for i in range(REMEMBERS_PER_WORKER)
        )
        versions = [entry for entry in everything if entry.key == SHARED_KEY]
        assert len(versions) == WORKERS * REMEMBERS_PER_WORKER
        assert sum(entry.active for entry in versions) == 1
        assert sum(entry.superseded_by is not None for entry in versions) == len(versions) - 1
        (merged,) = [entry for entry in everything if entry.title == SHARED_TITLE]
        assert merged.reinforce_count == WORKERS * REMEMBERS_PER_WORKER - 1
        notes = [line for line in merged.body.splitlines() if line.startswith("note ")]
        assert sorted(notes) == sorted(
            f"note {w}-{i}" for w in range(WORKERS) for i in range(REMEMBERS_PER_WORKER)
        )
        assert memory.check(scope=STRESS_SCOPE)["ok"]
    finally:
        memory.close()


def test_threads_of_one_process_share_a_service(memory: MemoryService) -> None:
    def write(worker: int) -> None:
        for index in range(25):
            memory.remember(f"Thread {worker} note {index}", kind="episodic")

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, range(4)))
    assert memory.stats()["active"] == 100


def test_killed_writers_never_lose_an_acknowledged_memory(tmp_path: Path) -> None:
    from memsvc_support import STRESS_CONFIG, STRESS_SCOPE

    database = tmp_path / "memory.db"
    acknowledged, outcomes = kill_writers(
        [sys.executable, str(WRITER), "zygote", str(database)],
        kills=KILLS,
        seed=20260506,
        latest_kill_seconds=LATEST_KILL_SECONDS,
        timeout=PROCESS_TIMEOUT_SECONDS,
    )
    assert outcomes == [-signal.SIGKILL] * KILLS
    assert acknowledged, "no remember returned before a kill: the test tested nothing"
    memory = MemoryService.open(None, database=database, config=STRESS_CONFIG)
    try:
        stored = [e.id for e in memory.store.export((STRESS_SCOPE,))]
        assert len(stored) == len(set(stored))
        assert set(acknowledged) <= set(stored)
        assert memory.check(scope=STRESS_SCOPE)["ok"]
        recalled = memory.recall("crash test memory", scope=STRESS_SCOPE, limit=5)
        assert recalled["count"] == min(5, len(stored))
    finally:
        memory.close()


# ----------------------------------------------------------------------------- isolation


@pytest.fixture
def two_workspaces(
    tmp_path: Path, open_memory: Callable[..., MemoryService]
) -> tuple[MemoryService, MemoryService]:
    (tmp_path / "alpha").mkdir()
    (tmp_path / "beta").mkdir()
    return open_memory(workspace=tmp_path / "alpha"), open_memory(workspace=tmp_path / "beta")


def test_no_operation_leaks_across_workspaces(
    two_workspaces: tuple[MemoryService, MemoryService],
) -> None:
    alpha, beta = two_workspaces
    secret = alpha.remember(
        "Alpha launch codename Bluebird",
        kind="fact",
        key="codename",
        tags=["secret"],
        event_time="2026-05-01",
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
    # Same key and same title in another workspace create, never supersede or merge.
    assert beta.remember("Beta codename", kind="fact", key="codename")["action"] == "created"
    assert beta.remember("Alpha merges notes\nsecond")["action"] == "created"
    assert alpha.get(secret)["archived"] is False
    assert alpha.recall("bluebird")["count"] == 1


def test_explicit_scopes_reach_only_what_they_name(
    two_workspaces: tuple[MemoryService, MemoryService],
) -> None:
    alpha, beta = two_workspaces
    alpha.remember("Shared convention: tabs", scope="global")
    alpha.remember("Alpha only: spaces")
    found = beta.recall("tabs spaces")["results"]
    assert [hit["scope"] for hit in found] == ["global"]
    across = beta.recall("tabs spaces", scope=alpha.workspace)["results"]
    assert sorted(hit["scope"] for hit in across) == sorted(["global", alpha.workspace])


# ----------------------------------------------------------------------------- injection

HOSTILE = [
    "'; DROP TABLE memory_entries; --",
    '" OR 1=1 --',
    'title:secret OR body:* NEAR("a" "b", 2) AND NOT x',
    "{scope_term}: s0000 OR ^first *",
    '") OR ("',
    "<script>alert(1)</script> ${env:HOME} {{7*7}}",
    "ЁЖ ∑ 🚀 \u202e reversed \u200b zero-width",
    "a" * 300 + " OR " + "b" * 300,
    "-- /* */ ; -- \\ \\\\ %s %d ?1 :name",
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
    entry = memory.get(result["id"])
    assert entry["body"] == f"{text}\nbody {text}".strip()
    assert entry["context"] == text.strip()
    assert entry["source"]["session"] == text[:200].strip()
    assert memory.stats()["active"] == 1
    assert memory.check()["ok"]


@pytest.mark.parametrize(
    "query", [*HOSTILE, '"', "*", "NEAR(", "AND", "(", ")", "^", ":", "{", "-"]
)
def test_query_syntax_in_recall_is_inert(memory: MemoryService, query: str) -> None:
    target = memory.remember("Bluebird launch plan", tags=["launch"])["id"]
    memory.remember("Unrelated entry")
    found = memory.recall(query)
    assert isinstance(found["results"], list)
    assert target in [hit["id"] for hit in memory.recall(f"{query} bluebird")["results"]]
    for field in ("since", "until"):
        with pytest.raises(MemoryServiceError):
            memory.recall("x", **{field: query})


def test_hostile_filters_are_values_not_syntax(memory: MemoryService) -> None:
    memory.remember("Tagged", tags=["ops"])
    assert memory.recall(tags=["ops' OR '1'='1"])["results"] == []
    assert memory.browse(tags=['") OR 1=1 --'])["total_entries"] == 0
    with pytest.raises(MemoryServiceError):
        memory.recall(kind="fact' OR 1=1 --")
    with pytest.raises(MemoryServiceError):
        memory.get("x' OR '1'='1")
    # An absolute path with quotes is a valid, empty scope; only global answers besides it.
    assert memory.recall("tagged", scope="/tmp/x' OR scope != '")["results"] == []
    assert memory.stats()["active"] == 1
