"""`agentscript worker --queue URL` and `agentscript submit PROGRAM --queue URL`: runs on a
durable queue shared by any number of workers (agentscript.app.queue, on DBOS).

Exit codes of `submit`: 0 when the runs were queued (with `--wait`: when every one succeeded),
1 when a waited-for run failed, 2 when nothing could be queued, 130 on Ctrl-C (what was queued
stays queued, and is listed by `agentscript runs list --queue URL`).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from agentscript.cli.errors import REPORTED_ERRORS, error_lines
from agentscript.cli.options import json_option, run_budget_options, workspace_option

if TYPE_CHECKING:
    from agentscript.app.queue.limits import Limit

USAGE_EXIT = 2

_queue_option = click.option(
    "--queue", "url", required=True, metavar="URL", help="postgresql://… or sqlite:///PATH"
)


@click.command(name="worker")
@_queue_option
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True)
@click.option(
    "--prefetch",
    type=click.IntRange(min=0),
    metavar="N",
    help="Runs taken from the queue beyond those running, each waiting for a free slot "
    "[default: as many as --concurrency, at least 2; none under --queue-concurrency].",
)
@click.option(
    "--approve",
    type=click.Choice(["auto", "deny"]),
    default="deny",
    show_default=True,
    help="Calls that need approval (nobody is at a worker's terminal to ask).",
)
@click.option(
    "--rerun-unfinished",
    is_flag=True,
    help="Run again a call with effects that a dead worker's attempt started and never "
    "finished (by default the run fails saying so, as `runs resume` refuses it).",
)
@click.option(
    "--dead-after",
    type=click.FloatRange(min=1),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="Take over the runs of a worker not heard from for this long.",
)
@click.option(
    "--queue-concurrency",
    type=click.IntRange(min=1),
    metavar="N",
    help="Runs in progress at once over all workers of the queue.",
)
@click.option(
    "--requests",
    multiple=True,
    metavar="PROVIDER=N[/PERIOD]",
    help="Model requests per period (default: a minute) over all workers, e.g. openai=500/min.",
)
@click.option(
    "--tokens",
    multiple=True,
    metavar="PROVIDER=N[/PERIOD]",
    help="Model tokens per period over all workers, e.g. anthropic=400000/min.",
)
@click.option(
    "--model-concurrency",
    multiple=True,
    metavar="MODEL=N",
    help="Model calls in flight at once over all workers, per model URI or provider.",
)
@click.pass_context
def worker_command(ctx: click.Context, /, url: str, **options: Any) -> None:
    """Take queued runs and carry them out, CONCURRENCY at a time, until stopped (Ctrl-C or
    SIGTERM). A run a dead worker left is taken over from its journal. Limit options replace
    the limits every worker of the queue applies; without them, the stored ones hold."""
    from agentscript.app.queue.engine import PREFETCH_SAME, Worker

    try:
        worker = Worker(
            url,
            concurrency=options["concurrency"],
            prefetch=PREFETCH_SAME if options["prefetch"] is None else options["prefetch"],
            approve=options["approve"],
            rerun_unfinished=options["rerun_unfinished"],
            dead_after=options["dead_after"],
            limits=_limits(options),
            on_wait=_WaitNotice(),
        )
    except REPORTED_ERRORS as error:
        for line in error_lines(error):
            print(line, file=sys.stderr)
        ctx.exit(USAGE_EXIT)
    signal.signal(signal.SIGTERM, lambda *_: worker.stop())
    print(
        f"worker {worker.executor_id} on {url}, {options['concurrency']} at a time",
        file=sys.stderr,
    )
    try:
        worker.serve()
    except KeyboardInterrupt:
        pass
    except REPORTED_ERRORS as error:
        for line in error_lines(error):
            print(line, file=sys.stderr)
        ctx.exit(USAGE_EXIT)
    ctx.exit(0)


def _limits(options: dict[str, Any]) -> list[Limit] | None:
    """The limit options as limits, or None when none was given (the stored ones hold)."""
    from agentscript.app.queue.limits import (
        REQUESTS,
        TOKENS,
        parse_concurrency,
        parse_rate,
        runs_at_once,
    )

    limits = [parse_rate(REQUESTS, text) for text in options["requests"]]
    limits += [parse_rate(TOKENS, text) for text in options["tokens"]]
    limits += [parse_concurrency(text) for text in options["model_concurrency"]]
    if options["queue_concurrency"] is not None:
        limits.append(runs_at_once(options["queue_concurrency"]))
    return limits or None


class _WaitNotice:
    """Prints that model calls wait for a limit: once per limit every few seconds, not once
    per call."""

    EVERY_SECONDS = 5.0

    def __init__(self) -> None:
        self._shown: dict[str, float] = {}

    def __call__(self, provider: str, limit: Limit, seconds: float) -> None:
        import time

        now = time.monotonic()
        key = limit.describe()
        if now - self._shown.get(key, float("-inf")) < self.EVERY_SECONDS:
            return
        self._shown[key] = now
        print(f"waiting {seconds:.1f}s for the limit {key}", file=sys.stderr, flush=True)


@click.command(name="submit")
@click.argument("program")
@click.option("--input", "input_json", metavar="JSON", help="One run's input object.")
@click.option("--input-file", metavar="CASES.jsonl", help="One run per case (eval's format).")
@_queue_option
@click.option("--wait", is_flag=True, help="Wait for the runs to end and print each result.")
@json_option()
@workspace_option("The runs' workspace (default: the program's).")
@run_budget_options
@click.pass_context
def submit_command(ctx: click.Context, /, program: str, **options: Any) -> None:
    """Queue runs of PROGRAM (its text is pinned now: a run never mixes two versions), print
    their ids, and with --wait their results."""
    if (options["input_json"] is None) == (options["input_file"] is None):
        raise click.UsageError("Give either --input JSON or --input-file CASES.jsonl")
    ctx.exit(_submit(program, options))


def _submit(program: str, options: dict[str, Any]) -> int:
    from pathlib import Path

    from agentscript.app.evals.cases import load_cases
    from agentscript.app.queue.engine import QueueClient
    from agentscript.app.queue.jobs import pin

    try:
        if options["input_file"] is not None:
            inputs = [(case.id, case.input) for case in load_cases(options["input_file"])]
        else:
            inputs = [("", json.loads(options["input_json"]))]
        workspace = options["workspace"] or str(Path(program).resolve().parent)
        jobs = [
            pin(
                program,
                value,
                workspace=str(Path(workspace).resolve()),
                max_calls=options["max_calls"],
                max_tokens=options["max_tokens"],
                max_seconds=options["max_seconds"],
                label=label,
            )
            for label, value in inputs
        ]
        client = QueueClient(options["url"])
    except json.JSONDecodeError as error:
        print(f"--input is not JSON: {error}", file=sys.stderr)
        return USAGE_EXIT
    except REPORTED_ERRORS as error:
        for line in error_lines(error):
            print(line, file=sys.stderr)
        return USAGE_EXIT
    # Ctrl-C sets a flag the loops below look at, rather than raising inside the queue's
    # database calls (one interrupted there could leave a connection that never closes).
    interrupted = threading.Event()
    with _sigint_sets(interrupted):
        try:
            ids = client.submit(jobs, stop=interrupted.is_set)
            queued = list(zip(ids, jobs, strict=False))
            if interrupted.is_set() or not options["wait"]:
                _print(options["as_json"], [{"id": i, "label": j.label} for i, j in queued])
                return _interrupted(options["url"]) if interrupted.is_set() else 0
            failed = 0
            results: list[dict[str, Any]] = []
            for workflow_id, job in queued:
                outcome = client.wait(workflow_id, stop=interrupted.is_set)
                if outcome is None:
                    if options["as_json"]:
                        _print(True, results)
                    return _interrupted(options["url"])
                failed += not outcome.ok
                results.append({"id": workflow_id, "label": job.label, **outcome.to_json()})
                if not options["as_json"]:
                    shown = json.dumps(outcome.value) if outcome.ok else f"error: {outcome.error}"
                    print(f"{workflow_id} {job.label} {shown}".replace("  ", " "))
            if options["as_json"]:
                _print(True, results)
            return 1 if failed else 0
        finally:
            client.close()


@contextmanager
def _sigint_sets(flag: threading.Event) -> Iterator[None]:
    """While inside, Ctrl-C (SIGINT) sets `flag` instead of raising KeyboardInterrupt (only
    the main thread can take a signal; elsewhere Ctrl-C raises as usual)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda *_: flag.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupted(url: str) -> int:
    print(
        f"Interrupted; the queued runs stay queued (agentscript runs list --queue {url})",
        file=sys.stderr,
    )
    return 130


def _print(as_json: bool, rows: list[dict[str, Any]]) -> None:
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        print(f"{row['id']} {row['label']}".rstrip())
