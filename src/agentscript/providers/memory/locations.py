"""Memory URIs: which backend, which file or database, which namespace, and what may be shown.

File and SQLite paths are resolved against the program's directory and must stay inside the
workspace root. PostgreSQL URIs keep their password for connecting only: every text meant for
people (errors, reprs) is built from the scrubbed form, never from the URI as written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from agentscript.providers.storage.postgres_connections import PostgresServer
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.uris import SplitUri, scrub_uri

DEFAULT_NAMESPACE = "memory"
POSTGRES_SCHEMES = ("postgresql", "postgres")


@dataclass(frozen=True, slots=True)
class JsonlLocation:
    """`file://<path>`: one JSONL file holds one memory."""

    path: Path


@dataclass(frozen=True, slots=True)
class SqliteLocation:
    """`sqlite://<path>#<namespace>`: one namespace of a shared `memory_records` table."""

    path: Path
    namespace: str


@dataclass(frozen=True, slots=True)
class PostgresLocation:
    """`postgresql://user@host:port/db#<namespace>`: one namespace in a server's database."""

    server: PostgresServer
    namespace: str
    # The whole URI with its password replaced, for messages.
    display: str


MemoryLocation = JsonlLocation | SqliteLocation | PostgresLocation


def scheme_of(uri: str) -> str:
    """The URI scheme as the `Unsupported memory URI scheme` message names it."""
    scheme, separator, _ = uri.partition("://")
    return scheme if separator else uri.partition(":")[0]


def parse_location(uri: str, base_dir: Path, workspace_root: Path | None) -> MemoryLocation:
    """Where `uri` keeps its records. Relative paths resolve against `base_dir`; with a
    `workspace_root`, file and SQLite paths outside it are refused."""
    scheme, separator, rest = uri.partition("://")
    if not separator:
        raise ExecutionError(f"Unsupported memory URI scheme '{scheme_of(uri)}'")
    if scheme == "file":
        return JsonlLocation(_local_path(rest, base_dir, workspace_root))
    if scheme == "sqlite":
        location, _, namespace = rest.partition("#")
        path = _local_path(location, base_dir, workspace_root)
        return SqliteLocation(path, namespace or DEFAULT_NAMESPACE)
    if scheme in POSTGRES_SCHEMES:
        parts = SplitUri.split(uri)
        server = PostgresServer.of(
            parts, f"{parts.scheme}://{parts.shown_userinfo}{parts.shown_address}"
        )
        namespace = parts.fragment or DEFAULT_NAMESPACE
        return PostgresLocation(server, namespace, scrub_uri(uri))
    raise ExecutionError(f"Unsupported memory URI scheme '{scheme}'")


def _local_path(location: str, base_dir: Path, workspace_root: Path | None) -> Path:
    """The absolute path a file or SQLite URI names (percent-decoded), checked against the
    workspace root with symlinks resolved, so a link cannot lead a write outside it."""
    path = Path(os.path.abspath(base_dir / unquote(location)))
    if workspace_root is not None:
        try:
            root = os.path.realpath(workspace_root)
            real = os.path.realpath(path)
        except OSError as problem:  # a link changing while it is resolved
            raise ExecutionError(
                f"Memory path '{path}' cannot be resolved: {problem.strerror}"
            ) from None
        if os.path.commonpath([root, real]) != root:
            raise ExecutionError(
                f"Memory path '{path}' is outside workspace root '{os.path.abspath(workspace_root)}'"
            )
    return path
