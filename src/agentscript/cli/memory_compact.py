"""`agentscript memory compact [--dry-run]`: summarise the ended days, weeks, months and years
of long-term memory now, instead of waiting for reads to do it a little at a time.

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
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from agentscript.cli.actions import reporting_errors
from agentscript.cli.errors import CliError
from agentscript.cli.render import to_json

if TYPE_CHECKING:
    from agentscript.memory.compaction import (
        BucketOutcome,
        CompactionReport,
        Progress,
        ProgressEvent,
    )
    from agentscript.memory.config import MemoryConfig
    from agentscript.memory.summarizer import Summarizer
    from agentscript.runtime.ports import Closeable


@dataclass(frozen=True, slots=True)
class CompactOptions:
    """What `agentscript memory compact` was asked for."""

    dry_run: bool = False
    workspace: str | None = None
    database: str | None = None
    scope: str | None = None
    responses: str | None = None  # --mock: "" for the plain mock, else a scripted answers file
    as_json: bool = False


@click.command(name="compact")
@click.option("--dry-run", is_flag=True, help="List what would be summarised; call no model.")
@click.option(
    "--workspace",
    metavar="DIR",
    help="The workspace whose memory this is (default: the current directory).",
)
@click.option(
    "--db",
    "database",
    metavar="PATH",
    help="The memory database (default: $AGENTSCRIPT_MEMORY_DB, else ~/.agentscript/memory.db).",
)
@click.option(
    "--scope",
    metavar="SCOPE",
    help="Only this scope: 'global' or a workspace path (default: the workspace and global).",
)
@click.option(
    "--mock",
    "responses",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[FILE]",
    help="Use the mock model instead of timeline.model: scripted answers from FILE "
    "(keys MemoryCompactor.day, .week, .month, .year), else empty answers.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
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
    options = CompactOptions(dry_run, workspace, database, scope, responses, as_json)
    ctx.exit(reporting_errors(partial(run_compact, options)))


def run_compact(options: CompactOptions) -> int:
    """Open the service, compact, print the report; the exit code (1 when a summary failed)."""
    from agentscript.memory.compaction import compact
    from agentscript.memory.service import MemoryService

    if options.dry_run and options.responses is not None:
        raise CliError("Use either --dry-run or --mock, not both: a dry run calls no model")
    root = Path(options.workspace) if options.workspace is not None else Path.cwd()
    if not root.is_dir():
        raise CliError(f"Workspace {root} is not a directory")
    owned: list[Closeable] = []
    with MemoryService.open(root, database=options.database) as service:
        try:
            summarizer = (
                None if options.dry_run else _summarizer(service.config, options.responses, owned)
            )
            with _progress(sys.stderr) as progress:
                report = compact(
                    service,
                    summarizer,
                    scope=options.scope,
                    dry_run=options.dry_run,
                    progress=progress,
                )
        finally:
            for provider in reversed(owned):
                provider.close()
    if options.as_json:
        print(to_json(report.to_dict()))
    else:
        for line in report_lines(report):
            print(line)
    return 1 if report.failed else 0


def _summarizer(
    config: MemoryConfig, responses: str | None, owned: list[Closeable]
) -> Summarizer | None:
    """The summarizer over the mock model (`--mock`) or the real one memory.yml names; None,
    extractive summaries, when it names none."""
    from agentscript.composition import RunConfig, build_llm
    from agentscript.memory.summarizer import Summarizer

    if responses is not None:
        llm = build_llm(RunConfig(model="mock", responses=responses or None), owned)
        return Summarizer(llm, config.timeline.model, week_template=config.timeline.week_template)
    if config.timeline.model is None:
        return None
    return Summarizer.from_config(config, build_llm(RunConfig(model="real"), owned))


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
