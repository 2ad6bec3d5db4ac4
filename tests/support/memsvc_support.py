"""Support for the memory service tests: services on a frozen clock, and writer processes.

Test modules use the `memory` fixture (a MemoryService) or `open_memory(**options)` for more;
each gets the test's own database (`memory_database`), a workspace directory and the FixedClock
`memory_clock`, which the test can move. The database is a SQLite file unless the module
overrides `memory_backend` with one returning `each_memory_backend`: then each test also runs
on PostgreSQL, in a namespace of its own in the session's throwaway cluster. Fixture names
carry `memory` so they never meet other support modules' `clock` or `workspace`. Run as a
script, this module starts the writer processes of the reliability tests, forked from one
process that imported everything once:

    python memsvc_support.py stress DB WORKERS COUNT   # WORKERS writers, COUNT remembers each
    python memsvc_support.py zygote DB [BATCH]         # "go" forks a writer, "kill" SIGKILLs it
    python memsvc_support.py capped DB WORKERS         # WORKERS batch writers fill a capped scope

DB is a SQLite file or a PostgreSQL URI, as MemoryService.open takes it.

A stress writer remembers COUNT distinct entries, plus one keyed fact and one merging title per
round that every writer shares, so supersede and merge race across processes. A zygote's writer
remembers until it is killed, printing `id <id>` after each remember returned; the zygote prints
`started <pid>` and, once the writer is gone, `ended <pid> <code>`. With BATCH, the writer
calls remember_many with BATCH items instead and prints every item's id once the call returned.
A capped writer remembers batches of CAPPED_BATCH episodic turns of a session of its own into
CAPPED_SCOPE (CAPPED_CONFIG) until the scope is full, printing `id <id>` per stored item.
Failures print `error ...`.
"""

from __future__ import annotations

import os
import signal
import sys
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentscript.memory import FixedClock, MemoryConfig, MemoryService, MemoryServiceError

START = datetime(2026, 5, 6, 9, 30, tzinfo=UTC)
MEMORY_BACKENDS = ("sqlite", "postgres")
STRESS_SCOPE = "/stress/workspace"
SHARED_KEY = "shared-counter"
SHARED_TITLE = "Shared lesson learned by every writer"
WRITER_MAX_REMEMBERS = 100_000
# Room for every writer's notes in the one entry they all merge into.
STRESS_CONFIG = MemoryConfig(max_entries=100_000, max_entry_bytes=1_000_000)
CAPPED_SCOPE = "/stress/capped"
CAPPED_CONFIG = MemoryConfig(max_entries=95)
CAPPED_BATCH = 4


@pytest.fixture
def memory_clock() -> FixedClock:
    return FixedClock(START)


@pytest.fixture
def memory_workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture(scope="session")
def memory_postgres() -> Any:
    """The session's throwaway PostgreSQL cluster (pg_cluster.py); skips when PostgreSQL is
    not installed."""
    import pg_cluster
    from system_parts import require

    require("postgres")
    return pg_cluster.shared_cluster()


@pytest.fixture
def memory_backend() -> str:
    """The store behind `memory_database`: SQLite, so tests stay fast, unless a module
    overrides this fixture with one that returns `each_memory_backend`."""
    return "sqlite"


@pytest.fixture(params=MEMORY_BACKENDS)
def each_memory_backend(request: pytest.FixtureRequest) -> str:
    """Each of MEMORY_BACKENDS in turn: what a module's `memory_backend` returns to run its
    tests on SQLite and on PostgreSQL."""
    return str(request.param)


@pytest.fixture
def memory_database(
    request: pytest.FixtureRequest, tmp_path: Path, memory_backend: str
) -> str | Path:
    """The `database` argument of MemoryService.open for this test: a file in its directory,
    or a PostgreSQL URI naming a namespace (schema) no other test uses."""
    if memory_backend == "postgres":
        cluster = request.getfixturevalue("memory_postgres")
        return str(cluster.socket_uri(f"t{uuid.uuid4().hex[:12]}"))
    return tmp_path / "memory.db"


@pytest.fixture
def open_memory(
    memory_database: str | Path, memory_clock: FixedClock, memory_workspace: Path
) -> Iterator[Callable[..., MemoryService]]:
    """`open_memory(**options)`: a service on this test's database, workspace and clock;
    options go to MemoryService.open (workspace=None for no workspace)."""
    opened: list[MemoryService] = []

    def make(**options: Any) -> MemoryService:
        options.setdefault("workspace", memory_workspace)
        options.setdefault("database", memory_database)
        options.setdefault("clock", memory_clock)
        memory = MemoryService.open(**options)
        opened.append(memory)
        return memory

    yield make
    for memory in opened:
        memory.close()


@pytest.fixture
def memory(open_memory: Callable[..., MemoryService]) -> MemoryService:
    return open_memory()


# ---------------------------------------------------------------------- writer processes


def _open(database: str) -> MemoryService:
    return MemoryService.open(None, database=database, config=STRESS_CONFIG)


def stress(database: str, workers: int, count: int) -> int:
    """Fork `workers` writers that remember at once; 0 if every one succeeded."""
    _warm_up(database)
    writers = [
        _fork(lambda worker=worker: _remember_many(database, worker, count))
        for worker in range(workers)
    ]
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in writers]
    return 0 if codes == [0] * workers else 1


def capped(database: str, workers: int) -> int:
    """Fork `workers` batch writers into the capped scope at once; 0 if every one succeeded."""
    _warm_up(database)
    writers = [
        _fork(lambda worker=worker: _fill_capped(database, worker)) for worker in range(workers)
    ]
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in writers]
    return 0 if codes == [0] * workers else 1


def _fill_capped(database: str, worker: int) -> None:
    memory = MemoryService.open(None, database=database, config=CAPPED_CONFIG)
    for batch in range(WRITER_MAX_REMEMBERS):
        items = [
            {
                "text": f"Worker {worker} batch {batch} turn {turn}",
                "kind": "episodic",
                "scope": CAPPED_SCOPE,
                "source": {"session": f"worker-{worker}"},
            }
            for turn in range(CAPPED_BATCH)
        ]
        try:
            results = memory.remember_many(items)
        except MemoryServiceError as error:
            if error.code != "scope_full":
                raise
            break
        os.write(1, "".join(f"id {result.id}\n" for result in results).encode())
    memory.close()


def zygote(database: str, batch: int = 1) -> None:
    """Fork one writer per "go" read from stdin; SIGKILL it at the next line ("kill")."""
    _warm_up(database)
    while sys.stdin.readline().strip() == "go":
        pid = _fork(lambda: _remember_until_killed(database, batch))
        os.write(1, f"started {pid}\n".encode())
        sys.stdin.readline()
        # The writer is not reaped before this kill, so its pid cannot belong to anyone else.
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        os.write(1, f"ended {pid} {os.waitstatus_to_exitcode(status)}\n".encode())


def _warm_up(database: str) -> None:
    """Create the database and import everything before forking; the service is closed, so
    no writer inherits a connection."""
    memory = _open(database)
    memory.stats(scope=STRESS_SCOPE)
    memory.close()


def _fork(work: Callable[[], None]) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 0
    try:
        work()
    except BaseException as error:
        os.write(1, f"error {error!r}".replace("\n", " ").encode() + b"\n")
        code = 1
    os._exit(code)


def _remember_many(database: str, worker: int, count: int) -> None:
    memory = _open(database)
    for index in range(count):
        memory.remember(
            f"Worker {worker} finding number {index}",
            kind="episodic",
            tags=[f"worker-{worker}"],
            scope=STRESS_SCOPE,
        )
        memory.remember(f"value {worker}-{index}", kind="fact", key=SHARED_KEY, scope=STRESS_SCOPE)
        memory.remember(
            f"{SHARED_TITLE}\nnote {worker}-{index}", kind="knowledge", scope=STRESS_SCOPE
        )
    memory.close()


def _remember_until_killed(database: str, batch: int) -> None:
    """Print `id <id>` once each remember returned, in one write, so a kill cannot tear it;
    with `batch` > 1, remember_many batches of episodic turns of one session."""
    memory = _open(database)
    for index in range(WRITER_MAX_REMEMBERS):
        if batch == 1:
            result = memory.remember(
                f"Crash test memory {os.getpid()} #{index}", kind="episodic", scope=STRESS_SCOPE
            )
            os.write(1, f"id {result.id}\n".encode())
            continue
        items = [
            {
                "text": f"Crash test batch {os.getpid()} #{index} item {item}",
                "kind": "episodic",
                "scope": STRESS_SCOPE,
                "source": {"session": f"crash-{os.getpid()}"},
            }
            for item in range(batch)
        ]
        results = memory.remember_many(items)
        os.write(1, "".join(f"id {result.id}\n" for result in results).encode())


if __name__ == "__main__":
    command, arguments = sys.argv[1], sys.argv[2:]
    if command == "stress":
        sys.exit(stress(arguments[0], int(arguments[1]), int(arguments[2])))
    elif command == "zygote":
        zygote(arguments[0], int(arguments[1]) if len(arguments) > 1 else 1)
    elif command == "capped":
        sys.exit(capped(arguments[0], int(arguments[1])))
    else:
        sys.exit(f"unknown command {command!r}")
