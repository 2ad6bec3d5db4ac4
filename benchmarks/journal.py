"""How much the run journal costs: events journaled per second, task graph build time per 1,000
events, query latency over a journal of 100,000 events, and the wall time journaling adds to a
mock run (target: at most 5%).

The overhead is measured on one program run again and again in this process, alternating runs
with the journal off and on (the events during the run; the model is a provider object, so the
end, the task graph, the execution trace, the run memory and the experiences are written in
the background after it, not queued). It is given twice: with the mock model answering
instantly (a run that does nothing but interpret, the worst case) and with the mock model taking
`--model-ms` per answer (still far faster than any real model). Prints one table and never
asserts on timings: figures depend on the machine, above all on its disk.

    .venv/bin/python benchmarks/journal.py [--events 20000] [--total 100000] [--runs 200]
        [--model-ms 5] [--queries 50] [--processes 20]

The last rows time whole processes, paired: `agentscript run examples/hello.as --mock`
journaled and learning against `--no-journal --no-learn` (target 1.15x, goal 1.05x), and
`agentscript check` against `python -c "import agentscript.lang"` (target 1.5x), then check
that every run queued for learning on its way out is learned from afterwards.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import agentscript
import private_memory  # noqa: F401  (the user's memory stays out of reach)
from agentscript.learn.graph import NodeType, build_run_graph
from agentscript.learn.journal import (
    Journal,
    list_runs,
    replay_run,
    run_trace,
    show_run,
    wait_for_journal,
)
from agentscript.providers.llm.mock import ScriptedLlm
from agentscript.runtime.ports import GenerateRequest, GenerateResponse
from agentscript.runtime.trace import TraceEvent

TARGET_OVERHEAD_PERCENT = 5.0

# The mock run: nested agent calls, reads, an approved write and shaped generates.
PROGRAM = """import llm Model from "openai://gpt-4.1-mini"
import tool File from "file://workspace"
import tool Search from "sh://grep"

main agent Lead {
  model Model
  role "lead"
  description "Plans and delegates."
  main func(input { topic string }) {
    use input.topic
    notes = []
    for step in [1, 2, 3, 4, 5] < 5 {
      idea = generate({ input: "next idea" }) -> { text string }
      found = Search.run({ path: "docs", pattern: "tide", max: 5 })
      notes.add(Worker.check(idea.text))
    }
    File.write({ path: "out/report.md", content: "tides" })
    return { notes: notes.length }
  }
}

agent Worker {
  model Model
  role "checker"
  description "Checks one idea."
  func check(text) {
    use text
    return generate({ input: "check" }) -> { ok boolean }
  }
  main func() { return 1 }
}
"""
ANSWERS = {"Lead": [{"text": "idea"}] * 5, "Worker": [{"ok": True}] * 5}


class SlowLlm:
    """The scripted mock with a fixed delay per answer, standing in for a (very fast) model."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.inner = ScriptedLlm(json.loads(json.dumps(ANSWERS)))

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        if self.seconds:
            time.sleep(self.seconds)
        return self.inner.generate(request)


@dataclass(slots=True)
class Row:
    name: str
    value: str
    note: str = ""


def synthetic_events(count: int, run: int = 0) -> list[TraceEvent]:
    """A realistic mix in the proportions of the mock run: generates with their context, tool
    calls with arguments, results and effects, approvals, uses and loop steps."""
    events: list[TraceEvent] = []
    for number in range(1, count + 1):
        kind = ("generate", "tool", "approval", "use", "for")[number % 5]
        data: dict[str, Any]
        if kind == "generate":
            data = {
                "instruction": "next idea",
                "attempts": 1,
                "context": {"system": "You are a lead. " * 20, "context": [{"text": "x" * 300}]},
                "result": {"text": f"idea {number}"},
            }
        elif kind == "tool":
            path = f"docs/file-{(number + run) % 50}.md"
            data = {
                "tool": "File" if number % 2 else "Search",
                "method": "write" if number % 2 else "run",
                "scheme": "file" if number % 2 else "sh",
                "uri": "file://workspace" if number % 2 else "sh://grep",
                "args": [{"path": path, "content": "tides " * 20}],
                "result": {"ok": True, "effects": []},
                "effects": [],
            }
        elif kind == "approval":
            data = {
                "approval_id": f"approval-{number}",
                "tool": "File",
                "method": "write",
                "uri": "file://workspace",
                "risk": "effect",
                "decision": "pending" if number % 2 else "approved",
                "mode": "auto",
            }
        elif kind == "use":
            data = {"source": "input.topic", "budget": None}
        else:
            data = {"item": "step", "index": number, "value": number}
        events.append(TraceEvent(kind, data, id=number, parent=None, depth=0))
    return events


def journal_events(journal: Journal, events: list[TraceEvent]) -> float:
    """Seconds from start_run until every event is on disk (the flush after the last one);
    the run is then finished, which adds it to the task graph."""
    sink = journal.sink()
    started = time.perf_counter()
    sink.start_run("bench.as", {"topic": "tides"})
    for event in events:
        sink.event(event)
    sink.flush()
    elapsed = time.perf_counter() - started
    sink.finish_run("ok", value={"ok": True})
    if sink.wait():
        raise SystemExit(f"journal failed: {sink.problems}")
    return elapsed


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def latency(run: Callable[[], object], samples: int) -> tuple[float, float]:
    durations: list[float] = []
    for _ in range(samples):
        start = time.perf_counter()
        run()
        durations.append((time.perf_counter() - start) * 1000)
    return percentile(durations, 0.5), percentile(durations, 0.95)


def measure_throughput(root: Path, count: int) -> list[Row]:
    journal = Journal.open(root / "throughput.db")
    events = synthetic_events(count)
    seconds = journal_events(journal, events)
    run = journal.store.runs(1)[0]
    entries = journal.store.entries(run.run_id)
    started = time.perf_counter()
    build_run_graph(run, entries, "ok")
    built = time.perf_counter() - started
    fresh = Journal.open(root / "graph-only.db")
    fresh.store.save(run, entries[:1], new=True)
    started = time.perf_counter()
    fresh.graph.ingest(run, entries, "ok")
    ingested = time.perf_counter() - started
    journal.close()
    fresh.close()
    per_thousand = 1000 / count
    return [
        Row("events journaled per second", f"{count / seconds:,.0f}", f"{count:,} events"),
        Row("graph build per 1,000 events", f"{built * per_thousand * 1000:.1f} ms", "in memory"),
        Row(
            "graph build + store per 1,000 events",
            f"{ingested * per_thousand * 1000:.1f} ms",
            "SQLite, one transaction per step",
        ),
    ]


def measure_queries(root: Path, total: int, samples: int) -> list[Row]:
    journal = Journal.open(root / "queries.db")
    per_run = 1000
    for run in range(total // per_run):
        journal_events(journal, synthetic_events(per_run, run))
    views = list_runs(journal, limit=None)
    middle = views[len(views) // 2].run.run_id
    graph = journal.graph
    chain = graph.tool_chain(middle)
    node = chain[len(chain) // 2].node_id
    rows = []
    events = sum(view.run.events for view in views)
    for name, query in (
        ("runs list (20 newest)", lambda: list_runs(journal)),
        ("runs show (1,000 entries)", lambda: show_run(journal, middle)),
        ("runs replay (1,000 events)", lambda: replay_run(journal, middle)),
        ("runs trace (stored)", lambda: run_trace(journal, middle)),
        ("nodes by type in a run", lambda: graph.nodes(NodeType.TOOL_CALL, middle)),
        ("neighbours of a tool call", lambda: graph.neighbours(node)),
        ("tool chain of a run", lambda: graph.tool_chain(middle)),
        ("runs that touched a file", lambda: graph.runs_touching("docs/file-7.md")),
    ):
        p50, p95 = latency(query, samples)
        rows.append(
            Row(f"query: {name}", f"{p50:.2f} / {p95:.2f} ms", f"p50 / p95, {events:,} events")
        )
    journal.close()
    return rows


def measure_overhead(root: Path, runs: int, model_seconds: float) -> list[Row]:
    workspace = root / f"overhead-{model_seconds}"
    (workspace / "docs").mkdir(parents=True)
    (workspace / "docs" / "tides.md").write_text("tide tables\n" * 20, encoding="utf-8")
    path = workspace / "bench.as"
    path.write_text(PROGRAM, encoding="utf-8")
    program = agentscript.load_source(PROGRAM, path=path)

    learning: list[float] = []

    def once(journaled: bool) -> float:
        """One run as `agentscript.run` does it: journaled (events, then the end, the task
        graph, the execution trace, the run memory and experiences) or not at all."""
        config = agentscript.RunConfig(
            model=SlowLlm(model_seconds),
            approve="auto",
            workspace=workspace,
            journal=journaled,
            journal_path=root / f"overhead-{model_seconds}.db",
            memory_db=root / f"overhead-{model_seconds}-memory.db",
        )
        started = time.perf_counter()
        result = agentscript.run(program, {"topic": "tides"}, config)
        elapsed = time.perf_counter() - started
        if result.journal is not None:
            # What happens after the run (end written, graph, trace, run memory, experiences)
            # runs in the background; wait for it outside the measured time, so it never
            # slows the next run down.
            problems = result.journal.wait(60)
            if problems:
                raise SystemExit(f"journal failed: {problems}")
            learning.append(time.perf_counter() - started - elapsed)
        return elapsed

    for _ in range(5):
        once(False)
        once(True)
    learning.clear()
    plain: list[float] = []
    journaled: list[float] = []
    for _ in range(runs):
        plain.append(once(False))
        journaled.append(once(True))
    base, with_journal = statistics.median(plain), statistics.median(journaled)
    overhead = (with_journal / base - 1) * 100
    verdict = "meets" if overhead <= TARGET_OVERHEAD_PERCENT else "misses"
    model = "instant model" if model_seconds == 0 else f"model {model_seconds * 1000:.0f} ms/answer"
    return [
        Row(
            f"journal overhead, {model}",
            f"{overhead:+.1f}%",
            f"median {base * 1000:.2f} -> {with_journal * 1000:.2f} ms over {runs} runs; "
            f"{verdict} the {TARGET_OVERHEAD_PERCENT:.0f}% target",
        ),
        Row(
            f"journal work after the run, {model}",
            f"{statistics.median(learning) * 1000:.2f} ms",
            "median: end, graph, trace, run memory and experiences, in the background",
        ),
    ]


# Whole processes: a journaled, learning `run --mock` against the same run with both off,
# and `check` against importing the language alone.
TARGET_RUN_RATIO = 1.15
GOAL_RUN_RATIO = 1.05
TARGET_CHECK_RATIO = 1.5
HELLO = Path(__file__).resolve().parent.parent / "examples" / "hello.as"


def measure_processes(root: Path, pairs: int) -> list[Row]:
    """What a user sees, as paired whole processes (each pair runs both sides back to back,
    in alternating order, so drift on a shared machine hits both): `agentscript run
    examples/hello.as --mock` journaled and learning against `--no-journal --no-learn`, and
    `agentscript check` against `python -c "import agentscript.lang"`. Then every run the
    journaled processes queued is learned from (`agentscript learn`), to show nothing was
    lost by not learning on the way out."""
    executable = Path(sys.executable).with_name("agentscript")
    if not executable.exists():
        return [Row("start and exit, agentscript run", "skipped", f"{executable} not found")]
    workspace = root / "processes"
    workspace.mkdir()
    (workspace / "hello.as").write_text(HELLO.read_text(encoding="utf-8"), encoding="utf-8")
    database = root / "processes-memory.db"
    environment = {**os.environ, "AGENTSCRIPT_MEMORY_DB": str(database)}
    # An installed package has its bytecode compiled; an editable checkout run with
    # PYTHONDONTWRITEBYTECODE would otherwise compile every module on every start.
    compileall.compile_dir(Path(agentscript.__file__).parent, quiet=1)
    run = [str(executable), "run", "hello.as", "--mock", "--input", '{"name": "Ada"}']
    commands = {
        # A mock run learns only when asked (offline answers teach nothing by default).
        "learning": [*run, "--learn"],
        "off": [*run, "--no-journal", "--no-learn"],
        "check": [str(executable), "check", "hello.as"],
        "lang": [sys.executable, "-c", "import agentscript.lang"],
    }

    def once(name: str) -> float:
        started = time.perf_counter()
        subprocess.run(
            commands[name], cwd=workspace, env=environment, check=True, capture_output=True
        )
        return time.perf_counter() - started

    samples: dict[str, list[float]] = {name: [] for name in commands}
    for index in range(pairs):
        for left, right in (("learning", "off"), ("check", "lang")):
            order = (left, right) if index % 2 == 0 else (right, left)
            for name in order:
                samples[name].append(once(name))
    learned = subprocess.run(
        [str(executable), "learn", "--json"],
        cwd=workspace,
        env=environment,
        check=True,
        capture_output=True,
        text=True,
    )
    report = json.loads(learned.stdout)
    rows = []
    for side, base, target, goal in (
        ("learning", "off", TARGET_RUN_RATIO, GOAL_RUN_RATIO),
        ("check", "lang", TARGET_CHECK_RATIO, None),
    ):
        measured, reference = statistics.median(samples[side]), statistics.median(samples[base])
        ratio = measured / reference
        verdict = "meets" if ratio <= target else "misses"
        aim = f" (goal {goal:.2f}x)" if goal is not None else ""
        rows.append(
            Row(
                f"{side} / {base}, whole processes",
                f"{ratio:.2f}x",
                f"target {target:.2f}x{aim}: {verdict}; median {measured * 1000:.0f} ms vs "
                f"{reference * 1000:.0f} ms over {pairs} pairs",
            )
        )
    rows.append(
        Row(
            "runs learned from after the processes",
            f"{len(report['learned'])}/{pairs}",
            f"queued at exit, learned by `agentscript learn`; {len(report['problems'])} problems",
        )
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--total", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--model-ms", type=float, default=5.0)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--processes", type=int, default=20)
    options = parser.parse_args()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        rows += measure_throughput(root, options.events)
        rows += measure_queries(root, options.total, options.queries)
        rows += measure_overhead(root, options.runs, 0.0)
        rows += measure_overhead(root, options.runs, options.model_ms / 1000)
        rows += measure_processes(root, options.processes)
        wait_for_journal()
    width = max(len(row.name) for row in rows)
    value_width = max(len(row.value) for row in rows)
    print(f"{'measure'.ljust(width)}  {'value'.ljust(value_width)}  note")
    for row in rows:
        print(f"{row.name.ljust(width)}  {row.value.ljust(value_width)}  {row.note}")


if __name__ == "__main__":
    main()
