"""What learning holds, for the user to see and correct (`agentscript learn list|show|retire|
confirm`): every EXPERIENCE node of the task graph — candidates kept in the graph only, active
lessons in memory, retired ones — with its evidence, named by a short handle (the first
characters of the key's digest) so nobody re-types `experience:report:failure:3f2a…`.

Confirming a lesson is the user's word on it: it is reinforced, its confidence goes to the
maximum, and it joins the IMPORTANT tier (memory tag `important`), which `Memory.experiences`
puts first and marks. A candidate that is confirmed is stored first. Retiring archives it in
memory and blocks the rule that found it from storing it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentscript.learn.experiences import (
    CANDIDATE,
    MAX_CONFIDENCE,
    RETIRED,
    promote_candidate,
    reinforce_experience,
    retire_experience,
)
from agentscript.learn.graph import NodeType
from agentscript.memory.experience_text import IMPORTANT_TAG, with_confidence
from agentscript.runtime.errors import AgentScriptError

if TYPE_CHECKING:
    from agentscript.learn.graph import Node, TaskGraph
    from agentscript.memory.service import MemoryService

# A handle shorter than this could match too much by accident.
MIN_HANDLE = 4
HANDLE_CHARS = 8


class LessonError(AgentScriptError):
    """A handle that names no lesson, or more than one."""


@dataclass(frozen=True, slots=True)
class Lesson:
    """One EXPERIENCE node as the user sees it."""

    handle: str
    key: str
    kind: str
    status: str
    confidence: float
    run_count: int
    confirmations: int
    important: bool
    title: str
    lesson: str
    when: str
    runs: tuple[str, ...]
    evidence: dict[str, Any]
    retired_reason: str | None

    @classmethod
    def of(cls, node: Node) -> Lesson:
        metadata = node.metadata
        candidate = metadata.get("candidate") or {}
        return cls(
            handle=handle_of(node.node_id),
            key=node.node_id,
            kind=str(metadata.get("kind")),
            status=str(metadata.get("status")),
            confidence=float(metadata.get("confidence") or 0.0),
            run_count=int(metadata.get("run_count") or 0),
            confirmations=int(metadata.get("confirmations") or 0),
            important=bool(metadata.get("important")),
            title=str(metadata.get("title") or ""),
            lesson=str(metadata.get("lesson") or ""),
            when=str(metadata.get("when") or ""),
            runs=tuple(str(run) for run in metadata.get("runs") or ()),
            evidence=dict(candidate.get("evidence") or {}),
            retired_reason=metadata.get("retired_reason"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "handle": self.handle,
            "key": self.key,
            "kind": self.kind,
            "status": self.status,
            "confidence": round(self.confidence, 3),
            "run_count": self.run_count,
            "confirmations": self.confirmations,
            "important": self.important,
            "title": self.title,
            "lesson": self.lesson,
            "when": self.when,
            "runs": list(self.runs),
            "evidence": self.evidence,
            "retired_reason": self.retired_reason,
        }

    def rank(self) -> tuple[bool, int, float, int]:
        """Important first, then by confirmations, confidence and runs (best first)."""
        return (not self.important, -self.confirmations, -self.confidence, -self.run_count)


def handle_of(key: str) -> str:
    return key.rsplit(":", 1)[-1][:HANDLE_CHARS]


def list_lessons(graph: TaskGraph, status: str | None = None) -> list[Lesson]:
    """Every lesson (of `status`, if given), best ranked first."""
    lessons = [Lesson.of(node) for node in graph.nodes(NodeType.EXPERIENCE)]
    if status is not None:
        lessons = [lesson for lesson in lessons if lesson.status == status]
    return sorted(lessons, key=Lesson.rank)


def find_lesson(graph: TaskGraph, handle: str) -> Lesson:
    """The lesson a handle names: its whole key, or a unique start of its digest."""
    wanted = handle.strip().lower()
    if wanted.startswith("experience:"):
        node = graph.node(wanted)
        if node is None or node.node_type is not NodeType.EXPERIENCE:
            raise LessonError(f"No lesson {handle!r}")
        return Lesson.of(node)
    if len(wanted) < MIN_HANDLE:
        raise LessonError(f"A lesson handle has at least {MIN_HANDLE} characters, not {handle!r}")
    found = [
        node
        for node in graph.nodes(NodeType.EXPERIENCE)
        if node.node_id.rsplit(":", 1)[-1].startswith(wanted)
    ]
    if not found:
        raise LessonError(f"No lesson {handle!r}: `agentscript learn list` shows the handles")
    if len(found) > 1:
        keys = ", ".join(node.node_id for node in found[:5])
        raise LessonError(f"Lesson handle {handle!r} is ambiguous: {keys}")
    return Lesson.of(found[0])


def retire_lesson(
    service: MemoryService, graph: TaskGraph, handle: str, reason: str | None
) -> Lesson:
    lesson = find_lesson(graph, handle)
    if lesson.status == RETIRED:
        raise LessonError(f"Lesson {lesson.handle} is already retired")
    retire_experience(service, lesson.key, reason=reason or "retired by the user", graph=graph)
    return find_lesson(graph, lesson.key)


def confirm_lesson(service: MemoryService, graph: TaskGraph, handle: str) -> Lesson:
    """Store (a candidate), reinforce, and put the lesson in the IMPORTANT tier."""
    lesson = find_lesson(graph, handle)
    if lesson.status == RETIRED:
        raise LessonError(
            f"Lesson {lesson.handle} was retired ({lesson.retired_reason or 'no reason kept'}); "
            "it is not brought back"
        )
    if lesson.status == CANDIDATE and promote_candidate(service, graph, lesson.key) is None:
        raise LessonError(f"Lesson {lesson.handle} could not be stored")
    done = reinforce_experience(service, lesson.key, graph=graph)
    if done["action"] != "reinforced" or done["id"] is None:
        raise LessonError(f"Lesson {lesson.handle} is not in memory (was it forgotten there?)")
    entry = service.get(done["id"])
    tags = list(entry["tags"]) + ([] if IMPORTANT_TAG in entry["tags"] else [IMPORTANT_TAG])
    service.update(
        done["id"],
        text=with_confidence(str(entry["body"]), MAX_CONFIDENCE),
        title=entry["title"],
        tags=tags,
        scope=entry["scope"],
    )
    graph.store.set_metadata(lesson.key, {"important": True, "confidence": MAX_CONFIDENCE})
    return find_lesson(graph, lesson.key)
