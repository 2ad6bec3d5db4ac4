"""`agentscript.evaluate`: cases in configurations against local OpenAI-wire models, scripted
mocks and replays; budgets across the eval; resume; concurrency; a judge; learning on/off."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import agentscript
from agentscript.app.evals.cases import Case, CaseError
from agentscript.app.evals.metrics import MetricError, Score
from agentscript.app.evals.results import ResultsError
from agentscript.app.evals.runner import EvalProgress
from agentscript.learn.journal import Journal, wait_for_journal
from eval_support import classify, example_copy, write_cases
from openai_wire import serving, user_message


def test_two_local_models_answer_differently_and_the_difference_is_significant(
    tmp_path: Path,
) -> None:
    folder = example_copy(tmp_path)
    with serving(classify, latency=0.02) as server:
        report = agentscript.evaluate(
            folder / "classifier.as",
            folder / "cases.jsonl",
            agentscript.EvalConfig(
                models=["openai://good", "openai://weak"],
                environ=server.environ(),
                field="label",
                concurrency=8,
                out=tmp_path / "results.jsonl",
            ),
        )
    good, weak = report.summaries
    assert (good.configuration, weak.configuration) == ("openai://good", "openai://weak")
    assert good.n == weak.n == 20
    assert good.mean_score == 1.0
    assert weak.mean_score == pytest.approx(2 / 20)  # the two tickets whose label is other
    assert good.tokens == 20 * 110
    # The two models were asked by name, and cells overlapped.
    assert {body["model"] for body in server.requests} == {"good", "weak"}
    assert server.most_in_flight > 1
    (difference,) = report.differences
    assert difference.mean == pytest.approx(-0.9)
    assert difference.high < 0  # the 95 % interval excludes no difference
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 40
    row = next(r for r in rows if r["id"] == "t01" and r["model"] == "openai://good")
    assert row["value"] == {"label": "billing", "reason": "good decided"}
    assert row["passed"] is True and row["expected"] == "billing"
    assert row["usage"]["input_tokens"] == 100 and row["usage"]["calls"] == 1
    # Every cell is a journaled run.
    wait_for_journal()
    journal = Journal.for_workspace(folder)
    try:
        assert journal.resolve(row["run_id"]).run_id == row["run_id"]
    finally:
        journal.close()


def test_variants_reach_the_prompt_at_their_site(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    with serving(classify) as server:
        report = agentscript.evaluate(
            folder / "classifier.as",
            [{"id": "one", "input": {"ticket": "I was charged twice"}, "expected": "billing"}],
            agentscript.EvalConfig(
                models=["openai://good"],
                variants=["label guide=none", "label guide=definitions"],
                environ=server.environ(),
                field="label",
            ),
        )
    assert report.configurations == [
        "openai://good label guide=none",
        "openai://good label guide=definitions",
    ]
    prompts = [user_message(body) for body in server.requests]
    assert sum("label guide:" in prompt for prompt in prompts) == 1


def test_an_unknown_variant_is_refused_before_anything_runs(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    with pytest.raises(MetricError, match=r"no candidate 'terse'.*candidates: none, definitions"):
        agentscript.evaluate(
            folder / "classifier.as",
            folder / "cases.jsonl",
            agentscript.EvalConfig(mock=True, variants=["label guide=terse"]),
        )
    with pytest.raises(MetricError, match="no `use one of` labelled 'tone'"):
        agentscript.evaluate(
            folder / "classifier.as",
            folder / "cases.jsonl",
            agentscript.EvalConfig(mock=True, variants=["tone=formal"]),
        )


def test_scripted_answers_per_case_and_a_judge_program(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    report = agentscript.evaluate(
        folder / "classifier.as",
        folder / "cases.jsonl",
        agentscript.EvalConfig(mock=folder / "answers.json", pass_score=0.5),
        metric=folder / "judge.as",
    )
    summary = report.summary()
    # 16 right (1), three defensible (0.5) and one wrong (0): the judge's scripted grades.
    assert summary.mean_score == pytest.approx((16 + 1.5) / 20)
    assert summary.pass_rate == pytest.approx(19 / 20)
    row = next(r for r in report.rows if r.id == "t12")
    assert row.score == 0 and "feature, not bug" in row.reason
    assert row.judge_run_id is not None and row.judge_run_id != row.run_id


def test_a_judge_returning_a_score_outside_0_1_is_an_error_of_that_cell(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    answers = {
        "cases": {
            "*": {
                "Triage": [{"label": "bug", "reason": "r"}],
                "Grader": [{"score": 3, "reason": "x"}],
            }
        }
    }
    (folder / "bad.json").write_text(json.dumps(answers))
    report = agentscript.evaluate(
        folder / "classifier.as",
        [{"id": "a", "input": {"ticket": "t"}, "expected": "bug"}],
        agentscript.EvalConfig(mock=folder / "bad.json"),
        metric=folder / "judge.as",
    )
    (row,) = report.rows
    assert row.score == 0 and row.error is not None and "must be in [0, 1]" in row.error


def test_budgets_apply_to_the_whole_eval_and_a_resume_finishes_it(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    cases = write_cases(tmp_path / "cases.jsonl", 10)
    out = tmp_path / "out.jsonl"
    config = agentscript.EvalConfig(mock=True, max_calls=4, out=out, field="label", concurrency=1)
    first = agentscript.evaluate(folder / "classifier.as", cases, config, metric="contains")
    assert len(first.rows) == 4 and first.not_run == 6
    assert first.stopped is not None and "budget" in first.stopped
    assert len(out.read_text().splitlines()) == 4
    config.max_calls = None
    second = agentscript.evaluate(folder / "classifier.as", cases, config, metric="contains")
    assert second.resumed == 4 and second.not_run == 0 and len(second.rows) == 10
    assert len(out.read_text().splitlines()) == 10


def test_token_budget_counts_every_configuration(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    cases = write_cases(tmp_path / "cases.jsonl", 10)
    with serving(classify) as server:
        report = agentscript.evaluate(
            folder / "classifier.as",
            cases,
            agentscript.EvalConfig(
                models=["openai://good", "openai://weak"],
                environ=server.environ(),
                max_tokens=550,
                concurrency=4,
            ),
        )
    # 110 tokens a call: the fifth call crosses 550 and nothing is asked after it.
    assert len(server.requests) <= 5 + 3  # calls already in flight when the budget ran out
    assert report.not_run >= 20 - len(server.requests)
    assert report.spent["calls"] == len(server.requests)


def test_resume_skips_done_cells_and_fresh_runs_them_again(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    out = tmp_path / "out.jsonl"
    config = agentscript.EvalConfig(mock=folder / "answers.json", out=out, field="label")
    agentscript.evaluate(folder / "classifier.as", folder / "cases.jsonl", config)
    again = agentscript.evaluate(folder / "classifier.as", folder / "cases.jsonl", config)
    assert again.resumed == 20
    assert len(out.read_text().splitlines()) == 20
    # Another metric is another result: those cells run again.
    other = agentscript.evaluate(
        folder / "classifier.as", folder / "cases.jsonl", config, "contains"
    )
    assert other.resumed == 0
    config.fresh = True
    fresh = agentscript.evaluate(folder / "classifier.as", folder / "cases.jsonl", config)
    assert fresh.resumed == 0 and len(out.read_text().splitlines()) == 20


def test_a_line_cut_short_by_a_crash_is_dropped_and_its_cell_runs_again(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    out = tmp_path / "out.jsonl"
    config = agentscript.EvalConfig(mock=folder / "answers.json", out=out, field="label")
    agentscript.evaluate(folder / "classifier.as", folder / "cases.jsonl", config)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:5]) + lines[5][:40])
    resumed = agentscript.evaluate(folder / "classifier.as", folder / "cases.jsonl", config)
    assert resumed.resumed == 5 and len(resumed.rows) == 20
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()].count(
        json.loads(lines[5])["id"]
    ) == 1


def test_record_then_replay_gives_the_same_answers_offline(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    cassettes = tmp_path / "cassettes"
    with serving(classify) as server:
        recorded = agentscript.evaluate(
            folder / "classifier.as",
            folder / "cases.jsonl",
            agentscript.EvalConfig(
                models=["openai://good", "openai://weak"],
                environ=server.environ(),
                record=cassettes,
                field="label",
                concurrency=4,
            ),
        )
    assert (cassettes / "openai_good" / "t01.jsonl").exists()
    replayed = agentscript.evaluate(
        folder / "classifier.as",
        folder / "cases.jsonl",
        agentscript.EvalConfig(
            models=["openai://good", "openai://weak"],
            replay=cassettes,
            field="label",
            concurrency=3,
        ),
    )
    assert [(r.id, r.configuration, r.value) for r in replayed.rows] == [
        (r.id, r.configuration, r.value) for r in recorded.rows
    ]
    assert replayed.summaries[0].tokens == recorded.summaries[0].tokens


def test_a_missing_cassette_is_an_error_of_its_cell_only(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    (tmp_path / "empty").mkdir()
    report = agentscript.evaluate(
        folder / "classifier.as",
        [{"id": "a", "input": {"ticket": "t"}, "expected": "bug"}],
        agentscript.EvalConfig(replay=tmp_path / "empty"),
    )
    (row,) = report.rows
    assert row.error is not None and "No recording" in row.error and "a.jsonl" in row.error


def test_a_run_that_fails_is_an_error_cell_with_its_location(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    script = {"cases": {"*": {"Triage": ["not json at all"]}}}
    (folder / "broken.json").write_text(json.dumps(script))
    report = agentscript.evaluate(
        folder / "classifier.as",
        [{"id": "a", "input": {"ticket": "t"}, "expected": "bug"}],
        agentscript.EvalConfig(mock=folder / "broken.json"),
    )
    (row,) = report.rows
    assert row.score == 0 and row.passed is False
    assert row.error is not None and "classifier.as:" in row.error
    assert row.run_id is not None


def test_a_python_function_is_a_metric(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)

    def first_letter(case: Case, value: object) -> Score:
        assert isinstance(value, dict)
        return Score(1.0 if value["label"][:1] == str(case.expected)[:1] else 0.0, "first letter")

    report = agentscript.evaluate(
        folder / "classifier.as",
        folder / "cases.jsonl",
        agentscript.EvalConfig(mock=folder / "answers.json"),
        metric=first_letter,
    )
    assert report.summary().mean_score == pytest.approx(16 / 20)


def test_bad_cases_are_refused_with_their_line(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"input": {}, "expected": 1}\n{"input": {}}\n')
    with pytest.raises(CaseError, match=r"bad.jsonl:2: a case needs an 'expected'"):
        agentscript.evaluate(folder / "classifier.as", bad, agentscript.EvalConfig(mock=True))


def test_learning_on_and_off_report_their_first_and_last_quarter(tmp_path: Path) -> None:
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
        ),
    )
    assert report.configurations == ["learning=off", "learning=on"]
    off, on = report.learning
    assert (off.learning, on.learning, off.quarter) == ("off", "on", 5)
    # Scripted answers do not change with learning: both arms score alike, quarter by quarter.
    assert (off.first, off.last) == (on.first, on.last) == (1.0, 0.8)
    # The on arm learned into the given memory database (a run memory per run), the off arm
    # did not.
    wait_for_journal()
    connection = sqlite3.connect(tmp_path / "memory.db")
    try:
        stored = "\n".join(connection.iterdump())
    finally:
        connection.close()
    on_runs = {row.run_id for row in report.rows if row.learning == "on"}
    off_runs = {row.run_id for row in report.rows if row.learning == "off"}
    assert all(run_id in stored for run_id in on_runs if run_id)
    assert not any(run_id in stored for run_id in off_runs if run_id)


LEARNER = """
import llm Model from "openai://learner"
import tool Memory from "memory://workspace"

main agent Triage {
    model Model
    role "support triage"
    description "Labels tickets, with the lessons of earlier tickets."

    main func(input { ticket: string }) {
        use Memory.experiences({ task: input.ticket, limit: 5 }) as "lessons"
        use input.ticket as "ticket"
        generate({ input: "Label the ticket." }) -> { label: string }
    }
}
"""


def answers_from_lessons(model: str, body: dict[str, object]) -> str:
    """A model that only knows what its lessons tell it: billing once a lesson says so."""
    lessons = user_message(body).split("ticket:")[0]  # type: ignore[arg-type]
    return json.dumps({"label": "billing" if "expected billing" in lessons else "other"})


def test_with_learning_on_the_last_quarter_beats_the_first(tmp_path: Path) -> None:
    (tmp_path / "learner.as").write_text(LEARNER)
    cases = [
        {"id": f"c{i}", "input": {"ticket": f"question about invoice {i}"}, "expected": "billing"}
        for i in range(8)
    ]
    with serving(answers_from_lessons) as server:
        report = agentscript.evaluate(
            tmp_path / "learner.as",
            cases,
            agentscript.EvalConfig(
                environ=server.environ(),
                learn=True,
                field="label",
                memory_db=tmp_path / "memory.db",
                concurrency=4,
            ),
        )
    off, on = report.learning
    # Learning off: no lesson ever reaches the prompt. On: the first failure's feedback
    # ("expected billing, got other") is the lesson every later run recalls.
    assert (off.first, off.last) == (0.0, 0.0)
    assert (on.first, on.last) == (0.5, 1.0)
    first_on = next(row for row in report.rows if row.learning == "on" and row.id == "c0")
    assert first_on.feedback == "bad"
    assert {row.feedback for row in report.rows if row.learning == "off"} == {None}
    (difference,) = report.differences
    assert difference.mean == pytest.approx(7 / 8)


def test_progress_reports_every_cell(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    seen: list[EvalProgress] = []
    agentscript.evaluate(
        folder / "classifier.as",
        folder / "cases.jsonl",
        agentscript.EvalConfig(
            mock=folder / "answers.json", field="label", concurrency=4, on_progress=seen.append
        ),
    )
    assert [progress.done for progress in seen] == list(range(1, 21))
    assert {progress.total for progress in seen} == {20}
    assert seen[-1].mean_score == pytest.approx(0.8) and seen[-1].errors == 0


def test_tags_select_cases_and_max_seconds_limits_each_cell(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    hard = agentscript.evaluate(
        folder / "classifier.as",
        folder / "cases.jsonl",
        agentscript.EvalConfig(mock=folder / "answers.json", field="label", tags=["hard"]),
    )
    assert sorted(case.id for case in hard.cases) == ["t12", "t14", "t15", "t18"]
    assert hard.summary().mean_score == 0.0
    with pytest.raises(CaseError, match="No case has the tag easy"):
        agentscript.evaluate(
            folder / "classifier.as",
            folder / "cases.jsonl",
            agentscript.EvalConfig(mock=True, tags=["easy"]),
        )
    with serving(classify, latency=1.0) as server:
        slow = agentscript.evaluate(
            folder / "classifier.as",
            [{"id": "a", "input": {"ticket": "I was charged"}, "expected": "billing"}],
            agentscript.EvalConfig(
                models=["openai://good"], environ=server.environ(), max_seconds=0.3, field="label"
            ),
        )
    (row,) = slow.rows
    assert row.error is not None and row.score == 0


def test_cost_is_priced_per_call_where_the_model_is_known(tmp_path: Path) -> None:
    from agentscript.providers.llm.prices import model_cost

    folder = example_copy(tmp_path)
    cases = write_cases(tmp_path / "cases.jsonl", 5)
    with serving(classify) as server:
        report = agentscript.evaluate(
            folder / "classifier.as",
            cases,
            agentscript.EvalConfig(
                models=["openai://gpt-4.1-mini", "openai://weak"],
                environ=server.environ(),
                field="label",
            ),
        )
    priced, unknown = report.summaries
    each = model_cost("openai://gpt-4.1-mini", 100, 10)
    assert each is not None and each > 0
    assert priced.cost == pytest.approx(5 * each)
    assert unknown.cost is None  # genai-prices does not know a model called "weak"
    assert report.rows[0].cost == pytest.approx(each)


def test_an_eval_without_learn_leaves_the_users_memory_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = example_copy(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AGENTSCRIPT_MEMORY_DB", str(tmp_path / "users-memory.db"))
    report = agentscript.evaluate(
        folder / "classifier.as",
        folder / "cases.jsonl",
        agentscript.EvalConfig(mock=folder / "answers.json", field="label", concurrency=4),
    )
    wait_for_journal()
    assert all(row.run_id for row in report.rows)  # journaled…
    assert not (tmp_path / "users-memory.db").exists()  # …but nothing learned
    assert list(home.iterdir()) == []


def test_a_second_eval_on_the_same_results_file_is_refused(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    out = tmp_path / "out.jsonl"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; "
            "from agentscript.app.evals.results import ResultsFile; "
            f"held = ResultsFile(Path({str(out)!r})); print('held', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        config = agentscript.EvalConfig(mock=folder / "answers.json", out=out)
        with pytest.raises(ResultsError, match="being written by another eval"):
            agentscript.evaluate(folder / "classifier.as", folder / "cases.jsonl", config)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    # Once the other eval is gone (its lock with it), the file is usable again.
    report = agentscript.evaluate(folder / "classifier.as", folder / "cases.jsonl", config)
    assert len(report.rows) == 20


def test_a_judge_records_and_replays_with_its_cell(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    cassettes = tmp_path / "cassettes"
    recorded = agentscript.evaluate(
        folder / "classifier.as",
        folder / "cases.jsonl",
        agentscript.EvalConfig(mock=folder / "answers.json", record=cassettes, concurrency=4),
        metric=folder / "judge.as",
    )
    assert (cassettes / "program" / "t12.judge.jsonl").exists()
    replayed = agentscript.evaluate(
        folder / "classifier.as",
        folder / "cases.jsonl",
        agentscript.EvalConfig(replay=cassettes, concurrency=4),
        metric=folder / "judge.as",
    )
    assert [(r.id, r.score, r.reason) for r in replayed.rows] == [
        (r.id, r.score, r.reason) for r in recorded.rows
    ]
    assert replayed.summary().mean_score == pytest.approx(17.5 / 20)


def test_an_eval_replays_the_journaled_runs_of_an_earlier_one(tmp_path: Path) -> None:
    """The journal is the cassette: `replay` naming an earlier eval's results file answers
    every cell, and its judge, from the runs that eval journaled, with no model to ask."""
    folder = example_copy(tmp_path)
    with serving(classify) as server:
        recorded = agentscript.evaluate(
            folder / "classifier.as",
            folder / "cases.jsonl",
            agentscript.EvalConfig(
                models=["openai://good", "openai://weak"],
                environ=server.environ(),
                concurrency=4,
                out=tmp_path / "first.jsonl",
            ),
            metric=folder / "judge.as",
        )
        asked = len(server.requests)
    replayed = agentscript.evaluate(
        folder / "classifier.as",
        folder / "cases.jsonl",
        agentscript.EvalConfig(
            models=["openai://good", "openai://weak"],
            environ={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-none"},
            replay=tmp_path / "first.jsonl",
            concurrency=3,
        ),
        metric=folder / "judge.as",
    )
    assert asked == 80  # 40 cells and 40 judge runs, all asked once, the first time only
    assert [(r.id, r.configuration, r.value, r.score, r.reason) for r in replayed.rows] == [
        (r.id, r.configuration, r.value, r.score, r.reason) for r in recorded.rows
    ]
    # A strict replay does nothing new, so it is not journaled.
    assert all(r.error is None and r.run_id is None for r in replayed.rows)


def test_replaying_results_without_a_cells_run_is_an_error_of_that_cell(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    (tmp_path / "first.jsonl").write_text("")
    report = agentscript.evaluate(
        folder / "classifier.as",
        [{"id": "a", "input": {"ticket": "t"}, "expected": "bug"}],
        agentscript.EvalConfig(replay=tmp_path / "first.jsonl"),
    )
    (row,) = report.rows
    assert row.error == f"{tmp_path / 'first.jsonl'} names no journaled run for this cell"
