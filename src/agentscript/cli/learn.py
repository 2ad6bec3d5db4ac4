"""`agentscript learn [list|show|retire|confirm|proposals]`: learn now from the runs that wait
in a workspace's journal, see and correct what learning holds, and see the approval policy
rules the user's repeated approvals suggest.

Runs only queue themselves for learning; the next reader of the workspace's memory learns from
them (agentscript.app.learning). `learn` alone does it at once, for a scheduler or before
reading the memory with another tool. The subcommands call agentscript.app.lessons; a lesson
is named by the handle `learn list` prints.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from agentscript.cli.actions import reporting_errors
from agentscript.cli.options import db_option, json_option, workspace_option
from agentscript.cli.render import to_json

if TYPE_CHECKING:
    from agentscript.learn.lessons import Lesson

_WORKSPACE_HELP = "Whose journal and memory (default: the workspace root here)."
STATUSES = ("candidate", "stored", "faded", "retired")


@click.group(name="learn", invoke_without_command=True)
@workspace_option("Whose journal (default: the workspace root here).")
@db_option()
@json_option()
@click.pass_context
def learn_command(ctx: click.Context, workspace: str | None, db: str | None, as_json: bool) -> None:
    """Learn from the finished runs that wait to be learned into the memory --db: their run
    memories and experiences. Runs queued for another database are left for it. The
    subcommands list the lessons learned, show one with its evidence, retire or confirm it."""
    if ctx.invoked_subcommand is not None:
        return

    def act() -> int:
        from agentscript.app.learning import learn_now

        report = learn_now(workspace, db)
        backlog = report.backlog
        if as_json:
            print(to_json(report.to_json()))
        else:
            left = f", {len(backlog.left)} left for another database" if backlog.left else ""
            print(f"learned from {len(backlog.learned)} run(s){left}")
            if report.proposals:
                print(
                    f"{report.proposals} approval policy proposal(s) from your repeated "
                    "approvals: agentscript learn proposals"
                )
        _warn(backlog.problems)
        return 0

    ctx.exit(reporting_errors(act))


def _warn(problems: list[str]) -> None:
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)


def lesson_line(lesson: Lesson) -> str:
    """`3f2a91c0! stored    failure    0.95   3 runs  Locate files before File.read`
    (`!`: in the IMPORTANT tier)."""
    mark = "!" if lesson.important else " "
    runs = f"{lesson.run_count:>3} run{'s' if lesson.run_count != 1 else ' '}"
    return (
        f"{lesson.handle}{mark} {lesson.status:<9} {lesson.kind:<10} "
        f"{lesson.confidence:.2f} {runs}  {lesson.title}"
    )


def lesson_detail(lesson: Lesson) -> str:
    """Every field of a lesson, its evidence included, one per line."""
    lines = [
        f"lesson     {lesson.handle}  ({lesson.key})",
        f"status     {lesson.status}{'  IMPORTANT' if lesson.important else ''}",
        f"kind       {lesson.kind}",
        f"confidence {lesson.confidence:.2f}  runs {lesson.run_count}  "
        f"confirmed {lesson.confirmations}",
        f"title      {lesson.title}",
        f"what to do {lesson.lesson}",
        f"when       {lesson.when}",
    ]
    if lesson.retired_reason:
        lines.append(f"retired    {lesson.retired_reason}")
    if lesson.runs:
        lines.append(f"runs       {', '.join(lesson.runs)}")
    evidence = lesson.evidence
    for name in ("event_ids", "tool_chain", "files", "other_runs", "approval_trace"):
        values = evidence.get(name) or []
        if values:
            lines.append(f"{name.replace('_', ' '):<10} {', '.join(map(str, values))}")
    if evidence.get("success") is not None:
        lines.append(f"{'ended':<10} {'ok' if evidence['success'] else 'failed'}")
    return "\n".join(lines)


@learn_command.command(name="list")
@click.option("--status", type=click.Choice(STATUSES), help="Only lessons in this state.")
@workspace_option(_WORKSPACE_HELP)
@db_option()
@json_option()
@click.pass_context
def list_command(
    ctx: click.Context, status: str | None, workspace: str | None, db: str | None, as_json: bool
) -> None:
    """Every lesson, best first: handle (! = important), state, kind, confidence, runs, title."""

    def act() -> int:
        from agentscript.app.lessons import list_lessons

        found = list_lessons(workspace, status, db)
        if as_json:
            print(to_json(found.to_json()))
        else:
            print("\n".join(lesson_line(lesson) for lesson in found.lessons) or "(no lessons)")
        _warn(found.problems)
        return 0

    ctx.exit(reporting_errors(act))


@learn_command.command(name="show")
@click.argument("lesson")
@workspace_option(_WORKSPACE_HELP)
@db_option()
@json_option()
@click.pass_context
def show_command(
    ctx: click.Context, lesson: str, workspace: str | None, db: str | None, as_json: bool
) -> None:
    """One LESSON (a handle from `learn list`) with its evidence."""

    def act() -> int:
        from agentscript.app.lessons import show_lesson

        found = show_lesson(workspace, lesson, db)
        print(to_json(found.to_json()) if as_json else lesson_detail(found))
        return 0

    ctx.exit(reporting_errors(act))


@learn_command.command(name="retire")
@click.argument("lesson")
@click.argument("reason", required=False)
@workspace_option(_WORKSPACE_HELP)
@db_option()
@json_option()
@click.pass_context
def retire_command(
    ctx: click.Context,
    lesson: str,
    reason: str | None,
    workspace: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Retire LESSON (with an optional REASON): memory archives it and learning never stores
    it again."""

    def act() -> int:
        from agentscript.app.lessons import retire_lesson

        done = retire_lesson(workspace, lesson, reason, db)
        print(to_json(done.to_json()) if as_json else f"retired    {done.handle}  {done.title}")
        return 0

    ctx.exit(reporting_errors(act))


@learn_command.command(name="confirm")
@click.argument("lesson")
@workspace_option(_WORKSPACE_HELP)
@db_option()
@json_option()
@click.pass_context
def confirm_command(
    ctx: click.Context, lesson: str, workspace: str | None, db: str | None, as_json: bool
) -> None:
    """Confirm LESSON: it is stored, reinforced and put in the IMPORTANT tier, which
    `Memory.experiences` ranks first."""

    def act() -> int:
        from agentscript.app.lessons import confirm_lesson

        done = confirm_lesson(workspace, lesson, db)
        shown = f"confirmed  {done.handle}  {done.title} (important)"
        print(to_json(done.to_json()) if as_json else shown)
        return 0

    ctx.exit(reporting_errors(act))


@learn_command.command(name="proposals")
@workspace_option(_WORKSPACE_HELP)
@json_option()
@click.pass_context
def proposals_command(ctx: click.Context, workspace: str | None, as_json: bool) -> None:
    """Approval policy rules your own repeated approvals suggest: a tool method you approved
    in several runs and never refused. Nothing is changed; add the rule yourself."""

    def act() -> int:
        from agentscript.app.lessons import policy_proposals

        found = policy_proposals(workspace)
        if as_json:
            print(to_json(found.to_json()))
        else:
            lines = [proposal.describe() for proposal in found.proposals]
            print("\n".join(lines) or "(no proposals)")
        return 0

    ctx.exit(reporting_errors(act))
