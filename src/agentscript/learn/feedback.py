"""User feedback on a finished run (`agentscript feedback RUN good|bad "note"`).

Good feedback confirms what the run taught: its experiences are reinforced, its graph-only
candidates are stored, and a note becomes a preference. Bad feedback retires every lesson the
run taught — success and procedure (they claimed something worked), failure and preference (they
drew the wrong conclusion) — except notes a user wrote, and a note becomes the failure lesson
that corrects them. Every verdict is kept on the run's EPISODE node, even one that changes
nothing else; giving the same verdict and note twice changes nothing the second time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agentscript.learn.experiences import (
    CANDIDATE,
    FEEDBACK_BAD,
    FEEDBACK_GOOD,
    LESSON_CHARS,
    STORED,
    TITLE_CHARS,
    Added,
    Candidate,
    Evidence,
    add_experience,
    approval_lines,
    clean_text,
    experiences_of_run,
    goal_text,
    learn_from_run,
    link_correction,
    promote_candidate,
    reinforce_experience,
    retire_experience,
    task_signature,
)
from agentscript.learn.graph import episode_node_id
from agentscript.learn.journal import run_trace
from agentscript.learn.journal_store import JournalError

if TYPE_CHECKING:
    from agentscript.learn.journal import Journal
    from agentscript.memory.service import MemoryService

Verdict = Literal["good", "bad"]
VERDICTS: tuple[Verdict, ...] = ("good", "bad")
# Lessons a user wrote (a feedback note): bad feedback on another verdict never retires them.
USER_TRIGGERS = (FEEDBACK_GOOD, FEEDBACK_BAD)
# A user's explicit word is the strongest signal a lesson can have.
FEEDBACK_CONFIDENCE = 0.9


@dataclass(frozen=True, slots=True)
class FeedbackReport:
    """What one verdict changed, by experience key."""

    run_id: str
    verdict: Verdict
    note: str | None
    reinforced: list[str] = field(default_factory=list)
    promoted: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    added: list[Added] = field(default_factory=list)
    # The same verdict and note had been given before: nothing was changed again.
    repeated: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "verdict": self.verdict,
            "note": self.note,
            "reinforced": list(self.reinforced),
            "promoted": list(self.promoted),
            "retired": list(self.retired),
            "added": [added.to_json() for added in self.added],
            "repeated": self.repeated,
        }

    def describe(self) -> str:
        """One line per change, for the command line."""
        lines = [f"run {self.run_id}: {self.verdict} feedback recorded"]
        if self.repeated:
            lines[0] += " before; nothing changed"
        lines += [f"reinforced {key}" for key in self.reinforced]
        lines += [f"stored     {key}" for key in self.promoted]
        lines += [f"retired    {key}" for key in self.retired]
        lines += [f"{added.action:<10} {added.key}" for added in self.added]
        return "\n".join(lines)


def apply_feedback(
    journal: Journal,
    service: MemoryService,
    reference: str,
    verdict: Verdict,
    note: str | None = None,
) -> FeedbackReport:
    """Apply a verdict on the run `reference` names (id, id prefix or `last`).

    A run nothing was learned from yet (journaled with learning off, or ended before its
    background step) is learned from first, so its experiences exist to be judged.
    """
    if verdict not in VERDICTS:
        raise JournalError(f"Feedback is good or bad, not {verdict!r}")
    run = journal.resolve(reference)
    status = journal.status(run)
    if status == "running":
        raise JournalError(f"Run {run.run_id} is still running: give feedback once it has ended")
    trace = run_trace(journal, run.run_id)
    graph = journal.graph
    episode_id = episode_node_id(run.run_id)
    episode = graph.node(episode_id)
    if episode is None:
        raise JournalError(f"Run {run.run_id} is not in the task graph")
    text = clean_text(note, run.workspace, LESSON_CHARS) if note and note.strip() else None
    given = list(episode.metadata.get("feedback") or [])
    if any(item.get("verdict") == verdict and item.get("note") == text for item in given):
        return FeedbackReport(run.run_id, verdict, text, repeated=True)
    if "learning" not in episode.metadata and status in ("ok", "error"):
        learn_from_run(service, graph, run, trace, journal.store.entries(run.run_id))
    report = FeedbackReport(run.run_id, verdict, text)
    program = run.program.replace("\\", "/").rsplit("/", 1)[-1] if run.program else "program"
    task = goal_text(trace.goal, run.workspace)
    lesson = Candidate(
        kind="preference" if verdict == "good" else "failure",
        trigger=FEEDBACK_GOOD if verdict == "good" else FEEDBACK_BAD,
        title=_title(text or ""),
        lesson=text or "",
        when=f'Tasks like "{task}" in {program}' if task else f"{program} runs",
        evidence=Evidence(
            run_id=run.run_id,
            tool_chain=tuple(step["tool"] for step in trace.tool_chain),
            files=tuple(touch["path"] for touch in trace.files),
            success=trace.success,
            approval_trace=approval_lines(trace),
        ),
        confidence=FEEDBACK_CONFIDENCE,
        signature=task_signature(run.program, run.entry),
        task=task,
    )
    if verdict == "good":
        _confirm(service, journal, run.run_id, report)
        if text is not None:
            report.added.append(add_experience(service, lesson, graph=graph))
    else:
        reason = f"bad feedback on run {run.run_id}" + (f": {text}" if text else "")
        for node in experiences_of_run(graph, run.run_id):
            metadata = node.metadata
            if metadata.get("trigger") not in USER_TRIGGERS and metadata.get("status") in (
                STORED,
                CANDIDATE,
            ):
                retire_experience(service, node.node_id, reason=reason, graph=graph)
                report.retired.append(node.node_id)
        if text is not None:
            added = add_experience(service, lesson, graph=graph)
            report.added.append(added)
            for key in report.retired:
                link_correction(graph, key, added.key, run.run_id)
    graph.store.set_metadata(
        episode_id, {"feedback": [*given, {"verdict": verdict, "note": text, "at": graph.clock()}]}
    )
    return report


def _confirm(service: MemoryService, journal: Journal, run_id: str, report: FeedbackReport) -> None:
    """Reinforce the run's stored experiences and store its graph-only candidates."""
    graph = journal.graph
    for node in experiences_of_run(graph, run_id):
        status = node.metadata.get("status")
        if status == STORED:
            done = reinforce_experience(service, node.node_id, graph=graph)
            if done["action"] == "reinforced":
                report.reinforced.append(node.node_id)
        elif status == CANDIDATE and promote_candidate(service, graph, node.node_id) is not None:
            report.promoted.append(node.node_id)


def _title(note: str) -> str:
    """A note's first sentence, cut to a title's length."""
    first = note.split(". ", 1)[0].rstrip(".")
    return first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 1].rstrip() + "…"
