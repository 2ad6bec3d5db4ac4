"""Support for the memory tests: one fixture per backend, calls through the router, writers.

The `backend` fixture is parametrised over JSONL, SQLite and PostgreSQL (a throwaway cluster,
see pg_cluster.py), so a test written once runs against all three; test modules import the
fixtures they use. Run as a script, this module starts the writer processes of the reliability
tests, forked from one process that imported everything once, so all writers start at once:

    python memory_support.py stress URI ROOT WORKERS COUNT  # WORKERS writers, COUNT adds each
    python memory_support.py zygote URI ROOT     # "go" forks a writer, "kill" SIGKILLs it

A zygote's writer adds records until it is killed, printing `id <id>` after each `add`
returned; the zygote prints `started <pid>` and, once the writer is gone, `ended <pid> <code>`.
A writer that fails prints `error <what>`.
"""

from __future__ import annotations

import os
import signal
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentscript.providers.memory import rules
from agentscript.providers.memory.router import MemoryRouter
from agentscript.runtime.ports import MemoryRequest

BACKENDS = ("jsonl", "sqlite", "postgres")
SQL_BACKENDS = ("sqlite", "postgres")
# How many adds a forked writer makes at most before it exits by itself.
WRITER_MAX_ADDS = 100_000


@dataclass
class MemoryBackend:
    """One backend for one test: memory URIs in a fresh place, and a router to call them."""

    name: str
    root: Path
    router: MemoryRouter
    # PostgreSQL tests share one cluster, so each test gets namespaces of its own.
    prefix: str = ""
    postgres: Any = None

    def uri(self, namespace: str = "memory") -> str:
        if self.name == "jsonl":
            return f"file://{self.root}/{namespace}.jsonl"
        if self.name == "sqlite":
            return f"sqlite://{self.root}/memory.db#{namespace}"
        return str(self.postgres.socket_uri(f"{self.prefix}{namespace}"))

    def add(self, record: Any, namespace: str = "memory") -> Any:
        return self.router.add(MemoryRequest("M", self.uri(namespace), "add", record))

    def query(self, query: Any, namespace: str = "memory") -> Any:
        return self.router.query(MemoryRequest("M", self.uri(namespace), "query", query))


@pytest.fixture(scope="session")
def postgres_cluster() -> Any:
    """The session's throwaway PostgreSQL cluster; skips when PostgreSQL is not installed."""
    import pg_cluster
    from system_parts import require

    require("postgres")
    return pg_cluster.shared_cluster()


@pytest.fixture
def open_backend(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[str], MemoryBackend]]:
    """`open_backend(name)`: a backend in this test's directory (and namespaces), closed after."""
    routers: list[MemoryRouter] = []
    prefix = f"t{uuid.uuid4().hex[:12]}_"

    def open_(name: str) -> MemoryBackend:
        postgres = request.getfixturevalue("postgres_cluster") if name == "postgres" else None
        routers.append(MemoryRouter(tmp_path, tmp_path))
        return MemoryBackend(name, tmp_path, routers[-1], prefix, postgres)

    yield open_
    for router in routers:
        router.close()


@pytest.fixture(params=BACKENDS)
def backend(
    request: pytest.FixtureRequest, open_backend: Callable[[str], MemoryBackend]
) -> MemoryBackend:
    return open_backend(request.param)


@pytest.fixture(params=SQL_BACKENDS)
def sql_backend(
    request: pytest.FixtureRequest, open_backend: Callable[[str], MemoryBackend]
) -> MemoryBackend:
    return open_backend(request.param)


@pytest.fixture
def same_millisecond(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every new envelope gets the same created_at, so only storage order can break ties."""
    monkeypatch.setattr(rules, "timestamp", lambda: "2026-11-30T04:00:00.000Z")


# ---------------------------------------------------------------------- writer processes


def stress(uri: str, root: str, workers: int, count: int) -> int:
    """Fork `workers` writers that each add `count` records at once; 0 if all succeeded."""
    _warm_up(uri, root)
    writers = [
        _fork(lambda worker=worker: _add_records(uri, root, worker, count))
        for worker in range(workers)
    ]
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in writers]
    return 0 if codes == [0] * workers else 1


def zygote(uri: str, root: str) -> None:
    """Fork one writer per "go" read from stdin; SIGKILL it at the next line ("kill")."""
    _warm_up(uri, root)
    while sys.stdin.readline().strip() == "go":
        pid = _fork(lambda: _add_until_killed(uri, root))
        os.write(1, f"started {pid}\n".encode())
        sys.stdin.readline()
        # The writer is not reaped before this kill, so its pid cannot belong to anyone else.
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        os.write(1, f"ended {pid} {os.waitstatus_to_exitcode(status)}\n".encode())


def _warm_up(uri: str, root: str) -> None:
    """Import everything a writer needs before forking, so writers start at once. A query
    stores nothing, and its router is closed, so no writer inherits a connection."""
    router = MemoryRouter(root, root)
    router.query(MemoryRequest("Writer", uri, "query", {}))
    router.close()


def _fork(work: Callable[[], None]) -> int:
    """Run `work` in a child process; a failure is printed as an `error` line, exit code 1."""
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


def _add_records(uri: str, root: str, worker: int, count: int) -> None:
    router = MemoryRouter(root, root)
    for index in range(count):
        record = {"kind": "stress", "text": f"worker {worker} #{index}", "worker": worker}
        router.add(MemoryRequest("Writer", uri, "add", {**record, "index": index}))
    router.close()


def _add_until_killed(uri: str, root: str) -> None:
    """Print `id <id>` once each add returned, in one write, so a kill cannot tear a line."""
    router = MemoryRouter(root, root)
    for index in range(WRITER_MAX_ADDS):
        envelope = router.add(
            MemoryRequest("Writer", uri, "add", {"kind": "crash", "text": f"#{index}"})
        )
        os.write(1, f"id {envelope['id']}\n".encode())


if __name__ == "__main__":
    command, arguments = sys.argv[1], sys.argv[2:]
    if command == "stress":
        sys.exit(stress(arguments[0], arguments[1], int(arguments[2]), int(arguments[3])))
    elif command == "zygote":
        zygote(arguments[0], arguments[1])
    else:
        sys.exit(f"unknown command {command!r}")
