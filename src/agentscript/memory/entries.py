"""Memory entries: the record every store keeps, its kinds, its limits and its validation.

An Entry is immutable; every change is a new Entry value written back by the service. Fields
are checked here, once, before anything reaches a store: sizes (with the limit in the message),
control characters, tags, keys, and the digest marker (a digest must never become a memory).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from operator import attrgetter
from typing import Any, Literal, cast

from agentscript.memory.errors import (
    DIGEST_FEEDBACK,
    INVALID_ARGUMENT,
    TOO_LARGE,
    MemoryServiceError,
)
from agentscript.memory.text import normalise_title
from agentscript.memory.timeline import LEVELS, Level

Kind = Literal["fact", "knowledge", "episodic", "summary"]
KINDS: tuple[Kind, ...] = ("fact", "knowledge", "episodic", "summary")
# Kinds `remember` may write; summaries come only from compaction (`write_summary`).
REMEMBERED_KINDS: tuple[Kind, ...] = ("fact", "knowledge", "episodic")
# Kinds whose entries merge when their normalised titles match: a fact is a value that a key
# overwrites, a summary is owned by its bucket, so neither ever merges by title.
MERGING_KINDS: tuple[Kind, ...] = ("knowledge", "episodic")

GLOBAL_SCOPE = "global"

MAX_TITLE_CHARS = 200
# A title taken from the text is its first line, cut to this many characters.
DERIVED_TITLE_CHARS = 80
MAX_KEY_CHARS = 200
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_SOURCE_CHARS = 200
DEFAULT_MAX_ENTRY_BYTES = 16_384

# Opens every digest. `remember` and `update` refuse text that carries it, so an agent that
# pastes its session-start digest back into memory cannot start a feedback loop.
DIGEST_MARKER = "<memory-digest"


@dataclass(frozen=True, slots=True)
class Source:
    """Where an entry came from: the host's session and run ids, and why it was written."""

    session: str | None = None
    run: str | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, str]:
        return {
            name: value
            for name, value in (
                ("session", self.session),
                ("run", self.run),
                ("reason", self.reason),
            )
            if value is not None
        }

    @classmethod
    def from_value(cls, value: object, field_name: str = "source") -> Source:
        """A Source from a mapping with only `session`, `run` and `reason` (each optional)."""
        if value is None:
            return cls()
        if isinstance(value, Source):
            return value
        if not isinstance(value, dict):
            raise MemoryServiceError(
                INVALID_ARGUMENT, f"{field_name} must be an object", field_name
            )
        if not value.keys() <= _SOURCE_NAMES:
            unknown = sorted(map(str, value.keys() - _SOURCE_NAMES))
            raise MemoryServiceError(
                INVALID_ARGUMENT,
                f"{field_name} has unknown field(s) {', '.join(unknown)}; "
                "allowed: session, run, reason",
                field_name,
            )
        parts = {
            name: clean_line(value[name], f"{field_name}.{name}", MAX_SOURCE_CHARS)
            for name in ("session", "run", "reason")
            if name in value
        }
        return cls(**parts)


_SOURCE_NAMES = frozenset(("session", "run", "reason"))

# Source reasons of what runs write on their own (agentscript.learn: a run memory, a distilled
# experience), as opposed to what users and programs remember. Learned entries never outrank
# remembered ones in recall and have their own section in the digest.
LEARNED_REASON_PREFIXES = ("run-memory", "experience:")
# What the compaction sink (compaction_sink.py) writes when a host compacts a session's context:
# an episodic entry with this tag and this source reason.
CHECKPOINT_TAG = "compaction"
CHECKPOINT_REASON = "compaction-checkpoint"


@dataclass(frozen=True, slots=True)
class Entry:
    """One memory. Timestamps are stored UTC strings (see timeline); `bucket` is the local day
    of `event_time` for ordinary entries and the summarised bucket for summaries, whose `level`
    says which; `archive_ref` lists a summary's sources; `superseded_by` points to the entry
    that replaced this one under the same key."""

    id: str
    kind: Kind
    scope: str
    title: str
    body: str
    created_at: str
    updated_at: str
    accessed_at: str
    event_time: str
    bucket: str
    key: str | None = None
    tags: tuple[str, ...] = ()
    context: str = ""
    level: Level | None = None
    archived: bool = False
    archive_reason: str | None = None
    source: Source = field(default_factory=Source)
    archive_ref: tuple[str, ...] = ()
    reinforce_count: int = 0
    superseded_by: str | None = None

    @property
    def learned(self) -> bool:
        """Whether a run wrote this on its own (see LEARNED_REASON_PREFIXES)."""
        reason = self.source.reason or ""
        return reason.startswith(LEARNED_REASON_PREFIXES)

    @property
    def checkpoint(self) -> bool:
        """Whether the compaction sink wrote this (a session's context, kept at compaction)."""
        return self.source.reason == CHECKPOINT_REASON and CHECKPOINT_TAG in self.tags

    @property
    def title_norm(self) -> str:
        return normalise_title(self.title)

    @property
    def active(self) -> bool:
        return not self.archived

    def evolve(self, **changes: Any) -> Entry:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON-able values, in a stable order."""
        return {
            "id": self.id,
            "kind": self.kind,
            "key": self.key,
            "title": self.title,
            "body": self.body,
            "tags": list(self.tags),
            "context": self.context,
            "scope": self.scope,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "accessed_at": self.accessed_at,
            "event_time": self.event_time,
            "level": self.level,
            "bucket": self.bucket,
            "archived": self.archived,
            "archive_reason": self.archive_reason,
            "source": self.source.to_dict(),
            "archive_ref": list(self.archive_ref),
            "reinforce_count": self.reinforce_count,
            "superseded_by": self.superseded_by,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Entry:
        """The inverse of `to_dict`, for stores that keep entries as JSON."""
        return cls(
            id=data["id"],
            kind=cast(Kind, data["kind"]),
            scope=data["scope"],
            title=data["title"],
            body=data["body"],
            created_at=data["created_at"],
            updated_at=data["updated_at"],
            accessed_at=data["accessed_at"],
            event_time=data["event_time"],
            bucket=data["bucket"],
            key=data.get("key"),
            tags=tuple(data.get("tags") or ()),
            context=data.get("context") or "",
            level=cast("Level | None", data.get("level")),
            archived=bool(data.get("archived")),
            archive_reason=data.get("archive_reason"),
            source=Source(**(data.get("source") or {})),
            archive_ref=tuple(data.get("archive_ref") or ()),
            reinforce_count=int(data.get("reinforce_count") or 0),
            superseded_by=data.get("superseded_by"),
        )


def new_id() -> str:
    """A new entry's id: a random (version 4) UUID's text, as `str(uuid.uuid4())` gives it,
    without building the UUID object (a fifth of what checking a remember's fields costs)."""
    number = int.from_bytes(os.urandom(16), "big") & _UUID4_CLEARED | _UUID4_SET
    digits = f"{number:032x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


# The bits a version 4 UUID fixes (RFC 4122): the version (4) and the variant (10).
_UUID4_CLEARED = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)


# ------------------------------------------------------------------------------ validation


def require_kind(value: object, allowed: tuple[Kind, ...], field_name: str = "kind") -> Kind:
    if value not in allowed:
        raise MemoryServiceError(
            INVALID_ARGUMENT,
            f"{field_name} must be one of {', '.join(allowed)}, not {value!r}",
            field_name,
        )
    return value


def require_level(value: object, field_name: str = "level") -> Level:
    if value not in LEVELS:
        raise MemoryServiceError(
            INVALID_ARGUMENT,
            f"{field_name} must be one of {', '.join(LEVELS)}, not {value!r}",
            field_name,
        )
    return value


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# Unicode's control characters (category Cc): C0, DEL and C1.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def require_unicode(text: str, field_name: str) -> str:
    """`text`, unless it holds a lone surrogate (from `"\\ud800"` in JSON, or a file name that
    is not UTF-8), which is not a character and which no store can encode."""
    found = None if text.isascii() else _LONE_SURROGATE.search(text)
    if found is not None:
        raise MemoryServiceError(
            INVALID_ARGUMENT,
            f"{field_name} contains a lone surrogate (U+{ord(found.group()):04X}) at character "
            f"{found.start() + 1}; text must be valid Unicode",
            field_name,
        )
    return text


# The fields of an Entry that hold one value (a text, a number, None), not a collection.
_SCALAR_FIELDS = tuple(
    item.name for item in fields(Entry) if item.name not in ("tags", "archive_ref", "source")
)
_SCALARS = attrgetter(*_SCALAR_FIELDS)


def require_storable(entry: Entry) -> Entry:
    """`entry`, unless a text field holds a lone surrogate: UTF-8 has none, so no store can
    write one. Every store calls this before it writes, whatever path built the entry (an
    import, a summary); the service's own arguments are refused earlier, by name."""
    # One search over all the text first (other values as their text, which holds no
    # surrogate), none when it is ASCII: nearly every entry has none.
    source = entry.source
    every = (*_SCALARS(entry), *entry.tags, *entry.archive_ref)
    joined = "".join(map(str, (*every, source.session, source.run, source.reason)))
    if joined.isascii() or _LONE_SURROGATE.search(joined) is None:
        return entry
    for item in fields(entry):
        value = getattr(entry, item.name)
        for text in value if isinstance(value, tuple) else (value,):
            if isinstance(text, str):
                require_unicode(text, item.name)
    for name, text in entry.source.to_dict().items():
        require_unicode(text, f"source.{name}")
    return entry


def clean_text(value: object, field_name: str, *, required: bool = False) -> str:
    """Free text (markdown allowed): valid Unicode without NUL and without the digest marker."""
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise MemoryServiceError(INVALID_ARGUMENT, f"{field_name} must be a string", field_name)
    require_unicode(value, field_name)
    if "\x00" in value:
        raise MemoryServiceError(
            INVALID_ARGUMENT, f"{field_name} contains a NUL character", field_name
        )
    if "<" in value and DIGEST_MARKER in value.casefold():  # folding never makes a `<`
        raise MemoryServiceError(
            DIGEST_FEEDBACK,
            f"{field_name} contains a memory digest ({DIGEST_MARKER}…>): a digest is a view of "
            "stored memories and is never stored back; remember the new fact itself instead",
            field_name,
        )
    text = value.strip()
    if required and not text:
        raise MemoryServiceError(INVALID_ARGUMENT, f"{field_name} must not be empty", field_name)
    return text


def clean_line(value: object, field_name: str, max_chars: int) -> str | None:
    """A short single-line value (a key, a session id): no control characters, length-capped."""
    if value is None:
        return None
    text = clean_text(value, field_name)
    if _CONTROL.search(text) is not None:
        raise MemoryServiceError(
            INVALID_ARGUMENT,
            f"{field_name} must be one line without control characters",
            field_name,
        )
    if not text:
        raise MemoryServiceError(INVALID_ARGUMENT, f"{field_name} must not be empty", field_name)
    if len(text) > max_chars:
        raise MemoryServiceError(
            TOO_LARGE,
            f"{field_name} is {len(text)} characters; the limit is {max_chars}",
            field_name,
        )
    return text


def clean_key(value: object) -> str | None:
    """A key, compared case-insensitively: NFKC, case-folded, spaces collapsed."""
    text = clean_line(value, "key", MAX_KEY_CHARS)
    return None if text is None else normalise_title(text)


def clean_title(value: object) -> str:
    title = clean_line(value, "title", MAX_TITLE_CHARS)
    if title is None:
        raise MemoryServiceError(INVALID_ARGUMENT, "title must not be empty", "title")
    return " ".join(title.split())


# The end of a summary's `source.reason` when no model wrote it: `day compaction, extractive`.
EXTRACTIVE_MARK = ", extractive"


def is_extractive(entry: Entry) -> bool:
    """Whether a summary was written without a model (so a model may rewrite it later)."""
    return entry.kind == "summary" and (entry.source.reason or "").endswith(EXTRACTIVE_MARK)


# A remember asks twice, for the title and whether it is derived, so a few bodies are enough;
# each may be up to max_entry_bytes, which a larger cache would keep alive by the thousand.
@lru_cache(maxsize=16)
def title_from_text(text: str) -> str:
    """The first non-empty line, markdown heading marks removed, cut to DERIVED_TITLE_CHARS."""
    for line in text.splitlines():
        line = " ".join(line.strip().lstrip("#").split())
        if line:
            if len(line) > DERIVED_TITLE_CHARS:
                return line[: DERIVED_TITLE_CHARS - 1] + "…"
            return line
    raise MemoryServiceError(INVALID_ARGUMENT, "text must not be empty", "text")


def clean_tags(value: object) -> tuple[str, ...]:
    """Tags, lowercased and space-collapsed, duplicates dropped, first occurrence kept."""
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise MemoryServiceError(INVALID_ARGUMENT, "tags must be a list of strings", "tags")
    tags: dict[str, None] = {}
    for index, tag in enumerate(value):
        cleaned = clean_line(tag, f"tags[{index}]", MAX_TAG_CHARS)
        tags[normalise_title(cleaned or "")] = None
    return limit_tags(tuple(tags))


def limit_tags(tags: tuple[str, ...]) -> tuple[str, ...]:
    if len(tags) > MAX_TAGS:
        raise MemoryServiceError(
            TOO_LARGE, f"{len(tags)} tags given; the limit is {MAX_TAGS}", "tags"
        )
    return tags


def merge_tags(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    """The union of two tag lists in order of first appearance, capped at MAX_TAGS."""
    return tuple(dict.fromkeys((*first, *second)))[:MAX_TAGS]


def entry_bytes(entry: Entry) -> int:
    """What counts against `max_entry_bytes`: the UTF-8 size of every text an entry carries."""
    return sum(
        len(part.encode("utf-8"))
        for part in (entry.title, entry.body, entry.context, entry.key or "", *entry.tags)
    )


def check_size(entry: Entry, limit: int) -> None:
    characters = (entry.title, entry.body, entry.context, entry.key or "", *entry.tags)
    if 4 * sum(map(len, characters)) <= limit:  # a character is at most 4 bytes of UTF-8
        return
    size = entry_bytes(entry)
    if size > limit:
        raise MemoryServiceError(
            TOO_LARGE,
            f"the entry is {size:,} bytes (UTF-8 of title, body, context, key and tags); the "
            f"limit is {limit:,} bytes (max_entry_bytes in memory.yml): split it, or store the "
            "essentials",
            "body",
        )
