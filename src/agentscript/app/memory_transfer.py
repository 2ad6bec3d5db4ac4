"""The memory transfer use cases: export the memory service's entries as JSONL and import
such a file, one entry per line with every field, ids kept; importing a file again skips the
ids already present (agentscript.memory.transfer holds the service's rules). An import of
lines of remember's arguments (what a host writes) remembers them in batches instead.

Every line of an import is checked (strictly typed fields, canonical timestamps and scope, a
bucket of the right level) before anything is written; a refusal names the line and field.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO, cast

from agentscript.app.errors import AppError
from agentscript.app.workspace import Workspace
from agentscript.runtime.jsjson import parse, stringify

if TYPE_CHECKING:
    from pydantic import BaseModel

    from agentscript.memory.entries import Entry
    from agentscript.memory.service import MemoryService


def export_memory(
    workspace: str | Path | None,
    output: Callable[[], AbstractContextManager[TextIO]],
    *,
    database: str | Path | None = None,
    scope: str | None = None,
    every_scope: bool = False,
) -> int:
    """Write the entries of the scopes the workspace reads (or one `scope`, or every scope)
    as JSONL, oldest first, to the stream `output` opens once the memory is open; returns
    how many."""
    from agentscript.memory.transfer import export_entries, export_scopes

    if scope is not None and every_scope:
        raise AppError("Use either --scope or --all, not both")
    with Workspace.current(workspace, database) as place:
        service = place.memory()
        count = 0
        with output() as stream:
            for entry in export_entries(service, export_scopes(service, scope, every_scope)):
                stream.write(stringify(entry.to_dict()) + "\n")
                count += 1
    return count


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import did: entries of a service export added and skipped (ids already
    present), or, for lines of remember's arguments, how many were created, updated, merged."""

    added: int = 0
    skipped: int = 0
    remembered: dict[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        if self.remembered is None:
            return {"added": self.added, "skipped": self.skipped}
        return {"remembered": sum(self.remembered.values()), **self.remembered}

    def summary(self) -> str:
        """One line for a terminal."""
        if self.remembered is None:
            return f"added {self.added}, skipped {self.skipped}"
        counts = ", ".join(f"{action} {count}" for action, count in self.remembered.items())
        return f"remembered {sum(self.remembered.values())} ({counts})"


def import_memory(
    workspace: str | Path | None,
    lines: Iterable[str],
    origin: str,
    *,
    database: str | Path | None = None,
) -> ImportReport:
    """Add the lines read from `origin` to the memory service. Lines of a service export are
    added with their ids and scopes (a bad line or a conflict imports nothing); lines that hold
    `text` instead (remember's arguments, as a host would pass them: the first line decides)
    are remembered, MAX_BATCH_ITEMS to a transaction."""
    values = list(_json_lines(lines, origin))
    if values and isinstance(values[0][1], dict) and "text" in values[0][1]:
        with Workspace.current(workspace, database) as place:
            return ImportReport(remembered=_remember_lines(place.memory(), values, origin))
    from agentscript.memory.transfer import ImportConflict, import_entries

    entries = [(number, _exported_entry(value, origin, number)) for number, value in values]
    with Workspace.current(workspace, database) as place:
        try:
            added, skipped = import_entries(place.memory(), entries)
        except ImportConflict as conflict:
            raise AppError(
                f"{origin}:{conflict.number}: {conflict.message}; nothing was imported"
            ) from None
    return ImportReport(added, skipped)


def _remember_lines(
    service: MemoryService, values: Sequence[tuple[int, object]], origin: str
) -> dict[str, int]:
    """Remember (line number, arguments) pairs through `remember_many`, MAX_BATCH_ITEMS to a
    transaction; how many were created, updated and merged. A refused item stops the import
    with its line: the batches before it are stored, its own is not."""
    from agentscript.memory import MemoryServiceError
    from agentscript.memory import service as memory_service

    actions = {"created": 0, "updated": 0, "merged": 0}
    step = memory_service.MAX_BATCH_ITEMS
    for start in range(0, len(values), step):
        batch = values[start : start + step]
        try:
            results = service.remember_many(cast(Mapping[str, Any], item) for _, item in batch)
        except MemoryServiceError as error:
            position = _item_position(error.field)
            where = f"{origin}:{batch[position][0]}" if position is not None else origin
            stored = f" (the {start} lines before its batch were stored)" if start else ""
            raise AppError(f"{where}: {error.message}{stored}") from None
        for result in results:
            actions[result.action] = actions.get(result.action, 0) + 1
    return actions


def _item_position(field: str | None) -> int | None:
    """The item index of a remember_many error's field (`items[3].kind` → 3)."""
    if field is None or not field.startswith("items["):
        return None
    return int(field[len("items[") : field.index("]")])


@cache
def _export_line_model() -> type[BaseModel]:
    """The model of one line of a service export: every field of an entry, strictly typed,
    nothing else. Built on first use: pydantic is slow to import."""
    from pydantic import BaseModel, ConfigDict, Field

    class ExportedSource(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)
        session: str | None = None
        run: str | None = None
        reason: str | None = None

    class ExportedEntry(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)
        id: str = Field(min_length=1)
        kind: Literal["fact", "knowledge", "episodic", "summary"]
        key: str | None
        title: str
        body: str
        tags: list[str]
        context: str
        scope: str = Field(min_length=1)
        created_at: str
        updated_at: str
        accessed_at: str
        event_time: str
        level: Literal["day", "week", "month", "year"] | None
        bucket: str
        archived: bool
        archive_reason: str | None
        source: ExportedSource
        archive_ref: list[str]
        reinforce_count: int = Field(ge=0)
        superseded_by: str | None

    return ExportedEntry


def _json_lines(lines: Iterable[str], origin: str) -> Iterator[tuple[int, object]]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, parse(line)
        except json.JSONDecodeError as error:
            raise AppError(f"{origin}:{number}: not valid JSON: {error.msg}") from None
        except ValueError as error:
            raise AppError(f"{origin}:{number}: not valid JSON: {error}") from None


def _exported_entry(value: object, origin: str, number: int) -> Entry:
    """An Entry from one export line, refused (naming the line and field) unless it could
    have been written by the service: canonical timestamps and scope, a bucket of the right
    level."""
    from pydantic import ValidationError

    from agentscript.memory import Entry, MemoryServiceError
    from agentscript.memory.entries import require_storable
    from agentscript.memory.scopes import parse_scope
    from agentscript.memory.timeline import (
        bucket_level,
        format_timestamp,
        parse_timestamp,
    )

    where = f"{origin}:{number}"
    try:
        data = _export_line_model().model_validate(value).model_dump()
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(line)"
        problem = "unknown field" if first["type"] == "extra_forbidden" else first["msg"]
        raise AppError(f"{where}: {field}: {problem}") from None
    for name in ("created_at", "updated_at", "accessed_at", "event_time"):
        stamp = data[name]
        try:
            canonical = format_timestamp(parse_timestamp(stamp))
        except ValueError:
            canonical = None
        if canonical != stamp:
            raise AppError(
                f"{where}: {name}: {stamp!r} is not a stored timestamp (2026-05-04T09:15:00.000Z)"
            )
    try:
        scope = parse_scope(data["scope"])
    except MemoryServiceError as error:
        raise AppError(f"{where}: scope: {error.message}") from None
    if scope != data["scope"]:
        raise AppError(f"{where}: scope: {data['scope']!r} is not a normalised scope ({scope!r})")
    summary = data["kind"] == "summary"
    if summary and data["level"] is None:
        raise AppError(f"{where}: level: a summary needs a level")
    if not summary and data["level"] is not None:
        raise AppError(f"{where}: level: only summaries have a level")
    wanted = data["level"] if summary else "day"
    if bucket_level(data["bucket"]) != wanted:
        raise AppError(f"{where}: bucket: {data['bucket']!r} is not a {wanted} bucket")
    try:
        return require_storable(Entry.from_dict(data))
    except MemoryServiceError as error:
        raise AppError(f"{where}: {error.field}: {error.message}") from None
