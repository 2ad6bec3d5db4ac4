"""`agentscript.evaluate(workers=N)`: cells in forked worker processes, the parent keeping the
eval's budget exact, the one results file, the progress and the journal of every cell."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

import agentscript
from agentscript.app.evals.runner import EvalProgress
from agentscript.app.evals.workers import CELLS_PER_WORKER, worker_count
from agentscript.learn.journal import Journal, list_runs, wait_for_journal
from agentscript.runtime.errors import LoadError
from agentscript.runtime.ports import GenerateRequest, GenerateResponse
from eval_support import classify, example_copy, write_cases
from openai_wire import serving


def test_workers_run_every_cell_and_journal_each_in_its_own_process(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    out = tmp_path / "out.jsonl"
    seen: list[EvalProgress] = []
    with serving(classify, latency=0.05) as server:
        config = agentscript.EvalConfig(
            models=["openai://good"],
            environ=server.environ(),
            field="label",
            concurrency=8,
            workers=2,
            out=out,
            on_progress=seen.append,
        )
        # A first eval in this process leaves the journal open and its thread running when
        # the workers of the second are forked: each worker opens its own connection.
        agentscript.evaluate(
            folder / "classifier.as",
            folder / "cases.jsonl",
            agentscript.EvalConfig(
                models=["openai://weak"], environ=server.environ(), field="label"
            ),
        )
        report = agentscript.evaluate(folder / "classifier.as", folder / "cases.jsonl", config)
    (summary,) = report.summaries
    assert summary.n == 20 and summary.mean_score == 1.0 and summary.errors == 0
    assert report.spent["calls"] == 20 and report.spent["input_tokens"] == 20 * 100
    # The parent counted the progress of every cell, in order, and wrote the one results file.
    assert [progress.done for progress in seen] == list(range(1, 21))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(row["id"] for row in rows) == sorted({row["id"] for row in rows})
    assert len(rows) == 20
    # Every cell is a finished run of the journal, written by one of two worker processes.
    wait_for_journal()
    journal = Journal.for_workspace(folder)
    try:
        runs = {view.run.run_id: view for view in list_runs(journal, limit=None)}
        cells = [runs[row["run_id"]] for row in rows]
        assert {view.status for view in cells} == {"ok"}
        pids = {view.run.pid for view in cells}
        assert len(pids) == 2 and os.getpid() not in pids
        # ... and in the task graph, with its execution trace.
        assert all(journal.graph.episode_trace(row["run_id"]) is not None for row in rows)
    finally:
        journal.close()
    with sqlite3.connect(folder / ".agentscript" / "runs.db") as database:
        assert database.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_call_budget_stops_the_workers_at_the_exact_call_and_a_resume_finishes(
    tmp_path: Path,
) -> None:
    folder = example_copy(tmp_path)
    cases = write_cases(tmp_path / "cases.jsonl", 24)
    out = tmp_path / "out.jsonl"
    config = agentscript.EvalConfig(
        mock=True, max_calls=7, out=out, field="label", concurrency=6, workers=2
    )
    first = agentscript.evaluate(folder / "classifier.as", cases, config, metric="contains")
    # Every model call of every worker is checked against the one budget: seven calls, seven
    # cells; the cells refused are not kept, so they run on resume.
    assert first.spent["calls"] == 7
    assert len(first.rows) == 7 and first.not_run == 17
    assert first.stopped is not None and "budget" in first.stopped
    assert len(out.read_text().splitlines()) == 7
    config.max_calls = None
    second = agentscript.evaluate(folder / "classifier.as", cases, config, metric="contains")
    assert second.resumed == 7 and second.not_run == 0 and len(second.rows) == 24
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 24


def test_a_token_budget_is_shared_by_the_workers(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    cases = write_cases(tmp_path / "cases.jsonl", 16)
    with serving(classify, latency=0.02) as server:
        report = agentscript.evaluate(
            folder / "classifier.as",
            cases,
            agentscript.EvalConfig(
                models=["openai://good"],
                environ=server.environ(),
                max_tokens=550,
                concurrency=4,
                workers=2,
            ),
        )
    # 110 tokens a call: after the fifth, no call starts; the ones in flight then finish.
    assert 5 <= len(server.requests) <= 5 + 3
    assert report.spent["calls"] == len(server.requests)
    assert report.not_run >= 16 - len(server.requests)


class Billing:
    """A model provider object of the test's own: every worker has its copy."""

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        value = {"label": "billing", "reason": f"answered in {os.getpid()}"}
        return GenerateResponse(value=value, raw_text=json.dumps(value))


def test_a_provider_object_and_a_function_metric_work_in_workers(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    cases = write_cases(tmp_path / "cases.jsonl", 6, expected="billing")
    report = agentscript.evaluate(
        folder / "classifier.as",
        cases,
        agentscript.EvalConfig(llm=Billing(), concurrency=4, workers=2),
        metric=lambda case, value: 0.5 if value["label"] == case.expected else 0.0,
    )
    assert [row.error for row in report.rows] == [None] * 6
    assert [row.score for row in report.rows] == [0.5] * 6
    answered_in = {row.value["reason"] for row in report.rows}
    assert f"answered in {os.getpid()}" not in answered_in


def test_workers_auto_is_one_per_eight_concurrent_cells_up_to_the_cores() -> None:
    cores = os.cpu_count() or 1
    assert worker_count("auto", 1, 100) == 1
    assert worker_count("auto", CELLS_PER_WORKER - 1, 100) == 1
    assert worker_count("auto", 4 * CELLS_PER_WORKER, 100) == min(cores, 4)
    # Never more processes than cells in flight, or than cells.
    assert worker_count(8, 2, 100) == 2
    assert worker_count(8, 32, 3) == 3
    with pytest.raises(LoadError, match="positive number or auto"):
        worker_count(0, 1, 1)


def test_bad_workers_are_refused_before_anything_runs(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    with pytest.raises(LoadError, match="Workers must be"):
        agentscript.evaluate(
            folder / "classifier.as",
            folder / "cases.jsonl",
            agentscript.EvalConfig(mock=True, workers=0),
        )


def test_a_judge_recorded_by_workers_replays_in_one_process(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    cassettes = tmp_path / "cassettes"
    recorded = agentscript.evaluate(
        folder / "classifier.as",
        folder / "cases.jsonl",
        agentscript.EvalConfig(
            mock=folder / "answers.json", record=cassettes, concurrency=4, workers=2
        ),
        metric=folder / "judge.as",
    )
    # Each worker wrote the cassettes of the cells it ran, judge runs included.
    assert len(list((cassettes / "program").glob("*.judge.jsonl"))) == 20
    replayed = agentscript.evaluate(
        folder / "classifier.as",
        folder / "cases.jsonl",
        agentscript.EvalConfig(replay=cassettes),
        metric=folder / "judge.as",
    )
    assert [(r.id, r.score, r.reason) for r in replayed.rows] == [
        (r.id, r.score, r.reason) for r in recorded.rows
    ]
    assert recorded.summary().mean_score == pytest.approx(17.5 / 20)


def test_with_learning_the_off_arm_runs_in_workers_and_the_on_arm_in_order_here(
    tmp_path: Path,
) -> None:
    folder = example_copy(tmp_path)
    report = agentscript.evaluate(
        folder / "classifier.as",
        folder / "cases.jsonl",
        agentscript.EvalConfig(
            mock=folder / "answers.json",
            learn=True,
            field="label",
            memory_db=tmp_path / "memory.db",
            concurrency=4,
            workers=2,
        ),
    )
    off, on = report.learning
    assert (off.first, off.last) == (on.first, on.last) == (1.0, 0.8)
    wait_for_journal()
    journal = Journal.for_workspace(folder)
    try:
        pid_of = {view.run.run_id: view.run.pid for view in list_runs(journal, limit=None)}
    finally:
        journal.close()
    off_pids = {pid_of[row.run_id] for row in report.rows if row.learning == "off" and row.run_id}
    on_pids = {pid_of[row.run_id] for row in report.rows if row.learning == "on" and row.run_id}
    assert len(off_pids) == 2 and os.getpid() not in off_pids
    assert on_pids == {os.getpid()}
    assert all(row.feedback in ("good", "bad") for row in report.rows if row.learning == "on")
