"""Learning from runs, end to end: a task family that fails at first and is fixed by lessons.

Runs examples/learning/report.as on 20 tasks ("Summarise the March 2026 sales report", …) in a
temporary workspace with a temporary memory database, every run journaled, learned from
(run memory, distilled experiences) and reading its lessons back through Memory.experiences.
The model is scripted: it guesses a report's file name at the workspace root unless a lesson in
its prompt says to locate files first, and writes the total as text ("1,234 EUR") unless a
lesson says to answer it with a plain number; it reads the report in its prompt to get the total
right. So what is measured is the learning loop (distil, deduplicate, store, recall, prompt), not
a model's skill at following lessons. The same 20 tasks run again with learning off as the
baseline. Offline, deterministic; prints one table and never asserts.

The harmful cases: one task in four fails for a reason that is not the task's, in turn a missing
API key (the real router with an empty environment), a provider outage (the scripted model
raises the transport's own 503 wording) and the user's own budget (`max_calls` 1). Target: 0
lessons stored from those runs and 0 injected into a prompt. And the cost of what `use` of
experiences adds to a prompt, in estimated tokens per lesson line (target ≤ 60).

    .venv/bin/python benchmarks/learning.py [--tasks 20]
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import shutil
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import agentscript
import private_memory  # noqa: F401  (the user's memory stays out of reach)
from agentscript.learn.graph import episode_node_id
from agentscript.learn.journal import journal_path, shared_journal
from agentscript.memory.service import MemoryService
from agentscript.runtime.errors import AgentScriptError, ExecutionError
from agentscript.runtime.ports import GenerateRequest, GenerateResponse
from agentscript.runtime.tokens import estimate_tokens

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "learning" / "report.as"
MONTHS = (
    "January February March April May June July August September October November December"
).split()
LESSONS_LABEL = "lessons from earlier runs"
# The phrases of the two rule-made lessons the scripted model heeds.
LOCATE_FIRST = "find the file (for example with sh://find)"
PLAIN_NUMBER = "with a plain number"
WAIT_SECONDS = 60.0
# Every fourth task fails for an environment reason, these in turn.
ENVIRONMENT_FAILURES = ("missing key", "provider 503", "own budget")
OUTAGE = "LLM provider 'openai' request failed (503): The server is overloaded"
# Words only a lesson learned from an environment failure would carry.
ENVIRONMENT_WORDS = re.compile(r"OPENAI_API_KEY|\b503\b|overloaded|budget|--max-", re.I)


@dataclass(frozen=True, slots=True)
class Task:
    text: str
    year: int
    month: int
    total: int
    # Why the run fails whatever was learned (one of ENVIRONMENT_FAILURES), if it does.
    environment: str | None = None

    @property
    def file(self) -> str:
        return f"{self.year}-{self.month:02d}.csv"


def tasks(count: int) -> list[Task]:
    """`count` monthly reports from January 2025 on, each with its own amounts."""
    found = []
    for index in range(count):
        year, month = 2025 + index // 12, index % 12 + 1
        amounts = [100 + 37 * index, 250 + 11 * index, 75 + 5 * index]
        text = f"Summarise the {MONTHS[month - 1]} {year} sales report"
        failure = (
            ENVIRONMENT_FAILURES[(index // 4) % len(ENVIRONMENT_FAILURES)]
            if index % 4 == 3
            else None
        )
        found.append(Task(text, year, month, sum(amounts), failure))
    return found


def make_workspace(base: Path, family: list[Task]) -> Path:
    """The example program and one CSV per task under reports/<year>/."""
    workspace = base / "workspace"
    workspace.mkdir(parents=True)
    shutil.copy(EXAMPLE, workspace / EXAMPLE.name)
    for index, task in enumerate(family):
        amounts = [100 + 37 * index, 250 + 11 * index, 75 + 5 * index]
        folder = workspace / "reports" / str(task.year)
        folder.mkdir(parents=True, exist_ok=True)
        rows = "".join(
            f"{region},{amount}\n"
            for region, amount in zip(("north", "south", "west"), amounts, strict=True)
        )
        (folder / task.file).write_text("region,amount\n" + rows, encoding="utf-8")
    return workspace


class LessonFollowingModel:
    """The scripted model: it makes two mistakes until lessons in its prompt say otherwise."""

    def __init__(self) -> None:
        self.down = False

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        if self.down:
            raise ExecutionError(OUTAGE)
        items = {item.label: item.text for item in request.context}
        lessons = items.get(LESSONS_LABEL, "")
        if request.function_name == "locate":
            found = re.search(r"(\w+) (\d{4}) sales report", items.get("task", ""))
            month = MONTHS.index(found[1]) + 1 if found else 1
            year = int(found[2]) if found else 2025
            answer = {"file": f"{year}-{month:02d}.csv", "look_up": LOCATE_FIRST in lessons}
        else:
            rows = csv.DictReader(io.StringIO(items.get("report", "")))
            total = sum(int(row["amount"]) for row in rows if row.get("amount", "").isdigit())
            value: Any = total if PLAIN_NUMBER in lessons else f"{total:,} EUR"
            answer = {"summary": f"Sales came to {total:,} in three regions.", "total": value}
        return GenerateResponse(value=answer, provider="lesson-following")


@dataclass(slots=True)
class Series:
    """One pass over the task family."""

    learn: bool
    outcomes: list[bool] = field(default_factory=list)
    # The runs that failed for an environment reason, and the lesson lines each prompt got.
    environment_runs: set[str] = field(default_factory=set)
    lesson_lines: list[str] = field(default_factory=list)
    actions: Counter[str] = field(default_factory=Counter)
    recalled: list[int] = field(default_factory=list)
    after_seconds: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    experiences: list[dict[str, Any]] = field(default_factory=list)
    run_memories: int = 0

    def rate(self, first: int, last: int) -> str:
        window = self.outcomes[first - 1 : last]
        if not window:
            return "-"
        wins = sum(window)
        return f"{wins}/{len(window)} ({100 * wins / len(window):.0f}%)"


def run_family(family: list[Task], base: Path, learn: bool) -> Series:
    workspace = make_workspace(base, family)
    database = base / "memory.db"
    program = agentscript.load(workspace / EXAMPLE.name)
    model = LessonFollowingModel()
    series = Series(learn)
    journal = shared_journal(journal_path(workspace))
    for task in family:
        settings: dict[str, Any] = {"model": model, "environ": None}
        if task.environment == "missing key":
            settings = {"model": "real", "environ": {}}
        model.down = task.environment == "provider 503"
        config = agentscript.RunConfig(
            workspace=workspace,
            memory_db=database,
            learn=learn,
            max_calls=1 if task.environment == "own budget" else None,
            **settings,
        )
        value: Any = None
        try:
            result = agentscript.run(program, {"task": task.text}, config)
            value, trace, record = result.value, result.trace, result.journal
        except AgentScriptError as error:
            trace, record = error.trace or [], error.journal
        waited = time.perf_counter()
        if record is not None:
            if task.environment is not None:
                series.environment_runs.add(record.run_id)
            series.problems += record.wait(WAIT_SECONDS)
            series.after_seconds.append(time.perf_counter() - waited)
            episode = journal.graph.node(episode_node_id(record.run_id))
            learning = episode.metadata.get("learning", {}) if episode is not None else {}
            series.actions.update(item["action"] for item in learning.get("experiences", []))
        texts = _experience_texts(trace)
        lines = [line for text in texts for line in text.splitlines() if line.startswith("- ")]
        series.lesson_lines += lines
        series.recalled.append(len(lines))
        series.outcomes.append(isinstance(value, dict) and value.get("total") == task.total)
    with MemoryService.open(workspace, database=database) as memory:
        series.experiences = memory.recall(
            "", kind="knowledge", tags=["experience"], limit=200, body_chars=400
        )["results"]
        series.run_memories = memory.recall("", kind="episodic", tags=["run"], limit=200)["count"]
    return series


def _experience_texts(trace: list[dict[str, Any]]) -> list[str]:
    """What each `Memory.experiences` call of a run returned (the text its prompts `use`)."""
    texts: list[str] = []
    for event in trace:
        data = event["data"]
        if event["kind"] == "agent":
            texts += _experience_texts(data.get("trace") or [])
        elif event["kind"] == "tool" and data.get("method") == "experiences":
            result = data.get("result")
            texts.append(result if isinstance(result, str) else "")
    return texts


def environment_lessons(series: Series) -> tuple[int, int]:
    """(lessons stored from an environment-failed run or about one, lesson lines injected
    that speak of one)."""
    stored = sum(
        1
        for hit in series.experiences
        if (hit.get("source") or {}).get("run") in series.environment_runs
        or ENVIRONMENT_WORDS.search(str(hit.get("body")))
    )
    injected = sum(1 for line in series.lesson_lines if ENVIRONMENT_WORDS.search(line))
    return stored, injected


def report(family: list[Task], learned: Series, baseline: Series) -> None:
    count = len(family)
    early, late = (1, min(5, count)), (max(count - 4, 1), count)

    def row(name: str, with_learning: object, without: object) -> None:
        print(f"{name:<38} {with_learning!s:>16} {without!s:>16}")

    row("measure", "learning on", "learning off")
    row("runs", count, count)
    row(f"success, runs {early[0]}-{early[1]}", learned.rate(*early), baseline.rate(*early))
    row(f"success, runs {late[0]}-{late[1]}", learned.rate(*late), baseline.rate(*late))
    row("experiences created", learned.actions["created"], baseline.actions["created"])
    row("experiences reinforced", learned.actions["reinforced"], baseline.actions["reinforced"])
    row(
        "duplicates avoided (repeats merged)",
        learned.actions["reinforced"] + learned.actions["known"],
        "-",
    )
    row("graph-only candidates", learned.actions["candidate"], "-")
    row("experiences recalled into prompts", sum(learned.recalled), sum(baseline.recalled))
    clean = [task.environment is None for task in family]
    row(
        "success without environment failures",
        _clean_rate(learned.outcomes, clean),
        _clean_rate(baseline.outcomes, clean),
    )
    row("environment-failed runs", len(learned.environment_runs), len(baseline.environment_runs))
    stored, injected = environment_lessons(learned)
    row("environment lessons stored (target 0)", stored, environment_lessons(baseline)[0])
    row("environment lessons injected (target 0)", injected, environment_lessons(baseline)[1])
    costs = [estimate_tokens(line) for line in learned.lesson_lines]
    row(
        "tokens per injected lesson, mean (≤ 60)",
        f"{statistics.mean(costs):.1f}" if costs else "-",
        "-",
    )
    row("tokens per injected lesson, max (≤ 60)", max(costs) if costs else "-", "-")
    row("experiences in memory at the end", len(learned.experiences), len(baseline.experiences))
    row("run memories in memory at the end", learned.run_memories, baseline.run_memories)
    row(
        "background step after a run, p50 (ms)",
        f"{1000 * statistics.median(learned.after_seconds):.1f}",
        f"{1000 * statistics.median(baseline.after_seconds):.1f}",
    )
    print()
    print("run by run (learning on): " + "".join("+" if ok else "." for ok in learned.outcomes))
    print("run by run (learning off): " + "".join("+" if ok else "." for ok in baseline.outcomes))
    print()
    print("experiences stored (kind, reinforcements, title):")
    for hit in learned.experiences:
        kind = next(tag for tag in hit["tags"] if tag != "experience")
        print(f"  {kind:<10} {hit['reinforce_count']:>3}  {hit['title']}")
    for problem in learned.problems + baseline.problems:
        print(f"problem: {problem}")


def _clean_rate(outcomes: list[bool], clean: list[bool]) -> str:
    kept = [ok for ok, fair in zip(outcomes, clean, strict=True) if fair]
    return f"{sum(kept)}/{len(kept)} ({100 * sum(kept) / len(kept):.0f}%)" if kept else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=20, help="How many tasks of the family.")
    arguments = parser.parse_args()
    family = tasks(max(1, arguments.tasks))
    with tempfile.TemporaryDirectory(prefix="agentscript-learning-") as temporary:
        base = Path(temporary)
        learned = run_family(family, base / "learning", learn=True)
        baseline = run_family(family, base / "baseline", learn=False)
        report(family, learned, baseline)


if __name__ == "__main__":
    main()
