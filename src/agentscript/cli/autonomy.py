"""`agentscript autonomy …`: run a program unattended, and see what unattended runs did.

`run` is what a scheduler (cron, launchd, a systemd timer) calls: it runs the program read-only
on a token budget and records each run in the workspace's autonomy ledger; `summary` reads the
ledger back, with the desires that wait for the user. Both call agentscript.app.autonomy.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentscript.cli.actions import reporting_errors
from agentscript.cli.input import parse_input_object
from agentscript.cli.options import json_option, mock_option, workspace_option
from agentscript.cli.render import to_json
from agentscript.learn.autonomy_ledger import OUTCOMES, WINDOW_KINDS

if TYPE_CHECKING:
    from rich.table import Table

    from agentscript.learn.autonomy import WindowReport
    from agentscript.learn.autonomy_ledger import AutonomySummary, WindowKind

# Outcome colours at a terminal.
_STYLES = {"done": "green", "no-update": "cyan", "blocked": "yellow", "error": "red"}


@click.group(name="autonomy")
def autonomy_group() -> None:
    """Unattended runs: read-only, on a token budget, each recorded in
    <workspace>/.agentscript/autonomy/runs.jsonl."""


@autonomy_group.command(name="run")
@click.argument("file")
@click.option("--kind", type=click.Choice(WINDOW_KINDS), required=True, help="What the run is for.")
@click.option(
    "--budget-tokens",
    type=click.IntRange(min=0),
    help="Tokens the window may spend (default: idle 200000, heartbeat 500000, review and "
    "desire 100000; 0: no budget).",
)
@click.option("--input", "input_json", metavar="JSON", help="Input object as JSON.")
@mock_option("Use the mock model: shape defaults, or scripted answers from FILE.")
@workspace_option("Tools, journal, ledger and profiles (default: the program's).")
@click.option(
    "--window",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run at most K tasks (K desires, or K ticks); stop at the first rest.",
)
@click.pass_context
def run_command(
    ctx: click.Context,
    file: str,
    kind: WindowKind,
    budget_tokens: int | None,
    input_json: str | None,
    responses: str | None,
    workspace: str | None,
    window: int,
) -> None:
    """Run FILE unattended: only reads, every effectful call refused, within a token budget.

    Each run is recorded with its outcome: done, no-update (it rested), blocked (budget spent
    or an effectful call refused) or error. Exits 1 when a run ended in error.
    """
    from agentscript.app.autonomy import run_autonomous

    def act() -> int:
        input_value = {} if input_json is None else parse_input_object(input_json, "--input")
        overrides: dict[str, Any] = {}
        if responses is not None:
            overrides.update(model="mock", responses=responses or None)
        report = run_autonomous(
            file,
            kind,
            workspace=Path(workspace) if workspace else Path(file).parent,
            budget_tokens=budget_tokens,
            window=window,
            config_overrides=overrides,
            input_value=input_value,
        )
        for problem in report.problems:
            print(f"warning: {problem}", file=sys.stderr)
        print(format_window(report))
        return 1 if report.failed else 0

    ctx.exit(reporting_errors(act))


@autonomy_group.command(name="summary")
@click.option(
    "--days",
    type=click.FloatRange(min=0, min_open=True),
    default=7.0,
    show_default=True,
    help="How far back to look.",
)
@workspace_option("Whose ledger.", default=".")
@json_option("Print JSON instead of tables.")
@click.pass_context
def summary_command(ctx: click.Context, days: float, workspace: str, as_json: bool) -> None:
    """Runs, tokens and outcomes per kind, the last 10 runs, and what needs you."""
    from agentscript.app.autonomy import autonomy_overview
    from agentscript.learn.autonomy_ledger import format_summary

    def act() -> int:
        overview = autonomy_overview(workspace, days)
        if as_json:
            print(to_json(overview.to_json()))
        elif sys.stdout.isatty():
            _print_rich(overview.summary, overview.needs_you)
        else:
            print(format_summary(overview.summary, overview.needs_you))
        return 0

    ctx.exit(reporting_errors(act))


def format_window(report: WindowReport) -> str:
    """One line per run, then how the window ended and what waits for the user."""
    from agentscript.learn.autonomy import needs_you_line

    lines = []
    for run in report.runs:
        parts = [
            run.kind,
            *([run.task] if run.task else []),
            run.outcome,
            f"{run.tokens:,} tokens",
            f"{run.tool_calls} tool calls",
            f"{run.duration_ms / 1000:.1f}s",
        ]
        lines.append("  ".join(parts) + (f"  {run.note}" if run.note else ""))
    budget = f"of {report.budget_tokens:,} " if report.budget_tokens is not None else ""
    lines.append(
        f"window: {len(report.runs)} run(s), stopped: {report.stopped}, "
        f"{report.spent_tokens:,} {budget}tokens"
    )
    lines += [f"needs you: {needs_you_line(desire)}" for desire in report.needs_user]
    return "\n".join(lines)


def _print_rich(summary: AutonomySummary, waiting: list[str]) -> None:
    """The summary at a terminal: tables with coloured outcomes and a bar per outcome."""
    from rich.console import Console
    from rich.text import Text

    from agentscript.learn.autonomy_ledger import (
        BAR_WIDTH,
        KIND_NUMBERS,
        RECENT_NUMBERS,
        bar_length,
        kind_rows,
        operation_bars,
        recent_rows,
        utc_minute,
    )

    console = Console(highlight=False)
    console.print(
        Text(f"Autonomous runs, last {summary.days:g} days", style="bold"),
        Text(f"(since {utc_minute(summary.since)} UTC)", style="dim"),
    )
    if summary.total.runs == 0:
        console.print("(no runs)")
    else:
        kinds = _table(kind_rows(summary), KIND_NUMBERS)
        kinds.rows[-1].style = "bold"  # the total
        console.print(kinds)
        largest = max(summary.total.outcomes.values())
        for outcome in OUTCOMES:
            count = summary.total.outcomes[outcome]
            line = Text(f"{outcome:<9}  ")
            line.append(f"{'█' * bar_length(count, largest):<{BAR_WIDTH}}", style=_STYLES[outcome])
            line.append(f"  {count}")
            console.print(line)
        recent = _table(recent_rows(summary), RECENT_NUMBERS, styled_column=2)
        recent.title = f"Last {len(summary.recent)} runs"
        console.print(recent)
    if summary.operation_counts:
        console.print(Text("Operations per reflection", style="bold"))
        for bar in operation_bars(summary.operation_counts, "█"):
            console.print(bar)
    for item in waiting:
        console.print(Text(f"needs you: {item}", style="bold yellow"))


def _table(
    rows: list[tuple[str, ...]], numbers: frozenset[int], styled_column: int | None = None
) -> Table:
    """A rich table of `rows` (header first), numbers aligned right; the cells of
    `styled_column` (an outcome) take their outcome's colour."""
    from rich.table import Table
    from rich.text import Text

    header, *body = rows
    table = Table(title_justify="left")
    for index, name in enumerate(header):
        table.add_column(name, justify="right" if index in numbers else "left", no_wrap=index == 0)
    for row in body:
        cells = [Text(cell) for cell in row]
        if styled_column is not None:
            cells[styled_column].stylize(_STYLES[row[styled_column]])
        table.add_row(*cells)
    return table
