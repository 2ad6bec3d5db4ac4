"""`agentscript learn`: learn now from the runs that wait in a workspace's journal.

Runs only queue themselves for learning; the next reader of the workspace's memory learns from
them (agentscript.app.learning). This command does it at once, for a scheduler or before
reading the memory with another tool.
"""

from __future__ import annotations

import sys

import click

from agentscript.cli.actions import reporting_errors
from agentscript.cli.options import db_option, json_option, workspace_option
from agentscript.cli.render import to_json


@click.command(name="learn")
@workspace_option("Whose journal (default: the current directory).", default=".")
@db_option()
@json_option()
@click.pass_context
def learn_command(ctx: click.Context, workspace: str, db: str | None, as_json: bool) -> None:
    """Learn from the finished runs that wait to be learned into the memory --db: their run
    memories and experiences. Runs queued for another database are left for it."""

    def act() -> int:
        from agentscript.app.learning import learn_now

        report = learn_now(workspace, db)
        if as_json:
            print(to_json(report.to_json()))
        else:
            left = f", {len(report.left)} left for another database" if report.left else ""
            print(f"learned from {len(report.learned)} run(s){left}")
        for problem in report.problems:
            print(f"warning: {problem}", file=sys.stderr)
        return 0

    ctx.exit(reporting_errors(act))
