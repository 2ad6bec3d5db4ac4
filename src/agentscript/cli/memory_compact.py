"""`agentscript memory compact [--dry-run]`: summarise the ended days, weeks, months and years
of long-term memory now, instead of waiting for reads to do it a little at a time
(agentscript.app.compact).

The model is memory.yml's `timeline.model` (through the runtime's model router), or the mock
model with `--mock [FILE]` (scripted answers from FILE, keyed `MemoryCompactor.day`, `.week`,
…). A dry run calls no model and needs none. Progress goes to stderr: a bar at a terminal, one
line per bucket in a pipe; the report goes to stdout, as text or, with `--json`, as JSON. The
exit code is 1 when a summary failed (nothing was written for that bucket) or the command could
not run (one line on stderr, never a traceback).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

import click

from agentscript.cli.actions import reporting_errors
from agentscript.cli.options import db_option, json_option, mock_option, workspace_option
from agentscript.cli.render import to_json

if TYPE_CHECKING:
    from agentscript.memory.compaction import (
        BucketOutcome,
        CompactionReport,
        Progress,
        ProgressEvent,
    )


@click.command(name="compact")
@click.option("--dry-run", is_flag=True, help="List what would be summarised; call no model.")
@workspace_option("The workspace whose memory this is (default: the current directory).")
@db_option("database")
@click.option(
    "--scope",
    metavar="SCOPE",
    help="Only this scope: 'global' or a workspace path (default: the workspace and global).",
)
@mock_option(
    "Use the mock model instead of timeline.model: scripted answers from FILE "
    "(keys MemoryCompactor.day, .week, .month, .year), else empty answers."
)
@json_option("Print the report as JSON.")
@click.pass_context
def compact_command(
    ctx: click.Context,
    dry_run: bool,
    workspace: str | None,
    database: str | None,
    scope: str | None,
    responses: str | None,
    as_json: bool,
) -> None:
    """Summarise ended days, weeks, months and years of long-term memory: each day's episodic
    entries become a day summary, days a week, weeks a month, months a year. The sources are
    archived (or deleted with `timeline.archive: delete`). Without timeline.model the summaries
    are extractive (titles, keys, tags, first lines); with it, extractive ones are rewritten."""

    def act() -> int:
        from agentscript.app.compact import compact_memory

        with _progress(sys.stderr) as progress:
            report = compact_memory(
                workspace,
                database=database,
                scope=scope,
                dry_run=dry_run,
                responses=responses,
                progress=progress,
            )
        if as_json:
            print(to_json(report.to_dict()))
        else:
            for line in report_lines(report):
                print(line)
        return 1 if report.failed else 0

    ctx.exit(reporting_errors(act))


@contextmanager
def _progress(stream: TextIO) -> Iterator[Progress]:
    """A rich progress bar when `stream` is a terminal (gone when done), else one plain line
    per finished bucket, so logs and pipes get text without control codes."""
    if not stream.isatty():

        def plain(event: ProgressEvent) -> None:
            if event.outcome is not None:
                print(f"[{event.done}/{event.total}] {outcome_line(event.outcome)}", file=stream)
                stream.flush()

        yield plain
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    with Bar(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(file=stream),
        transient=True,
    ) as bar:
        task = bar.add_task("compacting memory", total=None)

        def show(event: ProgressEvent) -> None:
            bar.update(
                task,
                total=event.total,
                completed=event.done,
                description=f"{event.level} {event.bucket}",
            )

        yield show


def outcome_line(outcome: BucketOutcome) -> str:
    """`written  day   2026-05-04  /work/app: 5 sources → <id>`."""
    sources = f"{outcome.sources} source{'' if outcome.sources == 1 else 's'}"
    if outcome.status == "written":
        detail = f"{sources} → {outcome.summary_id}"
    elif outcome.status == "planned":
        detail = sources
    else:
        detail = outcome.reason or ""
    if outcome.replaces is not None and outcome.status in ("written", "planned"):
        detail += f", rebuilding {outcome.replaces}"
    return f"{outcome.status:<8} {outcome.level:<5} {outcome.bucket:<10}  {outcome.scope}: {detail}"


def report_lines(report: CompactionReport) -> list[str]:
    """The text report: one line per bucket, then the totals."""
    lines = [outcome_line(outcome) for outcome in report.outcomes]
    if not report.outcomes:
        lines.append("Nothing to compact: no ended bucket holds unsummarised entries")
    elif report.dry_run:
        lines.append(f"{len(report.planned)} summaries would be written (dry run)")
    else:
        totals = (
            f"{len(report.written)} written, {len(report.skipped)} skipped, "
            f"{len(report.failed)} failed"
        )
        if report.usage:
            totals += (
                f"; {report.usage.input_tokens} input and "
                f"{report.usage.output_tokens} output tokens"
            )
        lines.append(totals)
    return lines
