"""`agentscript feedback RUN good|bad [NOTE]`: tell the runtime how a run went.

Opens the workspace's journal and the long-term memory, calls
`agentscript.learn.feedback.apply_feedback` and prints what changed.
"""

from __future__ import annotations

import click

from agentscript.cli.actions import reporting_errors
from agentscript.cli.errors import CliError
from agentscript.cli.render import to_json


@click.command(name="feedback")
@click.argument("run")
@click.argument("verdict", type=click.Choice(["good", "bad"]))
@click.argument("note", required=False)
@click.option(
    "--workspace",
    metavar="DIR",
    help="Whose journal and memory (default: the workspace root around the current folder).",
)
@click.option(
    "--db",
    metavar="PATH",
    help="The memory database (default: $AGENTSCRIPT_MEMORY_DB, else ~/.agentscript/memory.db).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def feedback_command(
    ctx: click.Context,
    run: str,
    verdict: str,
    note: str | None,
    workspace: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Say whether RUN went well (good) or badly (bad), with an optional NOTE.

    good reinforces the experiences RUN taught (a NOTE becomes a preference); bad retires the
    ones that said what worked (a NOTE becomes the lesson that corrects them). The verdict is
    kept in the run's task graph either way.
    """

    def act() -> int:
        from agentscript.learn.feedback import apply_feedback
        from agentscript.learn.journal import Journal, journal_folder
        from agentscript.memory.service import MemoryService

        root = journal_folder(workspace)
        if not root.is_dir():
            raise CliError(f"Workspace {root} is not a directory")
        journal = Journal.for_workspace(root)
        try:
            found = journal.resolve(run)
            with MemoryService.open(found.workspace or root, database=db) as service:
                report = apply_feedback(
                    journal, service, found.run_id, "good" if verdict == "good" else "bad", note
                )
        finally:
            journal.close()
        print(to_json(report.to_json()) if as_json else report.describe())
        return 0

    ctx.exit(reporting_errors(act))
