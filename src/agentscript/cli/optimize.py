"""`agentscript optimize PROGRAM --data CASES.jsonl --out DIR …`: search the program's declared
choices, keep the winner only when held-out cases show it better.

Parses the options, makes one call to `agentscript.app.optimize` and renders what it did.
Exit codes: 0 when the optimization ran (accepted or not: the report says which), 1 when it
stopped at a budget before the end, 2 when it could not start, 130 on Ctrl-C (the trials are
in --out: the same command resumes).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from agentscript.cli.errors import REPORTED_ERRORS, error_lines
from agentscript.cli.eval import EvalUsageError, progress_bar
from agentscript.cli.options import approve_option, case_options, mock_option

if TYPE_CHECKING:
    from agentscript.app.optimize.runner import OptimizeReport, Plan

USAGE_EXIT = 2


@click.command(name="optimize")
@click.argument("program")
@case_options
@click.option("--model", "models", multiple=True, metavar="URI", help="A model to choose among.")
@click.option(
    "--split",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.6,
    show_default=True,
    help="Share of the cases to train on; the rest is held out.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the split.")
@click.option(
    "--strategy",
    type=click.Choice(["auto", "grid", "search"]),
    default="auto",
    show_default=True,
    help="grid: every combination; search: one choice at a time; auto: grid when small.",
)
@click.option("--max-calls", type=click.IntRange(min=1), help="Model-call budget of the whole run.")
@click.option("--max-tokens", type=click.IntRange(min=1), help="Token budget of the whole run.")
@click.option(
    "--max-seconds",
    type=click.FloatRange(min=0, min_open=True),
    help="Time limit of the whole run.",
)
@click.option(
    "--min-improvement",
    type=click.FloatRange(min=0),
    default=0.03,
    show_default=True,
    help="The held-out gain a winner needs, beyond an interval above 0.",
)
@click.option(
    "--instructions",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Instructions to propose for each generate written with a literal one (0: none).",
)
@click.option(
    "--demos",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Passing training cases shown as worked examples before each such generate (0: none).",
)
@click.option("--proposer", metavar="URI", help="The model that proposes instructions.")
@click.option(
    "--allow-effects",
    is_flag=True,
    help="Run tools for real in trials (one cell at a time); undo each run's file effects.",
)
@approve_option(
    "With --allow-effects: approve or refuse every call that needs approval.",
    choices=("auto", "deny"),
)
@mock_option("Answer with the mock model: shape defaults, or scripted answers from FILE.")
@click.option("--concurrency", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "--dry-run", is_flag=True, help="Print the plan and its most model calls; spend nothing."
)
@click.option("--out", metavar="DIR", help="Trials, report and the optimized source (resumes).")
@click.option("--apply", "apply_changes", is_flag=True, help="Write an accepted winner in place.")
@click.option("--json", "as_json", is_flag=True, help="Print the report (or plan) as JSON.")
@click.option("--workspace", metavar="DIR", help="Journal folder (default: the program's).")
@click.pass_context
def optimize_command(ctx: click.Context, /, program: str, **options: Any) -> None:
    """Search PROGRAM's `use one of` picks, proposed instructions, worked examples and
    --model choices on --data's training cases; keep the winner only if the held-out cases
    show it better. See docs/optimize.md."""
    if not options["dry_run"] and not options["out"]:
        raise EvalUsageError("--out DIR is needed (the trials are kept there; it resumes)")
    ctx.exit(_optimize(program, options))


def _optimize(program_path: str, options: dict[str, Any]) -> int:
    import agentscript
    from agentscript.app.evals.cases import load_cases
    from agentscript.app.optimize.runner import (
        OptimizeConfig,
        apply,
        optimize,
        plan_optimization,
    )

    responses = options["responses"]
    config = OptimizeConfig(
        models=list(options["models"]),
        split=options["split"],
        seed=options["seed"],
        strategy=options["strategy"],
        max_calls=options["max_calls"],
        max_tokens=options["max_tokens"],
        max_seconds=options["max_seconds"],
        min_improvement=options["min_improvement"],
        instructions=options["instructions"],
        demos=options["demos"],
        proposer=options["proposer"],
        allow_effects=options["allow_effects"],
        approve=options["approve"],
        field=options["field"],
        tolerance=options["tolerance"],
        mock=(responses or True) if responses is not None else False,
        concurrency=options["concurrency"],
        workspace=options["workspace"],
        out=options["out"],
    )
    try:
        program = agentscript.load(program_path)
        if options["dry_run"]:
            plan = plan_optimization(
                program, load_cases(options["data"]), options["metric"], config
            )
            _print_plan(plan, options["as_json"])
            return 0
        with progress_bar(enabled=not options["as_json"]) as on_progress:
            if on_progress is not None:
                config.on_progress = lambda stage, progress: on_progress(progress)
            report = optimize(program, options["data"], options["metric"], config)
        written = apply(report) if options["apply_changes"] else []
    except KeyboardInterrupt:
        print(
            f"Interrupted; the finished trials are in {options['out']} "
            "(run the same command to resume)",
            file=sys.stderr,
        )
        return 130
    except REPORTED_ERRORS as error:
        for line in error_lines(error):
            print(line, file=sys.stderr)
        return USAGE_EXIT
    _print_report(report, Path(options["out"]), written, options["as_json"])
    return 1 if report.stopped else 0


def _print_plan(plan: Plan, as_json: bool) -> None:
    if as_json:
        from agentscript.cli.render import to_json

        print(to_json(plan.to_json()))
        return
    print(f"strategy {plan.strategy}: {plan.trials} trials")
    for choice in plan.space.choices:
        if choice.kind == "instruction":
            proposed = len(choice.candidates) - 1
            print(f"  {choice.label}: as written, or one of {proposed} proposed")
        else:
            print(f"  {choice.label}: {', '.join(choice.candidates)} (now {choice.current})")
    models = [model or "(the program's)" for model in plan.space.models]
    print(f"  model: {', '.join(models)}")
    print(f"cases: {len(plan.train)} to train on, {len(plan.held_out)} held out")
    judge = f" + {plan.judge_calls_per_run} (judge)" if plan.judge_calls_per_run else ""
    proposing = (
        f" + {plan.proposal_runs} proposals × {plan.proposer_calls} calls"
        if plan.proposal_runs
        else ""
    )
    print(
        f"at most {plan.max_calls:,} model calls: {plan.runs:,} runs × "
        f"{plan.calls_per_run}{judge} calls per run{proposing}"
    )


def _print_report(report: OptimizeReport, out: Path, written: list[Path], as_json: bool) -> None:
    if as_json:
        from agentscript.cli.render import to_json

        print(to_json(report.to_json()))
        return
    for trial in sorted(report.trials, key=lambda t: -t.mean):
        mark = " (baseline)" if trial.label == report.baseline else ""
        print(f"{trial.mean:.3f}  {trial.label}{mark}")
    verdict = "accepted" if report.accepted else "kept the program as it was"
    print(f"winner: {report.winner}: {verdict}: {report.reason}")
    print(
        f"model calls: {report.spent_calls:,} of at most {report.plan.max_calls:,} "
        f"estimated; tokens {report.spent_tokens:,}"
    )
    if report.accepted:
        print(f"optimized source in {out / 'optimized'}, diff in {out / 'optimized.diff'}")
    for path in written:
        print(f"applied: {path}")
    print(f"report: {out / 'report.json'}")
