"""How fast the language is: front end throughput, interpreter speed and command cold start.

Prints one table and never asserts on timings: figures depend on the machine, so they are for
comparing runs (before/after a change, or against CPython's own parser with `--peer`).

    .venv/bin/python benchmarks/language.py [--lines 20000] [--repeat 5] [--peer]
"""

from __future__ import annotations

import argparse
import ast as python_ast
import gc
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

import agentscript
import private_memory  # noqa: F401  (the user's memory stays out of reach)
from agentscript.lang.checker import check_program
from agentscript.lang.lexer import tokenize
from agentscript.lang.parser import parse_program

ROOT = Path(__file__).resolve().parents[1]
COLD_START_FILE = "examples/hello.as"
TARGET_LINES_PER_SECOND = 50_000
TARGET_COLD_START_MS = 150.0

# One unit of realistic program text in the style of examples/: imports, two agents with config,
# functions, shaped generates (0.1.0 and later forms), loops, ifs, budgets, comments, blank
# lines. `{n}` is replaced by the unit number so that every unit declares its own names.
AGENTSCRIPT_UNIT = """\
// Unit {n}: research one topic, then write a short report about it.
import llm Model{n} from "openai://gpt-4.1-mini"
import tool Search{n} from "mcp://tools/search"
import memory Notes{n} from "file://./.agentscript/notes-{n}.jsonl"

agent Analyst{n} {
    model Model{n}
    role "analyst {n}"
    description "Finds facts about a topic and rates how sure it is."

    main func(request) {
        use request.topic
        found = []
        done = false

        // Search until the model says it is done, at most three rounds.
        loop until done < 3 {
            use found.summary < 2k
            step = generate({ input: "Search again or finish?", attempts: 2 }) {
                return {
                    action string
                    query string
                }
            }
            if step.action == "finish" {
                done = true
            } else {
                hits = Search{n}.query({ q: step.query, limit: 5 })
                found.add({ query: step.query, hits: hits })
            }
        }

        past = Notes{n}.query({ kind: "note", text: request.topic, limit: 3 })
        use past < 1k
        return rate(found.length, request.topic)
    }

    func rate(count, topic) {
        use topic as "topic"
        score = count * 2 + 1
        if score > 5 {
            score = 5
        } else if score < 1 {
            score = 1
        }
        generate({ input: "Rate the evidence from 1 to 5.", max_output: 300, temperature: 0.2 }) -> {
            score: number
            reason
        }
    }
}

agent Writer{n} {
    model Model{n}
    role "writer {n}"
    description "Turns findings into a short report with one section per part."

    main func(request) {
        findings = Analyst{n}({ topic: request.topic })
        sections = []

        for part in request.parts max 4 {
            use part
            use findings.reason max 1k as findings
            text = generate({ input: "Write this section in two sentences." }) -> {
                title
                body
            }
            sections.add(text)
        }

        Notes{n}.add({ kind: "note", text: request.topic, score: findings.score })
        { sections: sections, count: sections.length }
    }
}

"""

AGENTSCRIPT_ENTRY = """\
main agent Bench {
    main func(input) {
        return Writer0({ topic: input.topic, parts: input.parts })
    }
}
"""

# The yardstick: Python code of the same flavour, one class per unit.
PYTHON_UNIT = '''\
# Unit {n}: research one topic, then write a short report about it.
import json
from dataclasses import dataclass, field


@dataclass
class Analyst{n}:
    """Finds facts about a topic and rates how sure it is."""

    model: str = "gpt-4.1-mini"
    role: str = "analyst {n}"
    found: list = field(default_factory=list)

    def run(self, request):
        done = False
        rounds = 0
        # Search until the model says it is done, at most three rounds.
        while not done and rounds < 3:
            step = self.generate({"input": "Search again or finish?", "attempts": 2})
            if step["action"] == "finish":
                done = True
            else:
                hits = search_{n}(q=step["query"], limit=5)
                self.found.append({"query": step["query"], "hits": hits})
            rounds += 1
        past = notes_{n}.query(kind="note", text=request["topic"], limit=3)
        return self.rate(len(self.found) + len(past), request["topic"])

    def rate(self, count, topic):
        score = count * 2 + 1
        if score > 5:
            score = 5
        elif score < 1:
            score = 1
        return self.generate({"input": "Rate the evidence.", "max_output": 300, "score": score})

    def generate(self, options):
        return json.loads(model_{n}.complete(self.model, self.role, options))


class Writer{n}:
    """Turns findings into a short report with one section per part."""

    def __init__(self, model="gpt-4.1-mini"):
        self.model = model
        self.sections = []

    def run(self, request):
        findings = Analyst{n}().run({"topic": request["topic"]})
        for part in request["parts"][:4]:
            text = model_{n}.complete(self.model, "writer {n}", {"part": part, "findings": findings})
            self.sections.append(text)
        notes_{n}.add({"kind": "note", "text": request["topic"], "score": findings["score"]})
        return {"sections": self.sections, "count": len(self.sections)}

'''

# The interpreter benchmark: nested loops over numbers, a function call on every other item,
# list helpers, and one shaped generate per batch, answered by the mock model.
LOOP_PROGRAM = """\
import llm Model from "openai://gpt-4.1-mini"

agent Bench {
    model Model
    role "bookkeeper"
    description "Comments on batches of numbers."

    main func(input) {
        total = 0
        evens = []
        notes = []
        for batch in input.batches < 1000000 {
            batch_total = 0
            even = true
            for n in batch < 1000000 {
                batch_total += n
                if even {
                    evens.add(n)
                } else {
                    scaled = weigh(n)
                }
                even = not even
            }
            total += batch_total
            use batch_total as "batch total"
            note = generate({ input: "Comment on the batch." }) -> { comment, high: boolean }
            notes.add(note.comment)
        }
        steps = 0
        loop until steps >= input.rounds max 1000000 {
            steps += 1
        }
        return { total: total, evens: evens.length, notes: notes.length, steps: steps }
    }

    func weigh(x) {
        return x * 3 + 1
    }
}
"""


def loop_program_statements(batches: int, batch_size: int, rounds: int) -> int:
    """Statements LOOP_PROGRAM executes; each executed statement counts once (a loop statement
    counts once, its body statements once per iteration). `batch_size` must be even."""
    items = batches * batch_size
    per_item = 3 + 1  # batch_total +=, if, even =; plus the branch statement
    per_call = 1  # the `return` inside weigh, on every other item
    per_batch = 3 + 4  # batch_total =, even =, inner for; total +=, use, note =, notes.add
    outside = 3 + 1 + 1 + 1 + 1  # total, evens, notes; for; steps =; loop; return
    return items * per_item + (items // 2) * per_call + batches * per_batch + outside + rounds


@dataclass(slots=True)
class Row:
    measurement: str
    figure: str
    target: str = ""
    note: str = ""


def generated_agentscript(min_lines: int) -> str:
    """A valid program of at least `min_lines` lines built from renamed copies of one unit."""
    parts: list[str] = []
    lines = AGENTSCRIPT_ENTRY.count("\n")
    unit = 0
    while lines < min_lines:
        text = AGENTSCRIPT_UNIT.replace("{n}", str(unit))
        parts.append(text)
        lines += text.count("\n")
        unit += 1
    parts.append(AGENTSCRIPT_ENTRY)
    return "".join(parts)


def generated_python(min_lines: int) -> str:
    parts: list[str] = []
    lines = 0
    unit = 0
    while lines < min_lines:
        text = PYTHON_UNIT.replace("{n}", str(unit))
        parts.append(text)
        lines += text.count("\n")
        unit += 1
    return "".join(parts)


def timed(action: Callable[[], object], repeat: int) -> list[float]:
    """Seconds per run of `action`, `repeat` times, after one warm-up run."""
    action()
    durations: list[float] = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        action()
        durations.append(time.perf_counter() - start)
    return durations


def per_second(count: int, durations: list[float], unit: str) -> str:
    """`count` per second at the median run, and at the best run in brackets."""
    median = statistics.median(durations)
    best = min(durations)
    return f"{count / median:,.0f} {unit}/s (best {count / best:,.0f})"


def front_end_rows(lines: int, repeat: int) -> tuple[list[Row], float]:
    """The front-end rows, and the lines per second of lex + parse + check (median run)."""
    source = generated_agentscript(lines)
    line_count = source.count("\n")
    tokens = len(tokenize(source)) - 1  # without EOF
    diagnostics = check_program(parse_program(source, "bench.as"))
    if diagnostics:
        raise SystemExit(f"the generated program is invalid: {diagnostics[0].format()}")
    lex = timed(lambda: tokenize(source), repeat)
    parse = timed(lambda: parse_program(source, "bench.as"), repeat)
    full = timed(lambda: check_program(parse_program(source, "bench.as")), repeat)
    target = f">= {TARGET_LINES_PER_SECOND:,} lines/s"
    checked_rate = line_count / statistics.median(full)
    rows = [
        Row("program size", f"{line_count:,} lines, {tokens:,} tokens"),
        Row("tokens per line", f"{tokens / line_count:.2f}"),
        Row("lex", per_second(line_count, lex, "lines")),
        Row("lex + parse", per_second(line_count, parse, "lines")),
        Row(
            "lex + parse + check",
            per_second(line_count, full, "lines"),
            target,
            _verdict(checked_rate >= TARGET_LINES_PER_SECOND),
        ),
    ]
    return rows, checked_rate


def peer_rows(lines: int, repeat: int, checked_rate: float) -> list[Row]:
    """CPython parsing and compiling Python of the same size: a yardstick, not a target. The
    ratio row compares both in the same run, so it moves less with machine load."""
    source = generated_python(lines)
    line_count = source.count("\n")
    parse = timed(lambda: python_ast.parse(source), repeat)
    both = timed(lambda: compile(python_ast.parse(source), "bench.py", "exec"), repeat)
    return [
        Row("peer: CPython ast.parse", per_second(line_count, parse, "lines")),
        Row(
            "peer: ast.parse + compile",
            per_second(line_count, both, "lines"),
            note=f"{line_count:,} lines of generated Python",
        ),
        Row(
            "lex + parse + check vs ast.parse",
            f"{checked_rate / (line_count / statistics.median(parse)):.2f}x",
            note="ratio of lines/s, same run",
        ),
    ]


def interpreter_rows(batches: int, batch_size: int, rounds: int, repeat: int) -> list[Row]:
    program = agentscript.load_source(LOOP_PROGRAM, ROOT / "benchmarks" / "loop.as")
    diagnostics = agentscript.check(program)
    if diagnostics:
        raise SystemExit(f"the loop program is invalid: {diagnostics[0].format()}")
    numbers = list(range(batch_size))
    data = {"batches": [numbers] * batches, "rounds": rounds}
    # The interpreter alone: the run journal is measured by benchmarks/journal.py.
    config = agentscript.RunConfig(model="mock", journal=False)
    statements = loop_program_statements(batches, batch_size, rounds)
    durations = timed(lambda: agentscript.run(program, data, config), repeat)
    return [
        Row(
            "interpreter (mock model)",
            per_second(statements, durations, "statements"),
            note=f"{statements:,} statements, {batches} generates per run",
        )
    ]


def command() -> list[str] | None:
    """How to start the command: the venv script, else `python -m agentscript`."""
    script = ROOT / ".venv" / "bin" / "agentscript"
    candidates = [[str(script)]] if script.exists() else []
    candidates.append([sys.executable, "-m", "agentscript"])
    for candidate in candidates:
        probe = subprocess.run(
            [*candidate, "check", COLD_START_FILE],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0:
            return candidate
    return None


def cold_start_ms(argv: list[str], runs: int) -> float:
    durations: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, capture_output=True, check=False)
        durations.append((time.perf_counter() - start) * 1000)
    return statistics.median(durations)


def cold_start_rows(runs: int) -> list[Row]:
    floor = cold_start_ms([sys.executable, "-c", "pass"], runs)
    floor_row = Row("python -c pass (floor)", f"{floor:.0f} ms", note=f"median of {runs}")
    start = command()
    if start is None:
        return [
            Row(
                f"cold start: check {COLD_START_FILE}",
                "skipped",
                f"<= {TARGET_COLD_START_MS:.0f} ms",
                "the agentscript command does not run yet (CLI still being written)",
            ),
            floor_row,
        ]
    median = cold_start_ms([*start, "check", COLD_START_FILE], runs)
    shown = " ".join(Path(start[0]).name if i == 0 else part for i, part in enumerate(start))
    return [
        Row(
            f"cold start: {shown} check {COLD_START_FILE}",
            f"{median:.0f} ms",
            f"<= {TARGET_COLD_START_MS:.0f} ms",
            f"median of {runs}; {_verdict(median <= TARGET_COLD_START_MS)}",
        ),
        floor_row,
    ]


def _verdict(met: bool) -> str:
    return "meets target" if met else "MISSES target"


def print_table(rows: list[Row]) -> None:
    columns = [column.name for column in fields(Row)]
    table = [Row("measurement", "figure", "target", "note"), *rows]
    widths = [max(len(getattr(row, name)) for row in table) for name in columns]
    for index, row in enumerate(table):
        cells = [
            getattr(row, name).ljust(width) for name, width in zip(columns, widths, strict=True)
        ]
        print("  ".join(cells).rstrip())
        if index == 0:
            print("  ".join("-" * width for width in widths))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=20_000, help="size of the generated program")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per measurement")
    parser.add_argument("--batches", type=int, default=200, help="interpreter: outer iterations")
    parser.add_argument(
        "--batch-size", type=int, default=100, help="interpreter: inner iterations (even)"
    )
    parser.add_argument("--rounds", type=int, default=1000, help="interpreter: loop-until rounds")
    parser.add_argument("--cold-runs", type=int, default=10, help="cold start: runs (median)")
    parser.add_argument(
        "--peer", action="store_true", help="add CPython's ast.parse + compile as a yardstick"
    )
    args = parser.parse_args(argv)
    if args.batch_size % 2:
        parser.error("--batch-size must be even")

    print(f"AgentScript {agentscript.__version__} on Python {sys.version.split()[0]} ({os.name})")
    print(f"median of {args.repeat} runs after one warm-up (best run in brackets)\n")
    rows, checked_rate = front_end_rows(args.lines, args.repeat)
    if args.peer:
        rows += peer_rows(args.lines, args.repeat, checked_rate)
    rows += interpreter_rows(args.batches, args.batch_size, args.rounds, args.repeat)
    rows += cold_start_rows(args.cold_runs)
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
