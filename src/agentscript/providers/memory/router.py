"""The memory provider of a run: sends each `add` / `query` to the backend its URI names.

`file://` is JSONL, `sqlite://` SQLite, `postgresql://` / `postgres://` PostgreSQL. The router
makes envelopes and validates queries (through `rules`) before any backend sees them, and keeps
each backend open for the run: one store per location, one connection pool per PostgreSQL
server. Close it when the run ends. A backend's module is imported when a program first uses
it, so a run that keeps no memory does not pay for loading them (filelock alone costs more than
a small run).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscript.providers.memory.locations import (
    JsonlLocation,
    MemoryLocation,
    SqliteLocation,
    parse_location,
)
from agentscript.providers.memory.rules import MemoryQuery, new_envelope
from agentscript.providers.memory.store import MemoryStore
from agentscript.providers.storage.postgres_connections import PostgresServer
from agentscript.providers.tools.workspace import Workspace
from agentscript.runtime.ports import MemoryRequest

if TYPE_CHECKING:
    from agentscript.providers.storage.postgres_connections import ConnectionPool

# Memory files are not capped by the jail's per-file limit (which is for tool reads).
MAX_MEMORY_FILE_BYTES = 1 << 40


class OpenStores:
    """The stores opened so far, reused for every later operation on the same location. JSONL
    files are opened through `jail` (the workspace) when one is given."""

    def __init__(self, jail: Workspace | None = None) -> None:
        self._jail = jail
        self._stores: dict[MemoryLocation, MemoryStore] = {}
        # The namespaces of one PostgreSQL database share its pool.
        self._pools: dict[PostgresServer, ConnectionPool] = {}
        self._lock = threading.Lock()

    def get(self, location: MemoryLocation) -> MemoryStore:
        with self._lock:
            store = self._stores.get(location)
            if store is None:
                store = self._open(location)
                self._stores[location] = store
            return store

    def close(self) -> None:
        with self._lock:
            stores, self._stores = list(self._stores.values()), {}
            pools, self._pools = list(self._pools.values()), {}
        for store in stores:
            store.close()
        for pool in pools:
            pool.close()

    def _open(self, location: MemoryLocation) -> MemoryStore:
        if isinstance(location, JsonlLocation):
            from agentscript.providers.memory.jsonl import JsonlStore

            return JsonlStore(location.path, self._jail)
        if isinstance(location, SqliteLocation):
            from agentscript.providers.memory.sqlite import SqliteStore

            return SqliteStore(location.path, location.namespace)
        from agentscript.providers.memory.postgres import PostgresStore, connection_pool

        pool = self._pools.get(location.server)
        if pool is None:
            pool = connection_pool(location.server)
            self._pools[location.server] = pool
        return PostgresStore(location, pool)


class MemoryRouter:
    """A MemoryProvider over every backend, for one run.

    `workspace_root` bounds the file and SQLite paths a program may name; `program_dir`
    anchors relative paths (the current directory when the program has no file).
    """

    def __init__(self, workspace_root: str | Path, program_dir: str | Path | None = None) -> None:
        self.workspace_root = Path(workspace_root).absolute()
        self.program_dir = Path(program_dir).absolute() if program_dir is not None else Path.cwd()
        self._stores = OpenStores(
            Workspace(self.workspace_root, MAX_MEMORY_FILE_BYTES, windows_paths=False)
        )

    def __repr__(self) -> str:
        return f"MemoryRouter(workspace_root={str(self.workspace_root)!r})"

    def add(self, request: MemoryRequest) -> Any:
        store = self._store(request.uri)
        envelope = new_envelope(request.argument)
        store.add(envelope)
        return envelope

    def query(self, request: MemoryRequest) -> Any:
        store = self._store(request.uri)
        return store.query(MemoryQuery.parse(request.argument))

    def close(self) -> None:
        self._stores.close()

    def _store(self, uri: str) -> MemoryStore:
        return self._stores.get(parse_location(uri, self.program_dir, self.workspace_root))
