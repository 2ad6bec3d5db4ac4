"""Does learning pay on a real model? The optimizer and learned lessons on the local
SmolLM2-135M (`make local-model`), scored on held-out cases.

Two tasks whose datasets ship under benchmarks/data/ (60 cases each, written for this
benchmark): sorting support tickets into billing, bug or other (benchmarks/payoff/triage.as)
and finding the order number in a customer's message (benchmarks/payoff/orders.as, two steps).
For each task, with the cases split once (60 % train, seed 0):

- optimized: `agentscript optimize` (its own code: proposals from the local model, worked
  examples, the `use one of` picks; trials on the training cases, the held-out gate); the
  held-out difference between the winner and the baseline with its paired bootstrap interval
  (0 when no trial beat the baseline on the training cases: the program stays as it was);
- lessons: `eval --learn` on the training cases then the held-out ones, in that order, each
  run learning into a fresh memory and recalling through Memory.experiences; the held-out
  difference between learning on and off;
- cost: the plan's bound (before proposals, and once they are known) against the calls spent;
- effects: tool calls that changed something during trials (reads run, the rest only reports);
- cache (orders): the program edited at its optimized site, then optimized again with the same
  --out: the share of model asks answered from the answer cache.

Targets (issue 22): the optimizer gains ≥ 10 points held out on at least one task; lessons lose
no more than 2 points on either; the estimate within 5 % of the calls spent; a cache hit rate
≥ 50 % when one site changes; 0 effectful tool calls in trials. Prints a table, never asserts.

    python benchmarks/payoff.py [--url http://127.0.0.1:PORT/v1] [--tasks tickets,orders]
        [--instructions 3] [--demos 3] [--concurrency 2] [--json]

Without --url it starts the local server itself. About 15 minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts")]

import agentscript  # noqa: E402
import local_model  # noqa: E402
import private_memory  # noqa: E402, F401  (the user's memory stays out of reach)
from agentscript.app.evals.cases import Case, load_cases  # noqa: E402
from agentscript.app.evals.runner import EvalConfig, evaluate  # noqa: E402
from agentscript.app.evals.stats import PairedDifference, paired_difference  # noqa: E402
from agentscript.app.optimize.runner import (  # noqa: E402
    OptimizeConfig,
    OptimizeReport,
    optimize,
    split_cases,
)
from agentscript.learn.journal import Journal  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
PROGRAMS = ROOT / "benchmarks" / "payoff"
REQUEST_TIMEOUT_MS = "600000"
SPLIT, SEED = 0.6, 0


@dataclass(frozen=True)
class Task:
    name: str
    program: Path
    data: Path
    field: str
    # For the cache measure: the optimized site's instruction, and an edit of it.
    edit: tuple[str, str] | None = None


TASKS = {
    "tickets": Task("tickets", PROGRAMS / "triage.as", DATA / "payoff_tickets.jsonl", "label"),
    "orders": Task(
        "orders",
        PROGRAMS / "orders.as",
        DATA / "payoff_orders.jsonl",
        "order",
        ('"Give the order number."', '"Give the order number, exactly as written."'),
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="A running llama-server's base URL (…/v1).")
    parser.add_argument("--tasks", default="tickets,orders")
    parser.add_argument("--instructions", type=int, default=3)
    parser.add_argument("--demos", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with ExitStack() as stack:
        url = args.url or stack.enter_context(local_model.serve())
        environ = {**os.environ, "OPENAI_BASE_URL": url}
        environ["AGENTSCRIPT_LLM_TIMEOUT_MS"] = REQUEST_TIMEOUT_MS
        environ.pop("OPENAI_API_KEY", None)
        results = [measure(TASKS[name], environ, args) for name in args.tasks.split(",")]
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_table(results)


def measure(task: Task, environ: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"payoff-{task.name}-") as scratch:
        folder = Path(scratch)
        workspace = folder / "workspace"
        workspace.mkdir()
        (workspace / ".git").mkdir()  # the workspace root: journals stay inside it
        program_path = workspace / task.program.name
        shutil.copy(task.program, program_path)
        out = folder / "out"
        config = OptimizeConfig(
            split=SPLIT,
            seed=SEED,
            instructions=args.instructions,
            demos=args.demos,
            field=task.field,
            concurrency=args.concurrency,
            workspace=workspace,
            journal_path=folder / "trials.db",
            environ=environ,
            out=out,
        )
        report = optimize(agentscript.load(program_path), task.data, "exact", config)
        result: dict[str, Any] = {
            "task": task.name,
            "optimized": optimized_gain(report),
            "accepted": report.accepted,
            "winner": report.winner,
            "reason": report.reason,
            "calls": report.to_json()["calls"],
            "trials": report.to_json()["trials"],
            "proposals": report.prompts,
            "trial_effects": effectful_calls(folder / "trials.db"),
        }
        cases = load_cases(task.data)
        train, held_out = split_cases(cases, SPLIT, SEED)
        result["lessons"], result["baseline_held_out"] = lessons_gain(
            program_path, train, held_out, task, environ, folder, args.concurrency
        )
        if task.edit is not None:
            result["cache"] = cache_after_edit(program_path, task, config)
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


def optimized_gain(report: OptimizeReport) -> dict[str, Any]:
    """The winner's held-out difference over the baseline; 0 over no case when the training
    cases chose the baseline (nothing changes)."""
    if report.held_out is None:
        return {"mean": 0.0, "low": None, "high": None, "n": 0}
    return report.held_out.to_json()


def lessons_gain(
    program: Path,
    train: list[Case],
    held_out: list[Case],
    task: Task,
    environ: dict[str, str],
    folder: Path,
    concurrency: int,
) -> tuple[dict[str, Any], float]:
    """Learning on against off, on the held-out cases (which learning on reaches after every
    training case); and the baseline's held-out mean (learning off)."""
    report = evaluate(
        program,
        [*train, *held_out],
        EvalConfig(
            learn=True,
            field=task.field,
            memory_db=folder / "memory.db",
            workspace=program.parent,
            journal_path=folder / "lessons.db",
            environ=environ,
            concurrency=concurrency,
        ),
        "exact",
    )
    held = {case.id for case in held_out}
    scores: dict[str, dict[str, float]] = {}
    for row in report.rows:
        if row.id in held:
            scores.setdefault(row.learning or "off", {})[row.id] = row.score
    off, on = scores.get("off", {}), scores.get("on", {})
    difference: PairedDifference = paired_difference("learning=on", "learning=off", on, off)
    baseline = sum(off.values()) / len(off) if off else float("nan")
    return difference.to_json(), baseline


def cache_after_edit(program: Path, task: Task, config: OptimizeConfig) -> dict[str, Any] | None:
    """Edit the optimized site, optimize again with the same --out: the answer cache's hits."""
    assert task.edit is not None
    before, after = task.edit
    text = program.read_text(encoding="utf-8")
    program.write_text(text.replace(before, after), encoding="utf-8")
    report = optimize(agentscript.load(program), task.data, "exact", config)
    return report.to_json()["cache"]


def effectful_calls(journal_path: Path) -> dict[str, int]:
    """Tool calls in the trial runs: how many ran, how many only reported (a call that would
    have changed something) and how many changed something."""
    journal = Journal.open(journal_path)
    counts = {"tool_calls": 0, "simulated": 0, "effects": 0}
    try:
        for run in journal.store.runs():
            for entry in journal.store.entries(run.run_id):
                data = entry.data if isinstance(entry.data, dict) else {}
                if entry.kind != "tool":
                    continue
                counts["tool_calls"] += 1
                result = data.get("result")
                if isinstance(result, dict) and result.get("dryRun"):
                    counts["simulated"] += 1
                if data.get("effects"):
                    counts["effects"] += 1
    finally:
        journal.close()
    return counts


def points(difference: dict[str, Any]) -> str:
    mean, low, high = difference.get("mean"), difference.get("low"), difference.get("high")
    if mean is None:
        return "n/a"
    interval = f" [{low * 100:+.1f}, {high * 100:+.1f}]" if low is not None else ""
    return f"{mean * 100:+.1f}{interval}"


def print_table(results: list[dict[str, Any]]) -> None:
    print(f"cpu cores {os.cpu_count()}, load {os.getloadavg()[0]:.2f}")
    header = (
        f"{'task':8} {'baseline':>8} {'optimized Δ pts [95% CI]':>26} {'lessons Δ pts [95% CI]':>24}"
        f" {'calls est/after/spent':>22} {'cache hit':>9} {'effects':>7} {'seconds':>7}"
    )
    print(header)
    for r in results:
        calls = r["calls"]
        cache = r.get("cache") or {}
        hit = cache.get("hit_rate")
        print(
            f"{r['task']:8} {r['baseline_held_out']:8.3f} {points(r['optimized']):>26} "
            f"{points(r['lessons']):>24} "
            f"{calls['estimated_max']:>6}/{calls['estimated_after_proposals'] or '-'}/"
            f"{calls['spent']:<6}".rjust(22)
            + f" {'-' if hit is None else f'{hit:.2f}':>9} {r['trial_effects']['effects']:>7}"
            f" {r['seconds']:>7}"
        )
    for r in results:
        print(f"{r['task']}: {'accepted' if r['accepted'] else 'kept'} ({r['reason']})")
        for site, found in r["proposals"].items():
            proposed = found.get("proposed")
            if proposed is not None:
                print(
                    f"  {site}: {len(proposed)} proposed instructions {json.dumps(proposed)[:300]}"
                )


if __name__ == "__main__":
    main()
