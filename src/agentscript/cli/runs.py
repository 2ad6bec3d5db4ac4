"""`agentscript runs …`: list, show, replay, draw, view, export and resume a workspace's runs.

Each command is one call of agentscript.app.runs on `<workspace>/.agentscript/runs.db` (the
current directory by default) and prints the result; a run is named by its id, an id prefix or
`last`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from agentscript.cli.actions import reporting_errors
from agentscript.cli.errors import CliError
from agentscript.cli.options import (
    approve_option,
    json_option,
    mock_option,
    run_budget_options,
    workspace_option,
)
from agentscript.cli.render import print_trace, to_json

if TYPE_CHECKING:
    from agentscript.providers.tools.approvals import ApprovalMode

_WORKSPACE = workspace_option("Whose journal to read (default: the workspace root here).")


@click.group(name="runs")
def runs_group() -> None:
    """The run journal: what every run did, kept in <workspace>/.agentscript/runs.db."""


@runs_group.command(name="list")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
@click.option(
    "--queue", "url", metavar="URL", help="The runs of a queue: queued, running, done, failed."
)
@json_option("Print JSON instead of a table.")
@_WORKSPACE
@click.pass_context
def list_command(
    ctx: click.Context, limit: int, url: str | None, as_json: bool, workspace: str | None
) -> None:
    """The newest runs: id, status, start, duration, events, program (with --queue: the
    queue's runs, their state and the worker that ran each)."""
    from agentscript.app import runs
    from agentscript.learn.journal import format_runs

    def show() -> int:
        if url is not None:
            return _list_queue(url, limit, as_json)
        views = runs.list_runs(workspace, limit)
        print(to_json([view.to_json() for view in views]) if as_json else format_runs(views))
        return 0

    ctx.exit(reporting_errors(show))


def _list_queue(url: str, limit: int, as_json: bool) -> int:
    from dataclasses import asdict

    from agentscript.app.queue.engine import QueueClient

    client = QueueClient(url)
    try:
        queued = client.runs(limit)
    finally:
        client.close()
    if as_json:
        print(to_json([asdict(run) for run in queued]))
        return 0
    for run in queued:
        where = run.worker or "-"
        print(f"{run.workflow_id}  {run.status.lower():9}  {where}  {run.label}  {run.program}")
    return 0


@runs_group.command(name="show")
@click.argument("run")
@click.option("--pretty", is_flag=True, help="A readable header and trace instead of JSON.")
@_WORKSPACE
@click.pass_context
def show_command(ctx: click.Context, run: str, pretty: bool, workspace: str | None) -> None:
    """Everything the journal holds about RUN."""
    from agentscript.app import runs
    from agentscript.learn.journal import format_run

    def show() -> int:
        detail = runs.show_run(workspace, run)
        print(format_run(detail) if pretty else to_json(detail.to_json()))
        return 0

    ctx.exit(reporting_errors(show))


@runs_group.command(name="replay")
@click.argument("run")
@click.option("--pretty", is_flag=True, help="Draw the trace instead of printing JSON.")
@_WORKSPACE
@click.pass_context
def replay_command(ctx: click.Context, run: str, pretty: bool, workspace: str | None) -> None:
    """RUN's trace as it happened, exactly as the run returned it."""
    from agentscript.app import runs

    def replay() -> int:
        trace = runs.replay_trace(workspace, run)
        if pretty:
            print_trace(trace, sys.stdout)
        else:
            print(to_json(trace))
        return 0

    ctx.exit(reporting_errors(replay))


@runs_group.command(name="trace")
@click.argument("run")
@_WORKSPACE
@click.pass_context
def trace_command(ctx: click.Context, run: str, workspace: str | None) -> None:
    """RUN's execution trace: goal, tool chain, approvals, files, result, success."""
    from agentscript.app import runs

    def trace() -> int:
        print(to_json(runs.execution_trace(workspace, run).to_json()))
        return 0

    ctx.exit(reporting_errors(trace))


@runs_group.command(name="graph")
@click.argument("run")
@click.option("--html", "html_file", metavar="FILE", help="Also write a self-contained page.")
@_WORKSPACE
@click.pass_context
def graph_command(
    ctx: click.Context, run: str, html_file: str | None, workspace: str | None
) -> None:
    """RUN's tool chain as a tree; with --html, its task graph as an SVG page."""
    from rich.console import Console

    from agentscript.app import runs
    from agentscript.learn.pictures import tool_chain_tree

    def draw() -> int:
        graph = runs.draw_run(workspace, run, html_file)
        Console(highlight=False).print(tool_chain_tree(graph.picture))
        if graph.page is not None:
            print(f"wrote {graph.page}", file=sys.stderr)
        return 0

    ctx.exit(reporting_errors(draw))


@runs_group.command(name="view")
@click.argument("run", default="last")
@click.option("--out", "out_file", metavar="FILE", help="Where to write the page.")
@click.option("--open", "open_page", is_flag=True, help="Open the page in the web browser.")
@_WORKSPACE
@click.pass_context
def view_command(
    ctx: click.Context, run: str, out_file: str | None, open_page: bool, workspace: str | None
) -> None:
    """RUN's page (default: the last run): timeline, generates, tools, task graph, in one
    self-contained HTML file (default .agentscript/views/<run id>.html)."""
    from agentscript.app import runs

    def view() -> int:
        written = runs.view_run(workspace, run, out_file)
        print(written[0])
        if open_page:
            import webbrowser

            webbrowser.open(written[0].resolve().as_uri())
        return 0

    ctx.exit(reporting_errors(view))


@runs_group.command(name="resume")
@click.argument("run")
@mock_option("Go on with the mock model (scripted answers from FILE) instead of the real one.")
@approve_option(
    "Live calls that need approval: ask at the terminal (default), approve all, or refuse."
)
@click.option("--approvals", metavar="FILE", help="Approval policy (YAML or JSON).")
@click.option(
    "--rerun-unfinished",
    is_flag=True,
    help="Run again (behind approvals) a call with effects that RUN started but never finished.",
)
@run_budget_options
@click.option("--trace", metavar="FILE|pretty", help="Write the trace to FILE, or draw it.")
@click.option("--quiet", is_flag=True, help="Print only the result value.")
@click.option(
    "--learn/--no-learn",
    default=None,
    help="Learn from the resumed run (default: no; like a replay, most of it was answered "
    "from the journal).",
)
@click.option("--memory-db", metavar="PATH", help="Long-term memory database for this run.")
@_WORKSPACE
@click.pass_context
def resume_command(
    ctx: click.Context,
    run: str,
    responses: str | None,
    approve: ApprovalMode | None,
    approvals: str | None,
    rerun_unfinished: bool,
    max_tokens: int | None,
    max_calls: int | None,
    max_seconds: float | None,
    trace: str | None,
    quiet: bool,
    learn: bool | None,
    memory_db: str | None,
    workspace: str | None,
) -> None:
    """Finish RUN (interrupted, killed, failed or over budget) without repeating what it did.

    The program runs again from the start with RUN's input; every model, tool and memory call
    RUN made is answered from the journal, then the run goes on live under fresh budgets. A
    call with effects that RUN started but never finished is asked about at the terminal (or
    refused; --rerun-unfinished runs it). The new run names RUN as the run it resumes, and its
    trace holds RUN's effect records too, so `undo` puts back what both did.
    """
    from agentscript.app.configuration import RunConfig
    from agentscript.cli import actions

    config = RunConfig(
        model="mock" if responses is not None else "real",
        responses=responses or None,
        approve=approve,
        approvals=approvals,
        rerun_unfinished=rerun_unfinished,
        max_tokens=max_tokens,
        max_calls=max_calls,
        max_seconds=max_seconds,
        learn=learn,
        memory_db=memory_db,
        workspace=workspace,
    )
    output = actions.RunOutput(trace=trace, quiet=quiet, report_usage=True, tree=True)
    ctx.exit(actions.resume_program(run, config, output))


@runs_group.command(name="export")
@click.argument("run")
@click.option(
    "--cassette", "cassette_file", metavar="FILE", help="Write RUN as a recording for --replay."
)
@click.option("--otlp", is_flag=True, help="Send RUN as OpenTelemetry spans.")
@click.option(
    "--endpoint",
    metavar="URL",
    help="With --otlp, the collector (default: OTEL_EXPORTER_OTLP_ENDPOINT, else "
    "http://localhost:4318).",
)
@_WORKSPACE
@click.pass_context
def export_command(
    ctx: click.Context,
    run: str,
    cassette_file: str | None,
    otlp: bool,
    endpoint: str | None,
    workspace: str | None,
) -> None:
    """Export RUN from the journal: --cassette FILE writes what it exchanged with models,
    tools and memories as a recording for `run --replay FILE` (provider keys redacted);
    --otlp sends it to an OpenTelemetry collector over OTLP/HTTP, with the times it happened
    (needs the otel extra)."""
    if (cassette_file is None) == (not otlp):
        ctx.exit(reporting_errors(_usage("Use exactly one of --cassette FILE and --otlp")))
    if cassette_file is not None and endpoint is not None:
        ctx.exit(reporting_errors(_usage("--endpoint goes with --otlp")))
    if cassette_file is not None:
        ctx.exit(reporting_errors(lambda: _export_cassette(workspace, run, cassette_file)))
    ctx.exit(reporting_errors(lambda: _export_otlp(workspace, run, endpoint)))


def _usage(message: str) -> Callable[[], int]:
    """A usage error reported like every other error: one line, exit code 1."""

    def refuse() -> int:
        raise CliError(message)

    return refuse


def _export_cassette(workspace: str | None, run: str, cassette_file: str) -> int:
    from agentscript.app import runs

    written = runs.export_cassette(workspace, run, cassette_file)
    print(
        f"wrote {written.path}: {written.model} model exchanges, {written.tools} tool calls, "
        f"{written.memory} memory calls from run {written.run_id}",
        file=sys.stderr,
    )
    return 0


def _export_otlp(workspace: str | None, run: str, endpoint: str | None) -> int:
    import os

    from agentscript.app import runs

    report = runs.export_otlp(workspace, run, endpoint, os.environ)
    if not report.ok:
        print(
            f"error: could not send run {report.run_id} to {report.endpoint} "
            "(is the collector running?)",
            file=sys.stderr,
        )
        return 1
    print(f"sent run {report.run_id}: {report.spans} spans to {report.endpoint}")
    return 0
