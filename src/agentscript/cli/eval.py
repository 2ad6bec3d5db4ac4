"""`agentscript eval PROGRAM --data CASES.jsonl …`: score a program on a dataset.

Parses the options, makes one call to `agentscript.app.evals` and renders the summary (a rich
table, or `--json`). Exit codes: 0 when the eval ran and every configuration reached
`--min-score`, 1 when one did not (or the eval's budget left cells unrun), 2 when the eval
could not start (a usage error, a missing file, a bad case, metric or program), 130 on Ctrl-C.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

import click

from agentscript.cli.errors import REPORTED_ERRORS, error_lines
from agentscript.cli.options import (
    approve_option,
    case_options,
    mock_option,
    timeout_environ,
    timeout_option,
)

if TYPE_CHECKING:
    from agentscript.app.evals.report_data import EvalReport
    from agentscript.app.evals.runner import EvalProgress

USAGE_EXIT = 2


class EvalUsageError(click.ClickException):
    """A usage error of `eval`: its bare message and exit code 2 (for CI scripts)."""

    exit_code = USAGE_EXIT

    def show(self, file: Any = None) -> None:
        click.echo(f"eval: {self.format_message()}", err=True)


class _EvalCommand(click.Command):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as error:
            raise EvalUsageError(error.format_message()) from None


@click.command(name="eval", cls=_EvalCommand)
@click.argument("program")
@case_options
@click.option(
    "--pass-score",
    type=click.FloatRange(0, 1),
    default=1.0,
    show_default=True,
    help="A cell passes with at least this score.",
)
@click.option(
    "--model",
    "models",
    multiple=True,
    metavar="URI|NAME=URI|mock",
    help="A model to compare: every `import llm`, the one named NAME, or the mock.",
)
@click.option(
    "--variant", "variants", multiple=True, metavar="LABEL=CHOICE", help="A `use one of` pick."
)
@mock_option("Answer with the mock model: shape defaults, or scripted answers from FILE.")
@click.option("--record", metavar="DIR", help="Record every cell's model exchanges in DIR.")
@click.option(
    "--replay",
    metavar="DIR|RESULTS.jsonl",
    help="Answer from the recordings in DIR, or from the journaled runs an earlier eval's "
    "--out file names.",
)
@click.option("--judge-model", metavar="URI", help="The model a judge program answers with.")
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Cells run at once.",
)
@click.option(
    "--workers",
    callback=lambda ctx, param, value: _workers(value),
    default="auto",
    show_default=True,
    metavar="N|auto",
    help="Processes the cells run in; auto: one per 8 of --concurrency, up to the cores.",
)
@click.option(
    "--queue",
    metavar="URL",
    help="Run the cells on this queue's workers (postgresql://… or sqlite:///PATH), "
    "--concurrency of them on the queue at once; scored here.",
)
@click.option("--max-tokens", type=click.IntRange(min=1), help="Token budget of the whole eval.")
@click.option("--max-calls", type=click.IntRange(min=1), help="Model-call budget of the eval.")
@click.option(
    "--max-seconds",
    type=click.FloatRange(min=0, min_open=True),
    help="Time limit of each cell's run.",
)
@timeout_option
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="Only cases with this tag.")
@click.option("--out", metavar="RESULTS.jsonl", help="One line per cell; resumes if it exists.")
@click.option("--fresh", is_flag=True, help="Run every cell again, ignoring --out's rows.")
@click.option("--report", metavar="REPORT.html", help="Write a self-contained HTML report.")
@click.option("--min-score", type=float, metavar="X", help="Exit 1 below this mean score.")
@click.option("--learn", is_flag=True, help="Compare learning on and off, cases in order.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--agent", metavar="NAME", help="Entry agent (default: the main agent).")
@click.option("--function", metavar="NAME", help="Entry function (default: its main func).")
@click.option("--workspace", metavar="DIR", help="Tools' folder and journal (default: program's).")
@click.option("--memory-db", metavar="PATH", help="Long-term memory database (with --learn).")
@click.option("--mock-tools", is_flag=True, help="Answer every tool call with the mock tool.")
@approve_option("Approve or refuse all.", choices=("auto", "deny"))
@click.option("--approvals", metavar="FILE", help="Approval policy (YAML or JSON).")
@click.pass_context
def eval_command(ctx: click.Context, /, program: str, **options: Any) -> None:
    """Score PROGRAM on every case of --data in every configuration (--model × --variant).

    Cells that need approval are refused unless --approve or --approvals allows them.
    Exit 0 when every configuration reached --min-score, 1 when one did not (or the budget
    left cells unrun), 2 when the eval could not start. See docs/evals.md.
    """
    if options["responses"] is not None and options["replay"] is not None:
        raise EvalUsageError("Use either --mock or --replay, not both")
    if options["record"] is not None and options["replay"] is not None:
        raise EvalUsageError("Use either --record or --replay, not both")
    if options["tolerance"] is not None and options["metric"] != "number":
        raise EvalUsageError("--tolerance applies to --metric number only")
    if options["judge_model"] and not options["metric"].endswith(".as"):
        raise EvalUsageError("--judge-model needs a judge program as --metric (JUDGE.as)")
    if options["fresh"] and not options["out"]:
        raise EvalUsageError("--fresh needs --out (the results file to start over)")
    ctx.exit(_evaluate(program, options))


def _evaluate(program: str, options: dict[str, Any]) -> int:
    from agentscript.app.evals.runner import EvalConfig, evaluate

    responses = options["responses"]
    with progress_bar(enabled=not options["as_json"]) as on_progress:
        config = EvalConfig(
            models=list(options["models"]),
            variants=list(options["variants"]),
            mock=(responses or True) if responses is not None else False,
            record=options["record"],
            replay=options["replay"],
            concurrency=options["concurrency"],
            workers=options["workers"],
            queue=options["queue"],
            max_tokens=options["max_tokens"],
            max_calls=options["max_calls"],
            max_seconds=options["max_seconds"],
            tags=list(options["tags"]),
            out=options["out"],
            fresh=options["fresh"],
            field=options["field"],
            tolerance=options["tolerance"],
            pass_score=options["pass_score"],
            learn=options["learn"],
            judge_model=options["judge_model"],
            agent=options["agent"],
            function=options["function"],
            workspace=options["workspace"],
            memory_db=options["memory_db"],
            mock_tools=options["mock_tools"],
            approve=options["approve"],
            approvals=options["approvals"],
            environ=timeout_environ(options["timeout"]),
            on_progress=on_progress,
        )
        try:
            report = evaluate(program, options["data"], config, metric=options["metric"])
        except KeyboardInterrupt:
            if options["out"]:
                hint = (
                    f"; the finished cells are in {options['out']} (run the same command to resume)"
                )
            else:
                hint = " (with --out RESULTS.jsonl an eval keeps its cells and resumes)"
            if options["queue"]:
                hint += (
                    "; its runs still queued were cancelled, those a worker took finish "
                    f"(agentscript runs list --queue {options['queue']})"
                )
            print(f"Interrupted{hint}", file=sys.stderr)
            return 130
        except REPORTED_ERRORS as error:
            for line in error_lines(error):
                print(line, file=sys.stderr)
            return USAGE_EXIT
    if options["as_json"]:
        from agentscript.cli.render import to_json

        print(to_json(report.to_json()))
    else:
        from agentscript.cli.eval_render import print_summary

        print_summary(report, options["min_score"])
    if options["report"]:
        from agentscript.app.evals.report import write_report

        try:
            write_report(report, options["report"])
        except OSError as error:
            print(f"Cannot write the report {options['report']}: {error.strerror}", file=sys.stderr)
            return USAGE_EXIT
    return _exit_code(report, options["min_score"])


def _workers(value: str) -> int | Literal["auto"]:
    if value == "auto":
        return "auto"
    if value.isdigit() and int(value) >= 1:
        return int(value)
    raise click.BadParameter(f"{value!r} is not a positive number or auto")


def _exit_code(report: EvalReport, min_score: float | None) -> int:
    if report.not_run:
        return 1
    if min_score is not None and report.below(min_score):
        return 1
    return 0


@contextmanager
def progress_bar(enabled: bool) -> Iterator[Any]:
    """A progress bar on stderr at a terminal: cells done, errors, tokens, running score."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("eval"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task("eval", total=None, status="")

    def update(progress: EvalProgress) -> None:
        status = (
            f"errors {progress.errors}  tokens {progress.tokens:,}  score {progress.mean_score:.3f}"
        )
        bar.update(task, completed=progress.done, total=progress.total, status=status)

    with bar:
        yield update
