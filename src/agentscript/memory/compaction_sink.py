"""The compaction sink: when a host compacts an agent's context, what the context held is kept.

An agent host that runs out of context replaces the conversation with a summary of it. Seed
002's sink listens to the host's `compaction/start`, `compaction/summary` and `compaction/end`
events and, when the compaction ends without an error, keeps the summary as a *checkpoint*: an
episodic entry tagged `compaction` in the session's workspace scope, written once however often
the host delivers the end (fire and forget). The agent then gets a notice saying that its
context was compacted and where the checkpoint is, so it can recall what was cut.

Hosts reach it in two ways: `CompactionSink.feed` runs the state machine over an event stream
(`agentscript memory sink` reads one as JSON lines, for hosts whose hooks pipe their session
events; Claude Code's PreCompact and PostCompact hook inputs are read as start and end), and `write_checkpoint` is the whole of it in one call (the `memory_checkpoint` tool, for
hosts that call a tool once the summary exists). memory.yml `auto_sink: false` turns both off.
The checkpoint is an ordinary `remember`, so it is refused like one (a secret in the summary, a
full scope) and the refusal is the outcome, never an exception out of the sink.

Not the same thing as the memory's own compaction (compaction.py), which summarises ended days,
weeks and months of entries; checkpoints are episodic entries, so it summarises them in turn.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from agentscript.memory.entries import (
    CHECKPOINT_REASON,
    CHECKPOINT_TAG,
    DERIVED_TITLE_CHARS,
    clean_line,
    clean_text,
    title_from_text,
)
from agentscript.memory.errors import INVALID_ARGUMENT, MemoryServiceError
from agentscript.memory.results import JsonResult

if TYPE_CHECKING:
    from agentscript.memory.service import MemoryService

EVENT_TYPES = ("compaction/start", "compaction/summary", "compaction/end")
# What a checkpoint's body may take of max_entry_bytes; the rest is left to the title, key and
# tags, and to the note saying the summary was cut.
_ROOM_FOR_THE_REST = 1024
_DIGEST_BLOCK = re.compile(r"<memory-digest\b.*?</memory-digest>", re.IGNORECASE | re.DOTALL)
_DIGEST_START = re.compile(r"<memory-digest", re.IGNORECASE)

# Compactions a sink keeps open at once: a firehose whose sessions start compactions that never
# end must not grow the sink without bound (the oldest open one is dropped).
MAX_OPEN_COMPACTIONS = 256

Action = Literal["started", "noted", "written", "exists", "discarded", "disabled"]


@dataclass(frozen=True, slots=True, eq=False)
class SinkOutcome(JsonResult):
    """What one event did. `written` and `exists` carry the checkpoint's id and the `notice`
    for the agent; `discarded` and `disabled` say why nothing was written."""

    action: Action
    session: str
    id: str | None = None
    notice: str | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"action": self.action, "session": self.session}
        for name in ("id", "notice", "reason"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        return data


@dataclass(frozen=True, slots=True)
class CompactionEvent:
    """One host event: its type, the session it belongs to, and what it may carry (the
    summary, on `summary` or on `end`; an error, on `end`; the workspace the session runs in;
    the host's trigger, such as auto or manual)."""

    type: str
    session: str
    summary: str | None = None
    error: str | None = None
    cwd: str | None = None
    trigger: str | None = None

    @classmethod
    def parse(cls, data: object) -> CompactionEvent:
        """Read an event from JSON data; `invalid_argument` names the field that is wrong."""
        if not isinstance(data, Mapping):
            raise MemoryServiceError(INVALID_ARGUMENT, "an event must be a JSON object")
        unknown = sorted(set(data) - {"type", "session", "summary", "error", "cwd", "trigger"})
        if unknown:
            raise MemoryServiceError(
                INVALID_ARGUMENT, f"unknown event field {unknown[0]!r}", unknown[0]
            )
        kind = data.get("type")
        if kind not in EVENT_TYPES:
            raise MemoryServiceError(
                INVALID_ARGUMENT,
                f"type must be one of {', '.join(EVENT_TYPES)}, not {kind!r}",
                "type",
            )
        session = clean_line(data.get("session"), "session", 200)
        if session is None:
            raise MemoryServiceError(INVALID_ARGUMENT, "session is required", "session")
        summary = data.get("summary")
        if summary is not None and not isinstance(summary, str):
            raise MemoryServiceError(INVALID_ARGUMENT, "summary must be a string", "summary")
        error = data.get("error")
        if error is not None and not isinstance(error, str):
            error = str(error)  # hosts send an error object as often as a message
        return cls(
            type=str(kind),
            session=session,
            summary=summary or None,
            error=error or None,
            cwd=clean_line(data.get("cwd"), "cwd", 4096),
            trigger=clean_line(data.get("trigger"), "trigger", 40),
        )


# Claude Code's compaction hooks, read as the seed's events: PreCompact starts a compaction,
# PostCompact ends it and carries the summary (`compact_summary`).
_HOOK_EVENTS = {"PreCompact": "compaction/start", "PostCompact": "compaction/end"}


def hook_event(data: Mapping[str, Any]) -> dict[str, Any] | None:
    """The seed's event for a Claude Code hook input (`hook_event_name` PreCompact or
    PostCompact, with `session_id`, `cwd`, `trigger` and, after, `compact_summary`); None for
    anything else, which is read as the seed's own event format."""
    kind = _HOOK_EVENTS.get(str(data.get("hook_event_name")))
    if kind is None:
        return None
    event = {
        "type": kind,
        "session": data.get("session_id"),
        "cwd": data.get("cwd"),
        "trigger": data.get("trigger"),
    }
    if kind == "compaction/end":
        event["summary"] = data.get("compact_summary")
    return {name: value for name, value in event.items() if value is not None}


@dataclass(slots=True)
class _Compaction:
    """A compaction that started and has not ended yet."""

    started: datetime
    trigger: str | None = None
    summary: str | None = None
    cwd: str | None = None


@dataclass(slots=True)
class CompactionSink:
    """The seed's state machine: `start` opens a compaction of a session, `summary` keeps its
    text (a later summary replaces an earlier one), `end` without an error writes the checkpoint
    (a summary on the end event itself counts too, so a sink that joined late still keeps it);
    an end with an error, or without any summary, writes nothing. A `start` while one is open
    starts over."""

    service: MemoryService
    _open: dict[str, _Compaction] = field(default_factory=dict)

    def feed(self, event: CompactionEvent | Mapping[str, Any]) -> SinkOutcome:
        """Handle one event: a CompactionEvent, its JSON form, or a Claude Code compaction
        hook's input (`hook_event`)."""
        if not isinstance(event, CompactionEvent):
            event = CompactionEvent.parse(hook_event(event) or event)
        session = event.session
        if event.type == "compaction/start":
            self._opened(
                session, _Compaction(self.service.clock.now(), event.trigger, None, event.cwd)
            )
            return SinkOutcome("started", session)
        current = self._open.get(session)
        if event.type == "compaction/summary":
            if current is None:  # joined after the start: the compaction began about now
                current = self._opened(session, _Compaction(self.service.clock.now()))
            current.summary = event.summary or current.summary
            current.cwd = event.cwd or current.cwd
            return SinkOutcome("noted", session)
        self._open.pop(session, None)
        if event.error is not None:
            return SinkOutcome(
                "discarded", session, reason=f"the compaction failed: {event.error[:200]}"
            )
        summary = event.summary or (current.summary if current else None)
        if summary is None:
            return SinkOutcome("discarded", session, reason="the compaction sent no summary")
        return write_checkpoint(
            self.service,
            session=session,
            summary=summary,
            started=current.started if current else None,
            trigger=event.trigger or (current.trigger if current else None),
            scope=event.cwd or (current.cwd if current else None),
        )

    def _opened(self, session: str, compaction: _Compaction) -> _Compaction:
        self._open.pop(session, None)
        if len(self._open) >= MAX_OPEN_COMPACTIONS:
            del self._open[next(iter(self._open))]
        self._open[session] = compaction
        return compaction


def write_checkpoint(
    service: MemoryService,
    *,
    session: str,
    summary: str,
    started: datetime | None = None,
    trigger: str | None = None,
    scope: str | None = None,
) -> SinkOutcome:
    """Keep `summary`, the compacted context of `session`, as a checkpoint entry (see the module
    docstring): once per session and summary text, in `scope` (default: the workspace's write
    scope), dated `started` (default: now). A summary longer than the entry limit is cut, and
    says so. Refusals of the service come back as `discarded` with its message."""
    if not service.config.auto_sink:
        return SinkOutcome("disabled", session, reason="memory.yml sets auto_sink: false")
    summary = clean_text(_without_digests(summary), "summary", required=True)
    digest = hashlib.sha256(summary.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    key = f"{CHECKPOINT_TAG}:{session}:{digest}"
    title = _title(summary, trigger)
    body = _fitted(summary, service.config.max_entry_bytes - _ROOM_FOR_THE_REST)
    try:
        versions = service.history(key, scope=scope).versions
        if versions:
            found = versions[0].entry.id
            return SinkOutcome("exists", session, found, notice(found))
        written = service.remember(
            body,
            kind="episodic",
            key=key,
            title=title,
            tags=[CHECKPOINT_TAG],
            scope=scope,
            event_time=started,
            source={"session": session, "reason": CHECKPOINT_REASON},
        )
    except MemoryServiceError as refusal:
        return SinkOutcome("discarded", session, reason=f"{refusal.code}: {refusal.message}")
    # Another process delivering the same end wrote it between the look and the write: the
    # key made this a merge into that one entry.
    action: Action = "exists" if written.action == "merged" else "written"
    return SinkOutcome(action, session, written.id, notice(written.id))


def notice(entry_id: str) -> str:
    """What the agent is told after its context was compacted."""
    return (
        "Your context was compacted. What it held is kept in long-term memory as checkpoint "
        f"{entry_id} (tag {CHECKPOINT_TAG}): recall with tags [{CHECKPOINT_TAG}] to read it "
        "again, and remember what will still matter later."
    )


def _without_digests(summary: str) -> str:
    """The summary without the memory digests it quotes: the digest was in the context that was
    compacted, and a digest is never stored as a memory (service.remember refuses it)."""
    kept = _DIGEST_BLOCK.sub("[memory digest left out]", summary)
    return _DIGEST_START.sub("[memory digest left out]", kept)


def _title(summary: str, trigger: str | None) -> str:
    first = title_from_text(summary)
    label = "Context checkpoint" + (f" ({trigger})" if trigger else "")
    title = f"{label}: {first}"
    return title if len(title) <= DERIVED_TITLE_CHARS * 2 else title[: DERIVED_TITLE_CHARS * 2]


def _fitted(text: str, limit: int) -> str:
    """`text` within `limit` UTF-8 bytes, cut at a character and marked as cut."""
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded) <= limit:
        return text
    kept = encoded[: max(limit - 80, 0)].decode("utf-8", "ignore")
    return f"{kept}\n… (cut: {len(kept.encode('utf-8')):,} of {len(encoded):,} bytes kept)"
