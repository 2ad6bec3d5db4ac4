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
from agentscript.learn.graph import episode_node_id
from agentscript.learn.journal import journal_path, shared_journal
from agentscript.memory.service import MemoryService
from agentscript.runtime.errors import AgentScriptError
from agentscript.runtime.ports import GenerateRequest, GenerateResponse

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "learning" / "report.as"
MONTHS = (
    "January February March April May June July August September October November December"
).split()
LESSONS_LABEL = "lessons from earlier runs"
# The phrases of the two rule-made lessons the scripted model heeds.
LOCATE_FIRST = "locate the file first"
PLAIN_NUMBER = "with a plain number"
WAIT_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class Task:
    text: str
    year: int
    month: int
    total: int

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
        found.append(Task(text, year, month, sum(amounts)))
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

    def generate(self, request: GenerateRequest) -> GenerateResponse:
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
        config = agentscript.RunConfig(
            model=model, workspace=workspace, memory_db=database, learn=learn
        )
        value: Any = None
        try:
            result = agentscript.run(program, {"task": task.text}, config)
            value, trace, record = result.value, result.trace, result.journal
        except AgentScriptError as error:
            trace, record = error.trace or [], error.journal
        waited = time.perf_counter()
        if record is not None:
            series.problems += record.wait(WAIT_SECONDS)
            series.after_seconds.append(time.perf_counter() - waited)
            episode = journal.graph.node(episode_node_id(record.run_id))
            learning = episode.metadata.get("learning", {}) if episode is not None else {}
            series.actions.update(item["action"] for item in learning.get("experiences", []))
        series.recalled.append(sum(len(hit) for hit in _experience_hits(trace)))
        series.outcomes.append(isinstance(value, dict) and value.get("total") == task.total)
    with MemoryService.open(workspace, database=database) as memory:
        series.experiences = memory.recall(
            "", kind="knowledge", tags=["experience"], limit=200, body_chars=0
        )["results"]
        series.run_memories = memory.recall("", kind="episodic", tags=["run"], limit=200)["count"]
    return series


def _experience_hits(trace: list[dict[str, Any]]) -> list[list[Any]]:
    hits: list[list[Any]] = []
    for event in trace:
        data = event["data"]
        if event["kind"] == "agent":
            hits += _experience_hits(data.get("trace") or [])
        elif event["kind"] == "tool" and data.get("method") == "experiences":
            result = data.get("result")
            hits.append(result if isinstance(result, list) else [])
    return hits


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
