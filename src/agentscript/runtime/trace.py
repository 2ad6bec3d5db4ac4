"""The trace: an audit record of every step of a run, and the sink interface that streams it.

The trace a run returns has the original's shape (reference §5): a list of `{kind, data}` where
events produced inside a called agent are nested in that call's `agent` event, appended when the
call returns. Sinks (a journal, a live renderer, an exporter) see the same events as they happen,
each with a stable id and the id of the agent call it belongs to. The trace never enters a prompt.

Sinks see a little more than the returned trace, for the audit: `audit` fields on an event (a
tool call's risk) and audit-only events (a tool call that raised, which the original never
traces). `without_audit` turns what a sink saw back into the returned shape.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from agentscript.runtime.jsjson import stringify
from agentscript.runtime.secrets import SecretSet

# The fields only sinks see on a tool event (an approval's own `risk` is in the trace); a tool
# event carrying `error` is audit-only.
AUDIT_FIELDS = ("risk",)


def is_audit_only(kind: str, data: dict[str, Any]) -> bool:
    """Whether a sink's event is absent from the returned trace (a tool call that raised)."""
    return kind == "tool" and "error" in data


def without_audit(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """A sink's event data as the returned trace has it (a copy)."""
    if kind != "tool":
        return dict(data)
    return {key: value for key, value in data.items() if key not in AUDIT_FIELDS}


@dataclass(slots=True)
class TraceEvent:
    """One step. `id` is unique within a run; `parent` is the enclosing agent call's id."""

    kind: str
    data: dict[str, Any]
    id: int = 0
    parent: int | None = None
    depth: int = 0
    # When an agent call began (time.monotonic), for its `duration_ms`; not part of the JSON.
    started: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """`{kind, data}` as JSON data; a finished agent event's nested events included."""
        return event_json(self)


class TraceSink:
    """Receives trace events as they happen. Override what you need; both default to nothing."""

    def agent_started(self, call: TraceEvent) -> None:
        """An agent call begins; `call.data` has agent, function and args. Its finished `agent`
        event (same id) arrives through `event` when the call returns or fails."""

    def event(self, event: TraceEvent) -> None:
        """A finished event, in execution order."""

    def redact(self, secret: str) -> None:
        """`secret` was learned during the run: events already arrive redacted, but a sink
        that also stores the run's value or error must hide it there too (or share the run's
        SecretSet, as the journal does)."""

    def step_started(self, kind: str, data: dict[str, Any]) -> None:
        """A slow step begins (a `generate` attempt or a tool call), so a live view can show it
        in flight; its finished event arrives through `event` as usual. `data` is a short
        description (agent, function, attempt, tool, method), never a prompt."""

    def text_delta(self, text: str) -> None:
        """A piece of a model answer arrived while it streams (already redacted)."""

    def run_ended(self, status: str, error: str | None = None) -> None:
        """The run is over: "ok", "error" (with its message, redacted) or "interrupted"."""


@dataclass(slots=True)
class _Frame:
    """Where new events go: the run's top level, an agent call, or one `parallel for`
    iteration. `depth` is the nesting depth of the events recorded in it."""

    call: TraceEvent | None
    depth: int = 0
    events: list[TraceEvent] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class BranchPoint:
    """Where concurrent branches (parallel iterations) attach: the enclosing agent call and the
    depth of the event that will hold them."""

    call: TraceEvent | None
    depth: int


class Tracer:
    """Collects the nested trace of one run and forwards every event to the sinks.

    Frames are per thread, so concurrent branches of a run each nest their own events. Every
    event is scrubbed with the run's SecretSet as it is recorded.
    """

    def __init__(
        self, sinks: list[TraceSink] | None = None, secrets: SecretSet | None = None
    ) -> None:
        self.sinks: list[TraceSink] = list(sinks or [])
        self.secrets = secrets if secrets is not None else SecretSet()
        self._root = _Frame(call=None)
        self._ids = itertools.count(1)
        self._local = threading.local()
        # Sinks see one event at a time even when parallel iterations emit concurrently.
        self._sink_lock = threading.Lock()

    @property
    def _stack(self) -> list[_Frame]:
        stack: list[_Frame] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = [self._root]
            self._local.stack = stack
        return stack

    @property
    def events(self) -> list[TraceEvent]:
        return self._root.events

    def to_json(self) -> list[dict[str, Any]]:
        """The trace, scrubbed again: a secret learned late may occur in earlier events."""
        trace = [event_json(event) for event in self._root.events]
        scrubbed: list[dict[str, Any]] = self.secrets.scrub(trace)
        return scrubbed

    def redact(self, secret: str) -> None:
        """From now on, `secret` appears as "[REDACTED]" in every event recorded."""
        if self.secrets.add(secret):
            for sink in self.sinks:
                sink.redact(secret)

    def emit(
        self, kind: str, data: dict[str, Any], audit: dict[str, Any] | None = None
    ) -> TraceEvent:
        """Record a step; `audit` fields (AUDIT_FIELDS) reach the sinks only."""
        data = self.secrets.scrub(data)
        frame = self._stack[-1]
        event = self._event(kind, data, frame)
        frame.events.append(event)
        self._notify(replace(event, data={**data, **audit}) if audit else event)
        return event

    def emit_audit(self, kind: str, data: dict[str, Any]) -> None:
        """A step only the sinks see (see `is_audit_only`): the returned trace keeps the
        original's shape."""
        self._notify(self._event(kind, self.secrets.scrub(data), self._stack[-1]))

    def _event(self, kind: str, data: dict[str, Any], frame: _Frame) -> TraceEvent:
        return TraceEvent(
            kind=kind,
            data=data,
            id=next(self._ids),
            parent=frame.call.id if frame.call else None,
            depth=frame.depth,
        )

    def end_run(self, status: str, error: str | None = None) -> None:
        """Tell the sinks how the run ended."""
        if error is not None:
            error = self.secrets.scrub_text(error)
        with self._sink_lock:
            for sink in self.sinks:
                sink.run_ended(status, error)

    def _notify(self, event: TraceEvent, started: bool = False) -> None:
        if not self.sinks:
            return
        if started:
            self._broadcast(lambda sink: sink.agent_started(event))
        else:
            self._broadcast(lambda sink: sink.event(event))

    def step_started(self, kind: str, data: dict[str, Any]) -> None:
        """Tell the sinks a slow step begins; nothing is recorded in the trace."""
        if self.sinks:
            self._broadcast(lambda sink: sink.step_started(kind, data))

    def text_delta(self, text: str) -> None:
        """Pass a streamed piece of a model answer to the sinks (not recorded in the trace)."""
        if self.sinks and text:
            shown = self.secrets.scrub_text(text)
            self._broadcast(lambda sink: sink.text_delta(shown))

    def _broadcast(self, notify: Callable[[TraceSink], object]) -> None:
        """Tell every sink, even when one raises: a sink that stops the run (a cancelled
        async run's) must not keep the step from the journal. The first exception is raised
        after all of them have been told."""
        raised: BaseException | None = None
        with self._sink_lock:
            for sink in self.sinks:
                try:
                    notify(sink)
                except BaseException as error:  # raised below, once every sink has it
                    raised = raised or error
        if raised is not None:
            raise raised

    def branch_point(self) -> BranchPoint:
        """Call in the spawning thread before starting concurrent branches."""
        frame = self._stack[-1]
        return BranchPoint(frame.call, frame.depth)

    @contextmanager
    def branch(self, point: BranchPoint) -> Iterator[list[TraceEvent]]:
        """Within a worker thread: record the events of one branch in their own list (yielded),
        one level below `point`, instead of in the shared frames of the spawning thread."""
        saved = getattr(self._local, "stack", None)
        frame = _Frame(call=point.call, depth=point.depth + 1)
        self._local.stack = [frame]
        try:
            yield frame.events
        finally:
            self._local.stack = saved

    def enter_agent(self, agent: str, function: str, args: list[Any]) -> TraceEvent:
        stack = self._stack
        frame = stack[-1]
        parent = frame.call
        args = self.secrets.scrub(args)
        call = TraceEvent(
            started=time.monotonic(),
            kind="agent",
            data={"agent": agent, "function": function, "args": args},
            id=next(self._ids),
            parent=parent.id if parent else None,
            depth=frame.depth,
        )
        stack.append(_Frame(call=call, depth=frame.depth + 1))
        self._notify(call, started=True)
        return call

    def exit_agent(self, call: TraceEvent, result: Any = None, error: str | None = None) -> None:
        """Close the call: its nested events move into its `agent` event in the caller's list."""
        stack = self._stack
        frame = stack.pop()
        assert frame.call is call, "agent calls must close in order"
        call.data["duration_ms"] = elapsed_ms(call.started)
        call.data["result"] = self.secrets.scrub(result)
        if error is not None:
            call.data["error"] = self.secrets.scrub_text(error)
        call.data["trace"] = frame.events
        stack[-1].events.append(call)
        self._notify(call)


def elapsed_ms(started: float) -> int:
    """Whole milliseconds since `started` (a time.monotonic() reading), for `duration_ms`."""
    return round((time.monotonic() - started) * 1000)


def event_json(event: TraceEvent) -> dict[str, Any]:
    """The JSON form of a recorded event, nested agent events included."""
    if event.kind != "agent" or "trace" not in event.data:
        return {"kind": event.kind, "data": event.data}
    data = dict(event.data)
    data["trace"] = [event_json(child) for child in data["trace"]]
    return {"kind": event.kind, "data": data}


# ----------------------------------------------------------------------------- pretty form

_CUT = 72


def short(value: Any) -> str:
    """A one-line rendering: strings as they are, other values as JSON; cut to 72 characters."""
    text = value if isinstance(value, str) else stringify(value)
    return text if len(text) <= _CUT else text[: _CUT - 3] + "..."


def event_title(kind: str, data: dict[str, Any]) -> str:
    """The pretty line of an event without its indent (reference §5 pretty format)."""

    def name(key: str) -> str:
        value = data.get(key)
        return "?" if value is None else str(value)

    if kind == "agent":
        return f"- agent {name('agent')}.{name('function')}"
    if kind == "generate":
        return f"- generate {short(data.get('instruction'))}"
    if kind == "tool":
        failed = " failed" if "error" in data else ""
        return f"- tool {name('tool')}.{name('method')}{failed}"
    if kind == "memory":
        return f"- memory {name('memory')}.{name('operation')}"
    if kind == "input":
        return f"- input {name('path')}"
    if kind == "for":
        return f"- for {name('item')}[{name('index')}]"
    if kind == "use":
        return f"- use {short(data.get('source'))}"
    if kind == "approval":
        by = f" ({data['by']})" if data.get("by") else ""
        return f"- approval {name('tool')}.{name('method')} {name('decision')}{by}"
    if kind == "parallel_for":
        return (
            f"- parallel for {name('item')} ({name('items')} items, "
            f"concurrency {name('concurrency')})"
        )
    if kind == "llm_retry":
        return (
            f"- retry {name('provider')} after {name('status')} "
            f"(retry {name('retry')}, waited {name('wait_ms')} ms)"
        )
    if kind == "llm_wait":
        return f"- wait {name('wait_ms')} ms for the limit {name('limit')}"
    return f"- {kind}"


def format_trace(trace: list[dict[str, Any]]) -> str:
    """The plain pretty trace: one line per event, two spaces of indent per nesting level."""
    lines: list[str] = []
    _format_into(trace, 0, lines)
    return "\n".join(lines) if lines else "(empty trace)"


def nested_groups(kind: str, data: dict[str, Any]) -> list[tuple[str | None, list[Any]]]:
    """The events nested in an event, for renderers: an agent call's own events (no heading),
    or one group per `parallel for` iteration headed `- iteration [i] ok|failed`."""
    if kind == "agent":
        return [(None, data.get("trace") or [])]
    if kind == "parallel_for":
        return [
            (
                f"- iteration [{iteration.get('index')}] "
                f"{'ok' if iteration.get('ok') else 'failed'}",
                iteration.get("trace") or [],
            )
            for iteration in data.get("iterations") or []
        ]
    return []


# Round markers of `loop until` / `repeat` and loop ends: later additions that the 0.1.0 plain
# format has no line for (a tree renderer nests the rounds with them).
LOOP_MARKERS = frozenset({"loop", "loop_end"})


def _format_into(trace: list[dict[str, Any]], depth: int, lines: list[str]) -> None:
    for event in trace:
        kind = str(event.get("kind"))
        if kind in LOOP_MARKERS:
            continue
        data = event.get("data") or {}
        lines.append("  " * depth + event_title(kind, data))
        for heading, events in nested_groups(kind, data):
            if heading is None:
                _format_into(events, depth + 1, lines)
            else:
                lines.append("  " * (depth + 1) + heading)
                _format_into(events, depth + 2, lines)
