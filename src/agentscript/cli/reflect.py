"""`agentscript reflect RUN` and `agentscript profile summary AGENT`, and `run --reflect`.

`reflect` calls agentscript.app.reflect (which picks the model: `--model URI`, `--mock [FILE]`,
else the model the run itself used) and prints what changed; a reflection that got no usable
answer exits 1. `profile summary` prints an agent's profile card: a rich panel at a terminal,
plain lines when piped.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from agentscript.cli.actions import reporting_errors
from agentscript.cli.options import db_option, json_option, mock_option, workspace_option
from agentscript.cli.render import to_json

if TYPE_CHECKING:
    from agentscript.app.configuration import RunConfig
    from agentscript.learn.reflection import ReflectionReport


@click.command(name="reflect")
@click.argument("run")
@workspace_option("Whose journal to read.", default=".")
@click.option("--model", metavar="URI", help="The model that reflects (default: the run's own).")
@mock_option(
    "Reflect with the mock model: scripted answers from FILE (under the key "
    "`Reflection`), or alone an answer that changes nothing."
)
@click.option("--agent", metavar="NAME", help="Whose profile changes (default: the entry agent).")
@db_option()
@json_option("Print the reflection record as JSON.")
@click.pass_context
def reflect_command(
    ctx: click.Context,
    run: str,
    workspace: str,
    model: str | None,
    responses: str | None,
    agent: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Let RUN's agent reflect on it: the model proposes changes to its memory and profile.

    Each change is validated and applied on its own; a bad one is reported and skipped. The
    record goes to <workspace>/.agentscript/reflections/<id>.json, and an answer that is not
    usable JSON even when asked twice to <id>.error.json.
    """

    def act() -> int:
        from agentscript.app.reflect import reflect_on_run

        report = reflect_on_run(
            workspace, run, model=model, responses=responses, agent=agent, database=db
        )
        print(to_json(report.to_json()) if as_json else report.describe())
        _warn_underreflect(report)
        return 1 if report.outcome == "error" else 0

    ctx.exit(reporting_errors(act))


def reflect_after_run(config: RunConfig, program_path: str | None, run_id: str) -> None:
    """`run --reflect`: what happens is reported on stderr; a reflection never changes the
    run's exit code."""
    from agentscript.app.reflect import ReflectionSkipped, reflect_after_run

    try:
        report = reflect_after_run(config, program_path, run_id)
    except ReflectionSkipped as skipped:
        print(f"warning: reflection skipped: {skipped}", file=sys.stderr)
        return
    except Exception as problem:  # the run is over and its result printed: only report
        print(f"warning: reflection failed: {problem}", file=sys.stderr)
        return
    print(report.describe(), file=sys.stderr)
    _warn_underreflect(report)


def _warn_underreflect(report: ReflectionReport) -> None:
    if report.underreflect:
        print(
            f"warning: underreflect: run {report.run_id} was substantial but its reflection "
            "proposed no change",
            file=sys.stderr,
        )


@click.group(name="profile")
def profile_group() -> None:
    """Agents' profiles: mood, wants, opinions and journal (<workspace>/.agentscript/profiles)."""


@profile_group.command(name="summary")
@click.argument("agent")
@workspace_option("Whose profiles to read.", default=".")
@click.pass_context
def summary_command(ctx: click.Context, agent: str, workspace: str) -> None:
    """AGENT's profile on one screen: what it needs from you, mood, wants, beliefs, notes."""

    def show() -> int:
        from agentscript.app.reflect import profile_card

        lines = profile_card(workspace, agent)
        if sys.stdout.isatty():
            from rich.console import Console
            from rich.panel import Panel
            from rich.text import Text

            body = Text("\n".join(lines[1:]))
            Console().print(Panel(body, title=Text(lines[0]), title_align="left", expand=False))
        else:
            print("\n".join(lines))
        return 0

    ctx.exit(reporting_errors(show))
