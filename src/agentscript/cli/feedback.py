"""`agentscript feedback RUN good|bad [NOTE]`: tell the runtime how a run went
(agentscript.app.feedback)."""

from __future__ import annotations

import click

from agentscript.cli.actions import reporting_errors
from agentscript.cli.options import db_option, json_option, workspace_option
from agentscript.cli.render import to_json


@click.command(name="feedback")
@click.argument("run")
@click.argument("verdict", type=click.Choice(["good", "bad"]))
@click.argument("note", required=False)
@workspace_option("Whose journal and memory.", default=".")
@db_option()
@json_option()
@click.pass_context
def feedback_command(
    ctx: click.Context,
    run: str,
    verdict: str,
    note: str | None,
    workspace: str,
    db: str | None,
    as_json: bool,
) -> None:
    """Say whether RUN went well (good) or badly (bad), with an optional NOTE.

    good reinforces the experiences RUN taught (a NOTE becomes a preference); bad retires the
    ones that said what worked (a NOTE becomes the lesson that corrects them). The verdict is
    kept in the run's task graph either way.
    """

    def act() -> int:
        from agentscript.app.feedback import give_feedback

        report = give_feedback(workspace, run, "good" if verdict == "good" else "bad", note, db)
        print(to_json(report.to_json()) if as_json else report.describe())
        return 0

    ctx.exit(reporting_errors(act))
