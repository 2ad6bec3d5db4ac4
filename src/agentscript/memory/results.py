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
    """One recalled entry: its fields, the body cut at the call's `body_chars`, its score (the
    ranking's, comparable within one call) and its relevance (0 to 1, comparable across calls:
    relevance.py; None when the query had no words to weigh).

    A hit keeps the entry it shows and reads each field from it when asked: a recall returns up
    to a hundred hits, and copying seventeen fields into each (most never read by a program,
    all of them read again by `to_json`) was a tenth of the call."""

    entry: Entry
    score: float
    relevance: float | None
    body_chars: int

    @classmethod
    def of(cls, entry: Entry, score: float, relevance: float | None, body_chars: int) -> RecallHit:
        return cls(entry, round(score, 6), relevance, body_chars)

    @property
    def id(self) -> str:
        return self.entry.id

    @property
    def kind(self) -> str:
        return self.entry.kind

    @property
    def key(self) -> str | None:
        return self.entry.key

    @property
    def title(self) -> str:
        return self.entry.title

    @property
    def body(self) -> str:
        return _cut(self.entry.body, self.body_chars)

    @property
    def body_truncated(self) -> bool:
        return len(self.entry.body) > self.body_chars

    @property
    def tags(self) -> list[str]:
        return list(self.entry.tags)

    @property
    def scope(self) -> str:
        return self.entry.scope

    @property
    def level(self) -> str | None:
        return self.entry.level

    @property
    def bucket(self) -> str:
        return self.entry.bucket

    @property
    def event_time(self) -> str:
        return self.entry.event_time

    @property
    def updated_at(self) -> str:
        return self.entry.updated_at

    @property
    def archived(self) -> bool:
        return self.entry.archived

    @property
    def reinforce_count(self) -> int:
        return self.entry.reinforce_count

    @property
    def source(self) -> dict[str, Any]:
        return self.entry.source.to_dict()

    def to_json(self) -> dict[str, Any]:
        entry = self.entry
        return {
            "id": entry.id,
            "kind": entry.kind,
            "key": entry.key,
            "title": entry.title,
            "body": _cut(entry.body, self.body_chars),
            "body_truncated": len(entry.body) > self.body_chars,
            "tags": list(entry.tags),
            "scope": entry.scope,
            "score": self.score,
            "relevance": self.relevance,
            "level": entry.level,
            "bucket": entry.bucket,
            "event_time": entry.event_time,
            "updated_at": entry.updated_at,
            "archived": entry.archived,
            "reinforce_count": entry.reinforce_count,
            "source": entry.source.to_dict(),
        }


def _cut(body: str, body_chars: int) -> str:
    """A hit's body as shown: cut at `body_chars`, an ellipsis marking the cut."""
    return body[:body_chars] + "…" if len(body) > body_chars else body


@dataclass(frozen=True, slots=True, eq=False)
class RecallResult(JsonResult):
    """`recall`: the hits, best first; `total`, how many entries matched before the limit
    (`count` is how many came back); `note` says why the ranking is not what it might seem
    (no searchable words, re-ranking skipped); `compaction` is what the read hook did."""

    hits: list[RecallHit]
    total: int
    note: str | None = None
    compaction: dict[str, Any] | None = None

    @property
    def count(self) -> int:
        return len(self.hits)

    def to_json(self) -> dict[str, Any]:
        data = {
            "results": [hit.to_json() for hit in self.hits],
            "count": self.count,
            "total": self.total,
        }
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


@dataclass(frozen=True, slots=True, eq=False)
class EntryResult(JsonResult):
    """`get`: one entry, every field."""

    entry: Entry

    def to_json(self) -> dict[str, Any]:
        return self.entry.to_dict()


@dataclass(frozen=True, slots=True, eq=False)
class BrowseGroup(JsonResult):
    """One time bucket of `browse`: its key (`2026-11-30`, `2026-W48`, ...), level, label, how
    many entries it holds and the ones shown (newest first, each as a summary line)."""

    bucket: str
    level: str
    label: str
    count: int
    entries: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {
            "bucket": self.bucket,
            "level": self.level,
            "label": self.label,
            "count": self.count,
            "entries": list(self.entries),
        }


@dataclass(frozen=True, slots=True, eq=False)
class BrowseResult(JsonResult):
    """`browse`: one page of time buckets, newest first, and the totals over every page."""

    by: str
    page: int
    page_size: int
    total_groups: int
    total_entries: int
    groups: list[BrowseGroup]
    note: str | None = None
    compaction: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data = {
            "by": self.by,
            "page": self.page,
            "page_size": self.page_size,
            "total_groups": self.total_groups,
            "total_entries": self.total_entries,
            "groups": [group.to_json() for group in self.groups],
        }
        return _with_read_report(data, self.note, self.compaction)


@dataclass(frozen=True, slots=True, eq=False)
class ScopeStats(JsonResult):
    """`stats` of one scope: active and archived entries, superseded versions, active entries by
    kind, summary level, local day, ISO week and month, and the room under max_entries."""

    scope: str
    active: int
    archived: int
    superseded: int
    by_kind: dict[str, int]
    by_level: dict[str, int]
    by_day: dict[str, int]
    by_week: dict[str, int]
    by_month: dict[str, int]
    max_entries: int

    @property
    def room(self) -> int:
        return max(self.max_entries - self.active, 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "active": self.active,
            "archived": self.archived,
            "superseded": self.superseded,
            "by_kind": dict(self.by_kind),
            "by_level": dict(self.by_level),
            "by_day": dict(self.by_day),
            "by_week": dict(self.by_week),
            "by_month": dict(self.by_month),
            "max_entries": self.max_entries,
            "room": self.room,
        }


@dataclass(frozen=True, slots=True, eq=False)
class StatsResult(JsonResult):
    """`stats`: the counts of every scope the call may read, and their sums."""

    workspace: str | None
    scopes: list[ScopeStats]
    note: str | None = None
    compaction: dict[str, Any] | None = None

    @property
    def active(self) -> int:
        return sum(scope.active for scope in self.scopes)

    @property
    def archived(self) -> int:
        return sum(scope.archived for scope in self.scopes)

    def to_json(self) -> dict[str, Any]:
        data = {
            "workspace": self.workspace,
            "scopes": [scope.to_json() for scope in self.scopes],
            "active": self.active,
            "archived": self.archived,
        }
        return _with_read_report(data, self.note, self.compaction)


@dataclass(frozen=True, slots=True, eq=False)
class CheckFinding(JsonResult):
    """A problem `check` found: what (`code`), how bad (`severity`: error or warning), where
    (`scope`, None for the store itself), a message saying what to do, the entries involved."""

    code: str
    severity: str
    scope: str | None
    message: str
    ids: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "scope": self.scope,
            "message": self.message,
            "ids": list(self.ids),
        }


@dataclass(frozen=True, slots=True, eq=False)
class DistilSuggestion(JsonResult):
    """What `check` suggests distilling into lasting knowledge (suggestions.py): the signal
    that points at it, a summary of what to write, the entries behind it, their scope."""

    signal: str
    summary: str
    ids: list[str]
    scope: str

    def to_json(self) -> dict[str, Any]:
        return {
            "signal": self.signal,
            "summary": self.summary,
            "ids": list(self.ids),
            "scope": self.scope,
        }


@dataclass(frozen=True, slots=True, eq=False)
class CheckResult(JsonResult):
    """`check`: the findings (`ok` when there are none), the suggestions (which leave `ok` as
    it is) and memory.yml's notes (keys spelled the seed's way, accepted)."""

    scopes: list[str]
    findings: list[CheckFinding]
    suggestions: list[DistilSuggestion]
    notes: list[str]

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "scopes": list(self.scopes),
            "findings": [finding.to_json() for finding in self.findings],
            "suggestions": [suggestion.to_json() for suggestion in self.suggestions],
            "notes": list(self.notes),
        }
