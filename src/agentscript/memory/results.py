"""What the memory service's operations return: typed results, each with `to_json()`.

Callers read attributes (`hit.score`, `written.action`); the MCP server, `memory://` tools and
`--json` output send `to_json()`, the documented wire form. Each result is also a read-only
mapping over that JSON form (`result["count"]`), for callers written against the wire form
(the tool adapters' tests, scripts); equality compares the JSON form too.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentscript.memory.entries import Entry

VersionStatus = Literal["active", "superseded", "archived"]


class JsonResult(Mapping[str, Any]):
    """A result that is also a read-only mapping over its JSON form."""

    __slots__ = ()

    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """The result as JSON data; the mapping reads through it."""

    def __getitem__(self, name: str) -> Any:
        return self.to_json()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_json())

    def __len__(self) -> int:
        return len(self.to_json())


def _with_read_report(
    data: dict[str, Any], note: str | None, compaction: dict[str, Any] | None
) -> dict[str, Any]:
    """A read's JSON with its note and the read hook's compaction report, when there are."""
    if note is not None:
        data["note"] = note
    if compaction is not None:
        data["compaction"] = compaction
    return data


@dataclass(frozen=True, slots=True, eq=False)
class RememberResult(JsonResult):
    """`remember`: the entry written (`created`, `updated` for a key's new value, `reinforced`
    for a duplicate, ...), its scope, kind and title."""

    id: str
    action: str
    scope: str
    kind: str
    title: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "action": self.action,
            "scope": self.scope,
            "kind": self.kind,
            "title": self.title,
        }


@dataclass(frozen=True, slots=True, eq=False)
class UpdateResult(JsonResult):
    """`update`: the entry's id (unchanged), the id under which the text before the correction
    is kept (None when nothing changed), whether anything changed."""

    id: str
    previous_version: str | None
    changed: bool
    action: str = "updated"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "action": self.action,
            "previous_version": self.previous_version,
            "changed": self.changed,
        }


@dataclass(frozen=True, slots=True, eq=False)
class ForgetResult(JsonResult):
    """`forget`: `archived`, `already_archived` or `purged` (with every id deleted)."""

    id: str
    action: str
    purged: list[str] = field(default_factory=list)
    # A purge: the summaries removed with the entry and the sources made active again; a
    # forgotten summary: the sources made active again. None when not applicable.
    summaries_removed: list[str] | None = None
    restored: list[str] | None = None

    def to_json(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "id": self.id,
            "action": self.action,
            "archived": True,
            "purged": list(self.purged),
        }
        if self.summaries_removed is not None:
            result["summaries_removed"] = list(self.summaries_removed)
        if self.restored is not None:
            result["restored"] = list(self.restored)
        return result


@dataclass(frozen=True, slots=True, eq=False)
class RecallHit(JsonResult):
    """One recalled entry: its fields, the body cut at the call's `body_chars`, its score."""

    id: str
    kind: str
    key: str | None
    title: str
    body: str
    body_truncated: bool
    tags: list[str]
    scope: str
    score: float
    level: str | None
    bucket: str
    event_time: str
    updated_at: str
    archived: bool
    reinforce_count: int
    source: dict[str, Any]

    @classmethod
    def of(cls, entry: Entry, score: float, body_chars: int) -> RecallHit:
        cut = len(entry.body) > body_chars
        return cls(
            id=entry.id,
            kind=entry.kind,
            key=entry.key,
            title=entry.title,
            body=entry.body[:body_chars] + ("…" if cut else ""),
            body_truncated=cut,
            tags=list(entry.tags),
            scope=entry.scope,
            score=round(score, 6),
            level=entry.level,
            bucket=entry.bucket,
            event_time=entry.event_time,
            updated_at=entry.updated_at,
            archived=entry.archived,
            reinforce_count=entry.reinforce_count,
            source=entry.source.to_dict(),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "key": self.key,
            "title": self.title,
            "body": self.body,
            "body_truncated": self.body_truncated,
            "tags": list(self.tags),
            "scope": self.scope,
            "score": self.score,
            "level": self.level,
            "bucket": self.bucket,
            "event_time": self.event_time,
            "updated_at": self.updated_at,
            "archived": self.archived,
            "reinforce_count": self.reinforce_count,
            "source": dict(self.source),
        }


@dataclass(frozen=True, slots=True, eq=False)
class RecallResult(JsonResult):
    """`recall`: the hits, best first; `note` says why the ranking is not what it might seem
    (no searchable words, re-ranking skipped); `compaction` is what the read hook did."""

    hits: list[RecallHit]
    note: str | None = None
    compaction: dict[str, Any] | None = None

    @property
    def count(self) -> int:
        return len(self.hits)

    def to_json(self) -> dict[str, Any]:
        data = {"results": [hit.to_json() for hit in self.hits], "count": self.count}
        return _with_read_report(data, self.note, self.compaction)


@dataclass(frozen=True, slots=True, eq=False)
class ExperiencesResult(JsonResult):
    """`experiences`: the hits best first (as `recall`'s, ranked for lessons: see
    experience_text), and `text`, the compact lines a program's `use` shows."""

    recalled: RecallResult
    text: str

    def to_json(self) -> dict[str, Any]:
        return {**self.recalled.to_json(), "text": self.text}


@dataclass(frozen=True, slots=True, eq=False)
class EntryVersion(JsonResult):
    """One version of a key: the entry, every field, and whether it is still the current one."""

    entry: Entry
    status: VersionStatus

    def to_json(self) -> dict[str, Any]:
        return {**self.entry.to_dict(), "status": self.status}


@dataclass(frozen=True, slots=True, eq=False)
class HistoryResult(JsonResult):
    """`history`: every version stored under `key` (None: an empty key), newest first."""

    key: str | None
    versions: list[EntryVersion]

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "versions": [version.to_json() for version in self.versions]}


@dataclass(frozen=True, slots=True, eq=False)
class DigestResult(JsonResult):
    """`digest`: the text, its size in UTF-8 bytes, the lines shown and the lines left out."""

    text: str
    bytes: int
    entries: int
    omitted: int
    note: str | None = None
    compaction: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data = {
            "text": self.text,
            "bytes": self.bytes,
            "entries": self.entries,
            "omitted": self.omitted,
        }
        return _with_read_report(data, self.note, self.compaction)


def read_report(
    compaction: dict[str, Any] | None, note: str | None = None
) -> tuple[str | None, dict[str, Any] | None]:
    """A read's note with the read hook's own note (a failed summary, say) appended."""
    if compaction is None:
        return note, None
    extra = compaction.get("note")
    if extra:
        note = f"{note}; {extra}" if note else str(extra)
    return note, compaction
