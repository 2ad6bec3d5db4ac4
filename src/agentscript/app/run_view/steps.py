"""The steps of a run's page, from its journal entries: one step per trace event, nested as the
run nested them, each with its start, duration and status.

The journal keeps each event as the trace had it (already redacted), with the time the journal
received it; an agent call also has its start. A step's duration is the one the event carries
(`duration_ms` on generates, tool calls, memory operations and `parallel for`), an agent call's
is from its start to its end, and other steps are instants. Events of a `parallel for`
iteration reach the journal before the `parallel_for` event that lists the iterations; they are
placed under one step per iteration, matched to the iteration whose trace holds them.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from agentscript.learn.journal_store import RUN_KIND, JournalEntry
from agentscript.runtime.trace import event_title


@dataclass(slots=True)
class Step:
    """One row of the timeline. `id` is the trace event id (iterations get their own ids)."""

    id: int
    kind: str
    title: str
    parent: int | None
    agent: str | None
    start: float
    duration_ms: float
    ok: bool
    data: dict[str, Any]
    children: list[Step] = field(default_factory=list)

    def to_json(self, run_started: float) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "title": self.title,
            "parent": self.parent,
            "agent": self.agent,
            "start_ms": round((self.start - run_started) * 1000, 3),
            "duration_ms": round(self.duration_ms, 3),
            "ok": self.ok,
            "data": self.data,
        }


def build_steps(entries: list[JournalEntry]) -> list[Step]:
    """The run's top-level steps, each holding its children, in the order they started."""
    return _StepBuilder(entries).build()


def flatten(steps: list[Step]) -> list[Step]:
    """Every step, parents before children, in timeline order."""
    flat: list[Step] = []
    pending = list(reversed(steps))
    while pending:
        step = pending.pop()
        flat.append(step)
        pending.extend(reversed(step.children))
    return flat


def step_failed(kind: str, data: dict[str, Any]) -> bool:
    """Whether an event records a failure: an error, `ok: false`, or a denied approval."""
    if "error" in data or data.get("ok") is False:
        return True
    if kind == "approval":
        return str(data.get("decision")) in ("denied", "rejected", "refused")
    return False


class _StepBuilder:
    def __init__(self, entries: list[JournalEntry]) -> None:
        self.entries = [e for e in entries if e.kind != RUN_KIND and e.event_id is not None]
        self.calls: dict[int, Step] = {}
        self.depths: dict[int, int] = {}
        self.roots: list[Step] = []
        # Events of parallel iterations waiting for their `parallel_for`, by (parent, depth).
        self.branches: dict[tuple[int | None, int], list[Step]] = defaultdict(list)
        self.next_id = max((e.event_id or 0 for e in self.entries), default=0) + 1

    def build(self) -> list[Step]:
        for entry in self.entries:
            if entry.phase == "start":
                self._start_call(entry)
            else:
                self._finish(entry)
        # A killed run leaves calls open and iterations without their `parallel_for`: they stay
        # where they were placed (calls) or go under their parent as they are (iterations).
        for (parent, _), steps in self.branches.items():
            for step in steps:
                self._attach(parent, step)
        return self.roots

    def _start_call(self, entry: JournalEntry) -> None:
        assert entry.event_id is not None
        data = dict(entry.data)
        step = Step(
            id=entry.event_id,
            kind="agent",
            title=event_title("agent", data),
            parent=entry.parent,
            agent=str(data.get("agent")),
            start=entry.at,
            duration_ms=0.0,
            ok=True,
            data={**data, "unfinished": True},
        )
        self.calls[entry.event_id] = step
        self.depths[entry.event_id] = entry.depth
        self._place(entry, step)

    def _finish(self, entry: JournalEntry) -> None:
        assert entry.event_id is not None
        data: dict[str, Any] = dict(entry.data)
        if entry.kind == "agent" and entry.event_id in self.calls:
            step = self.calls[entry.event_id]
            step.data = data
            step.duration_ms = max(0.0, (entry.at - step.start) * 1000)
            step.ok = not step_failed("agent", data)
            return
        duration = data.get("duration_ms")
        duration_ms = float(duration) if isinstance(duration, int | float) else 0.0
        if entry.kind == "parallel_for":
            data = {key: value for key, value in data.items() if key != "iterations"}
        step = Step(
            id=entry.event_id,
            kind=entry.kind,
            title=event_title(entry.kind, entry.data),
            parent=entry.parent,
            agent=self._agent_of(entry.parent),
            start=entry.at - duration_ms / 1000,
            duration_ms=duration_ms,
            ok=not step_failed(entry.kind, data),
            data=data,
        )
        if entry.kind == "parallel_for":
            self._gather_iterations(entry, step)
        self._place(entry, step)

    def _agent_of(self, parent: int | None) -> str | None:
        call = self.calls.get(parent) if parent is not None else None
        return call.agent if call is not None else None

    def _place(self, entry: JournalEntry, step: Step) -> None:
        parent = entry.parent
        own_depth = self.depths.get(parent, entry.depth - 1) + 1 if parent is not None else 0
        if entry.depth == own_depth:
            self._attach(parent, step)
        else:
            self.branches[(parent, entry.depth)].append(step)

    def _attach(self, parent: int | None, step: Step) -> None:
        call = self.calls.get(parent) if parent is not None else None
        (call.children if call is not None else self.roots).append(step)

    def _gather_iterations(self, entry: JournalEntry, step: Step) -> None:
        """One child step per iteration, holding the waiting events its trace lists."""
        waiting = self.branches.pop((entry.parent, entry.depth + 1), [])
        by_content: dict[str, deque[Step]] = defaultdict(deque)
        for candidate in waiting:
            by_content[_content_key(candidate.kind, candidate.data)].append(candidate)
        for iteration in entry.data.get("iterations") or []:
            members: list[Step] = []
            for event in iteration.get("trace") or []:
                queue = by_content.get(_content_key(event.get("kind"), event.get("data") or {}))
                if queue:
                    members.append(queue.popleft())
            ok = bool(iteration.get("ok"))
            start = min((m.start for m in members), default=step.start)
            end = max((m.start + m.duration_ms / 1000 for m in members), default=start)
            data = {key: value for key, value in iteration.items() if key != "trace"}
            child = Step(
                id=self._new_id(),
                kind="iteration",
                title=f"- iteration [{iteration.get('index')}] {'ok' if ok else 'failed'}",
                parent=step.id,
                agent=step.agent,
                start=start,
                duration_ms=max(0.0, (end - start) * 1000),
                ok=ok,
                data=data,
                children=members,
            )
            for member in members:
                member.parent = child.id
            step.children.append(child)
        leftovers = [s for queue in by_content.values() for s in queue]
        step.children.extend(sorted(leftovers, key=lambda s: s.start))

    def _new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1


def _content_key(kind: Any, data: dict[str, Any]) -> str:
    """What identifies an event inside an iteration's trace: its kind and data (an agent
    call's nested trace left out, as the journal stores it)."""
    shown = {key: value for key, value in data.items() if key != "trace"}
    return json.dumps([kind, shown], sort_keys=True, default=str)
