"""What an eval costs on top of the runs it makes, and how it scales with --concurrency.

1. Overhead per case: the same cases run as bare `agentscript.run` calls one after another and
   as `agentscript.evaluate(concurrency=1)`, both journaled, against an in-process model that
   takes `--model-ms` (5 ms) per answer. Target: the eval adds at most 5 % per case.
2. Throughput: `--cases` cells against a local OpenAI-wire server on 127.0.0.1 answering after
   `--latency-ms` (50 ms), at concurrency 1, 8 and 32; the speed-up over concurrency 1 against
   the ideal N×. Target: within 10 % of ideal (efficiency ≥ 90 %) up to 32.

Prints one table; never asserts on timings. The machine is shared (2 cores, several sessions):
figures are noisy, run it twice.

    .venv/bin/python benchmarks/evals.py [--runs 200] [--model-ms 5] [--cases 64] [--latency-ms 50]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import agentscript
import private_memory  # noqa: F401  (the user's memory stays out of reach)
from agentscript.learn.journal import wait_for_journal
from agentscript.runtime.ports import GenerateRequest, GenerateResponse

SERVER = Path(__file__).resolve().parents[1] / "tests" / "support" / "openai_wire.py"

PROGRAM = """
import llm Model from "openai://bench"

main agent Triage {
    model Model
    role "support triage"
    description "Labels tickets."
    main func(input { ticket: string }) {
        use input.ticket as "ticket"
        generate({ input: "Label the ticket." }) -> { label: string }
    }
}
"""


class SlowModel:
    """Answers every generate after `seconds`, like a very fast model."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        time.sleep(self.seconds)
        return GenerateResponse(value={"label": "bug"}, raw_text='{"label": "bug"}')


def cases(count: int) -> list[dict[str, Any]]:
    return [
        {"id": f"c{i}", "input": {"ticket": f"ticket {i}"}, "expected": "bug"} for i in range(count)
    ]


def overhead(folder: Path, runs: int, model_ms: float) -> dict[str, float]:
    """Wall and CPU seconds per case of bare runs and of the eval: the best of five rounds,
    alternating. The wall time stops when the last run returns; the CPU time also counts the
    journal's background work for the round, which both sides do alike."""
    program = agentscript.load(folder / "triage.as")
    model = SlowModel(model_ms / 1000)
    items = cases(runs)

    def bare() -> None:
        # Like the eval's cells (outside a learning arm): no run memory, so both sides do the
        # same work but for the eval's own.
        for item in items:
            agentscript.run(
                program,
                item["input"],
                agentscript.RunConfig(
                    model=model, journal_path=folder / "bare.db", learn=False, run_memory=False
                ),
            )

    def evaluated() -> None:
        agentscript.evaluate(
            program,
            items,
            agentscript.EvalConfig(llm=model, journal_path=folder / "eval.db", field="label"),
        )

    figures: dict[str, list[float]] = {}
    for _ in range(5):
        for name, action in (("bare", bare), ("eval", evaluated)):
            started, cpu_started = time.perf_counter(), time.process_time()
            action()
            wall = time.perf_counter() - started
            wait_for_journal()
            cpu = time.process_time() - cpu_started
            figures.setdefault(f"{name} wall", []).append(wall / runs)
            figures.setdefault(f"{name} cpu", []).append(cpu / runs)
    return {name: min(values) for name, values in figures.items()}


def throughput(folder: Path, count: int, latency_ms: float) -> list[tuple[int, float, float]]:
    """(concurrency, wall seconds, CPU seconds of this process) per concurrency, medians."""
    program = agentscript.load(folder / "triage.as")
    items = cases(count)
    timings: list[tuple[int, float, float]] = []
    # The server runs in a process of its own, so it does not compete for this one's GIL.
    server = subprocess.Popen(
        [sys.executable, str(SERVER), "--latency-ms", str(latency_ms)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None and server.stdin is not None
    environ = {"OPENAI_BASE_URL": server.stdout.readline().strip(), "OPENAI_API_KEY": "sk-local"}
    try:
        for concurrency in (1, 8, 32):
            rounds = []
            cpu = []
            for _ in range(3):
                started = time.perf_counter()
                cpu_started = time.process_time()
                agentscript.evaluate(
                    program,
                    items,
                    agentscript.EvalConfig(
                        environ=environ,
                        concurrency=concurrency,
                        journal_path=folder / f"c{concurrency}.db",
                        field="label",
                    ),
                )
                rounds.append(time.perf_counter() - started)
                wait_for_journal()
                cpu.append(time.process_time() - cpu_started)
            timings.append((concurrency, statistics.median(rounds), statistics.median(cpu)))
    finally:
        server.stdin.close()
        server.wait(timeout=10)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--model-ms", type=float, default=5.0)
    parser.add_argument("--cases", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        (folder / "triage.as").write_text(PROGRAM, encoding="utf-8")
        costs = overhead(folder, options.runs, options.model_ms)
        timings = throughput(folder, options.cases, options.latency_ms)
    print(f"{'measure':<44} {'value':>12} {'target':>12}")
    model = f"{options.model_ms:g} ms model"
    for side in ("bare", "eval"):
        label = "bare runs" if side == "bare" else "eval, concurrency 1"
        print(
            f"{label + ' per case (' + model + ')':<44} {costs[side + ' wall'] * 1000:>10.2f}ms"
            f"   CPU {costs[side + ' cpu'] * 1000:.2f}ms"
        )
    added = costs["eval wall"] / costs["bare wall"] - 1
    added_cpu = costs["eval cpu"] / costs["bare cpu"] - 1
    print(f"{'eval overhead per case (wall)':<44} {added:>11.1%} {'≤ 5%':>12}")
    print(f"{'eval overhead per case (CPU)':<44} {added_cpu:>11.1%}")
    base = timings[0][1]
    cpu_per_cell = statistics.median(cpu for _, _, cpu in timings) / options.cases
    print(f"{'CPU per cell (runs, journal; all threads)':<44} {cpu_per_cell * 1000:>10.2f}ms")
    # One process runs Python on one core at a time: the speed-up cannot pass this.
    ceiling = base / options.cases / cpu_per_cell
    print(f"{'  speed-up ceiling (cell time / CPU per cell)':<44} {ceiling:>11.1f}×")
    for concurrency, seconds, _ in timings:
        speedup = base / seconds
        label = (
            f"{options.cases} cells at concurrency {concurrency} ({options.latency_ms:g} ms model)"
        )
        print(f"{label:<44} {seconds:>11.2f}s")
        if concurrency > 1:
            print(
                f"{'  speed-up / ideal ' + str(concurrency) + '×':<44} "
                f"{speedup:>6.1f}× {speedup / concurrency:>5.0%} {'≥ 90%':>12}"
            )


if __name__ == "__main__":
    main()
