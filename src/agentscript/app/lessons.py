"""The lessons use case (`agentscript learn list|show|retire|confirm|proposals`): see what
learning holds — candidates kept in the task graph only, stored, faded and retired lessons,
each with its evidence — and correct it, by the short handle `learn list` prints
(agentscript.learn.lessons does the work); and the approval policy changes that the user's
repeated approvals suggest (agentscript.learn.approval_proposals).

The journal is caught up first (its waiting runs are learned from), so what is listed is what
the next run would be told. Listing and showing open the memory only when runs wait to be
learned from, and a workspace without a journal gets none made.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscript.app.learning import catch_up
from agentscript.app.workspace import Workspace

if TYPE_CHECKING:
    from agentscript.learn.approval_proposals import PolicyProposal
    from agentscript.learn.lessons import Lesson


@dataclass(frozen=True, slots=True)
class LessonList:
    """The lessons of a workspace, best ranked first (see learn.lessons.Lesson.rank)."""

    lessons: list[Lesson]
    # What went wrong learning from the runs that waited (the listing went on).
    problems: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "lessons": [lesson.to_json() for lesson in self.lessons],
            "problems": list(self.problems),
        }


def list_lessons(
    workspace: str | Path | None, status: str | None = None, database: str | Path | None = None
) -> LessonList:
    from agentscript.learn import lessons

    with Workspace(workspace, database=database) as place:
        if not _has_journal(place):
            return LessonList([], [])
        problems = catch_up(place.root, database).problems
        return LessonList(lessons.list_lessons(place.journal.graph, status), problems)


def show_lesson(
    workspace: str | Path | None, handle: str, database: str | Path | None = None
) -> Lesson:
    from agentscript.learn import lessons

    with Workspace(workspace, database=database) as place:
        if not _has_journal(place):
            raise lessons.LessonError(f"No lesson {handle!r}: no run was journaled here yet")
        catch_up(place.root, database)
        return lessons.find_lesson(place.journal.graph, handle)


def retire_lesson(
    workspace: str | Path | None,
    handle: str,
    reason: str | None = None,
    database: str | Path | None = None,
) -> Lesson:
    """Retire the lesson: memory archives it and learning never stores it again."""
    from agentscript.learn import lessons

    with Workspace(workspace, database=database) as place:
        return lessons.retire_lesson(place.memory(), place.journal.graph, handle, reason)


def confirm_lesson(
    workspace: str | Path | None, handle: str, database: str | Path | None = None
) -> Lesson:
    """Confirm the lesson: stored (a candidate), reinforced, and in the IMPORTANT tier."""
    from agentscript.learn import lessons

    with Workspace(workspace, database=database) as place:
        return lessons.confirm_lesson(place.memory(), place.journal.graph, handle)


@dataclass(frozen=True, slots=True)
class ProposalList:
    """Approval policy rules the user's own repeated approvals suggest (never applied here)."""

    proposals: list[PolicyProposal]

    def to_json(self) -> dict[str, Any]:
        return {"proposals": [proposal.to_json() for proposal in self.proposals]}


def policy_proposals(workspace: str | Path | None) -> ProposalList:
    from agentscript.learn import approval_proposals

    with Workspace(workspace) as place:
        if not _has_journal(place):
            return ProposalList([])
        return ProposalList(approval_proposals.policy_proposals(place.journal.graph))


def _has_journal(place: Workspace) -> bool:
    from agentscript.learn.journal import journal_path

    return journal_path(place.root).is_file()
