"""The memory resource use cases of `agentscript memory`: show, export, import and repair.

The CLI parses options, calls one of these and renders the result. They act for the person at
the terminal, not for a program, so paths are not confined to a workspace root; relative
ones resolve against the current directory. Each call opens its store and closes it again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentscript.providers.memory.jsonl import RepairReport, repair_jsonl
from agentscript.providers.memory.locations import JsonlLocation, parse_location
from agentscript.providers.memory.router import OpenStores
from agentscript.providers.memory.rules import DEFAULT_LIMIT, Envelope, MemoryQuery, is_envelope
from agentscript.providers.memory.store import MemoryStore, MemoryStoreError
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.jsjson import parse


@dataclass(frozen=True, slots=True)
class ImportCounts:
    """What `import_records` did: envelopes stored, and envelopes whose id was already there."""

    added: int
    skipped: int


def show(
    uri: str, kind: str | None = None, text: str | None = None, limit: int = DEFAULT_LIMIT
) -> list[Envelope]:
    """The envelopes a program's `query({kind, text, limit})` would get, newest first."""
    arguments: dict[str, Any] = {"limit": limit}
    if kind is not None:
        arguments["kind"] = kind
    if text is not None:
        arguments["text"] = text
    query = MemoryQuery.parse(arguments)
    with _opened(uri) as store:
        return store.query(query)


def export(uri: str) -> Iterator[Envelope]:
    """Every envelope, oldest first; written as `stringify(envelope)` lines, the output is a
    JSONL memory file that `import_records` (or a `file://` memory) reads back."""
    with _opened(uri) as store:
        yield from store.export()


def import_records(uri: str, lines: Iterable[str], source: str = "<input>") -> ImportCounts:
    """Store the envelopes of JSONL `lines` (an export) with their ids and timestamps kept.

    Every line is checked before anything is written, so a bad line (named `<source>:<line>`)
    imports nothing. Envelopes whose id the memory already holds, or that repeat an earlier
    line, are skipped, so importing the same export twice adds nothing the second time.
    """
    envelopes: list[Envelope] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = parse(line)
        except ValueError as error:
            raise MemoryStoreError(f"Invalid memory JSONL at {source}:{number}: {error}") from None
        if not is_envelope(value):
            raise MemoryStoreError(f"Invalid memory JSONL envelope at {source}:{number}")
        envelopes.append({key: value[key] for key in ("id", "created_at", "updated_at", "record")})
    with _opened(uri) as store:
        added = store.import_envelopes(envelopes)
    return ImportCounts(added=added, skipped=len(envelopes) - added)


def repair(target: str) -> RepairReport:
    """Repair a JSONL memory file named by a path or a `file://` URI (see JsonlStore.repair)."""
    if "://" not in target:
        return repair_jsonl(Path(target).absolute())
    location = parse_location(target, Path.cwd(), None)
    if not isinstance(location, JsonlLocation):
        raise ExecutionError("Only JSONL memory files (file://) can be repaired")
    return repair_jsonl(location.path)


@contextmanager
def _opened(uri: str) -> Iterator[MemoryStore]:
    stores = OpenStores()
    try:
        yield stores.get(parse_location(uri, Path.cwd(), None))
    finally:
        stores.close()
