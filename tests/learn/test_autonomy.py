"""Autonomous runs: the ledger, the read-only approval mode, budgets, outcomes and windows."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.app.autonomy import run_autonomous
from agentscript.app.configuration import RunConfig
from agentscript.cli.main import main
from agentscript.learn import autonomy_ledger
from agentscript.learn.autonomy import (
    DEFAULT_BUDGETS,
    WindowReport,
    classify,
    needs_you,
)
from agentscript.learn.autonomy_ledger import (
    AutonomyRun,
    Kind,
    Ledger,
    format_summary,
    ledger_path,
)
from agentscript.learn.locks import file_lock
from agentscript.learn.profile import ProfileStore
from agentscript.providers.tools.approvals import (
    Answer,
    ApprovalGate,
    ApprovalPolicy,
    ApprovalRequest,
)
from agentscript.providers.tools.files import FileTools
from agentscript.providers.tools.registry import ToolRegistry
from agentscript.providers.tools.workspace import Workspace
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall
from autonomy_support import (
    ECHO,
    NOW,
    PURSUER,
    REVIEWER,
    WRITER,
    MeteredModel,
    Ticker,
    ledger_run,
    write_program,
)

HOUR = 3600.0
DAY = 24 * HOUR

# ------------------------------------------------------------------------------ the ledger


def test_a_run_is_one_json_line_with_the_recorded_fields(tmp_path: Path) -> None:
    ledger = Ledger.for_workspace(tmp_path)
    run = ledger_run("desire", "blocked", tokens=(1200, 300), tool_calls=2, note="x", task="rust")

    assert ledger.append(run) is None

    path = tmp_path / ".agentscript" / "autonomy" / "runs.jsonl"
    assert ledger.path == path == ledger_path(tmp_path)
    assert ledger.lock_path == path.with_name("runs.jsonl.lock")
    (line,) = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(line) == {
        "kind": "desire",
        "task": "rust",
        "started_at": "2027-01-15T08:00:00.000Z",
        "duration_ms": 1500,
        "input_tokens": 1200,
        "output_tokens": 300,
        "tool_calls": 2,
        "outcome": "blocked",
        "note": "x",
    }
    assert ledger.read() == [run]


def test_a_run_without_a_task_has_no_task_field(tmp_path: Path) -> None:
    ledger = Ledger.for_workspace(tmp_path)
    ledger.append(ledger_run())
    assert "task" not in json.loads(ledger.path.read_text(encoding="utf-8"))


def test_a_missing_ledger_has_no_runs(tmp_path: Path) -> None:
    assert Ledger.for_workspace(tmp_path).read() == []
    assert Ledger.for_workspace(tmp_path).summary().total.runs == 0


def test_malformed_lines_are_skipped_when_reading(tmp_path: Path) -> None:
    ledger = Ledger.for_workspace(tmp_path)
    first, last = ledger_run(task="first"), ledger_run(task="last", at=NOW + 60)
    good = [json.dumps(run.to_json()) for run in (first, last)]
    bad = [
        "not json at all",
        "[1, 2, 3]",
        json.dumps({**first.to_json(), "kind": "dream"}),
        json.dumps({**first.to_json(), "outcome": "maybe"}),
        json.dumps({**first.to_json(), "input_tokens": -5}),
        json.dumps({**first.to_json(), "tool_calls": True}),
        json.dumps({**first.to_json(), "started_at": "yesterday"}),
        json.dumps({key: value for key, value in first.to_json().items() if key != "note"})[:-1],
        "",
        '{"kind": "idle"',
    ]
    ledger.path.parent.mkdir(parents=True)
    ledger.path.write_text("\n".join([good[0], *bad, good[1]]) + "\n", encoding="utf-8")

    assert ledger.read() == [first, last]


def test_a_record_without_a_note_reads_with_an_empty_note(tmp_path: Path) -> None:
    ledger = Ledger.for_workspace(tmp_path)
    data = ledger_run().to_json()
    del data["note"]
    ledger.path.parent.mkdir(parents=True)
    ledger.path.write_text(json.dumps(data) + "\n", encoding="utf-8")
    assert ledger.read() == [ledger_run()]


def test_reading_since_leaves_out_older_runs(tmp_path: Path) -> None:
    ledger = Ledger.for_workspace(tmp_path)
    runs = [ledger_run(at=NOW + offset, task=str(offset)) for offset in (0, 10, 20)]
    for run in runs:
        ledger.append(run)
    assert ledger.read(since=NOW + 10) == runs[1:]
    assert ledger.read(since=NOW + 21) == []


def test_trimming_to_the_cap_keeps_the_newest_lines(tmp_path: Path) -> None:
    ledger = Ledger.for_workspace(tmp_path, max_lines=5)
    for index in range(12):
        assert ledger.append(ledger_run(task=f"t{index}")) is None

    assert [run.task for run in ledger.read()] == ["t7", "t8", "t9", "t10", "t11"]
    assert len(ledger.path.read_text(encoding="utf-8").splitlines()) == 5
    assert sorted(path.name for path in ledger.path.parent.iterdir()) == ["runs.jsonl"]


def test_the_default_cap_is_two_thousand_lines(tmp_path: Path) -> None:
    ledger = Ledger.for_workspace(tmp_path)
    line = json.dumps(ledger_run(task="old").to_json()) + "\n"
    ledger.path.parent.mkdir(parents=True)
    ledger.path.write_text(line * 2000, encoding="utf-8")

    ledger.append(ledger_run(task="new"))

    runs = ledger.read()
    assert autonomy_ledger.MAX_LINES == 2000
    assert len(runs) == 2000
    assert runs[-1].task == "new"
    assert [run.task for run in runs].count("old") == 1999


def test_a_torn_last_line_does_not_swallow_the_next_record(tmp_path: Path) -> None:
    ledger = Ledger.for_workspace(tmp_path)
    kept = ledger_run(task="kept")
    torn = json.dumps(ledger_run(task="torn").to_json())[:40]
    ledger.path.parent.mkdir(parents=True)
    ledger.path.write_text(json.dumps(kept.to_json()) + "\n" + torn, encoding="utf-8")

    ledger.append(ledger_run(task="next"))

    assert [run.task for run in ledger.read()] == ["kept", "next"]


def test_a_ledger_that_cannot_be_written_reports_instead_of_raising(tmp_path: Path) -> None:
    (tmp_path / ".agentscript").write_text("a file where a directory should be")
    problem = Ledger.for_workspace(tmp_path).append(ledger_run())
    assert problem is not None
    assert problem.startswith("Cannot record the autonomous run in ")


def test_a_held_lock_is_reported_not_waited_for_forever(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(autonomy_ledger, "LOCK_TIMEOUT", 0.0)
    ledger = Ledger.for_workspace(tmp_path)
    with file_lock(ledger.lock_path):
        problem = ledger.append(ledger_run())
    assert problem is not None
    assert "Timed out" in problem
    assert ledger.read() == []
    assert ledger.append(ledger_run()) is None


def test_a_cap_below_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_lines"):
        Ledger(tmp_path / "runs.jsonl", max_lines=0)


_WRITER_SCRIPT = textwrap.dedent(
    """
    import sys
    from agentscript.learn.autonomy_ledger import AutonomyRun, Ledger

    ledger = Ledger(sys.argv[1], max_lines=int(sys.argv[4]))
    name = sys.argv[2]
    for index in range(int(sys.argv[3])):
        run = AutonomyRun("heartbeat", 1800000000.0 + index, 5, 10, 2, 0, "done",
                          note="x" * 200, task=f"{name}-{index}")
        problem = ledger.append(run)
        if problem is not None:
            sys.exit(problem)
    """
)


def _append_from_two_processes(path: Path, cap: int) -> list[dict[str, Any]]:
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER_SCRIPT, str(path), name, "500", str(cap)])
        for name in ("a", "b")
    ]
    assert [writer.wait(timeout=300) for writer in writers] == [0, 0]
    # A torn line would not parse.
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_two_processes_appending_500_times_each_lose_and_tear_nothing(tmp_path: Path) -> None:
    records = _append_from_two_processes(tmp_path / "runs.jsonl", cap=2000)

    assert len(records) == 1000
    tasks = sorted(record["task"] for record in records)
    assert tasks == sorted(f"{name}-{index}" for name in "ab" for index in range(500))
    for name in "ab":
        mine = [record["task"] for record in records if record["task"].startswith(name)]
        assert mine == [f"{name}-{index}" for index in range(500)]


def test_trimming_under_contention_keeps_each_writers_newest_lines(tmp_path: Path) -> None:
    records = _append_from_two_processes(tmp_path / "runs.jsonl", cap=100)

    assert len(records) == 100
    for name in "ab":
        mine = [int(record["task"][2:]) for record in records if record["task"][0] == name]
        # The newest lines of each writer, none missing between its oldest kept and its last.
        assert mine == list(range(500 - len(mine), 500))


# ------------------------------------------------------------------------------ the summary


def _fixture_ledger(path: Path) -> Ledger:
    """Eight runs over three days before NOW, and one run too old for a 7-day summary."""
    ledger = Ledger(path, clock=lambda: NOW)
    runs = [
        ledger_run("idle", "done", at=NOW - 8 * DAY, tokens=(999, 1)),
        ledger_run("heartbeat", "done", at=NOW - 3 * DAY, tokens=(40_000, 2_000), tool_calls=3),
        ledger_run("heartbeat", "no-update", at=NOW - 2 * DAY, note="(no update)"),
        ledger_run(
            "heartbeat",
            "blocked",
            at=NOW - 2 * DAY + HOUR,
            tokens=(480_000, 25_000),
            note="Token budget exceeded: 505,000 tokens used, 500,000 were left in the window",
        ),
        ledger_run("idle", "done", at=NOW - DAY, tokens=(12_000, 800), duration_ms=42_000),
        ledger_run("idle", "no-update", at=NOW - DAY + HOUR, tokens=(3_000, 50), note="rest"),
        ledger_run(
            "desire",
            "blocked",
            at=NOW - 5 * HOUR,
            tokens=(900, 100),
            tool_calls=1,
            task="tidy-notes",
            note="File.write is not allowed in autonomous runs",
        ),
        ledger_run("desire", "done", at=NOW - 2 * HOUR, tokens=(7_000, 1_500), task="learn-rust"),
        ledger_run("review", "error", at=NOW - HOUR, tokens=(0, 0), note="No run 'x'"),
    ]
    for run in runs:
        ledger.append(run)
    return ledger


def test_summary_counts_tokens_and_outcomes_per_kind(tmp_path: Path) -> None:
    summary = _fixture_ledger(tmp_path / "runs.jsonl").summary(days=7)

    assert [kind.kind for kind in summary.kinds] == ["idle", "heartbeat", "review", "desire"]
    by_kind = {kind.kind: kind for kind in summary.kinds}
    assert by_kind["idle"].runs == 2
    assert by_kind["idle"].input_tokens == 15_000
    assert by_kind["heartbeat"].outcomes == {
        "done": 1,
        "no-update": 1,
        "blocked": 1,
        "error": 0,
    }
    assert summary.total.runs == 8
    assert summary.total.input_tokens == 543_000
    assert summary.total.output_tokens == 29_470
    assert summary.total.outcomes == {"done": 3, "no-update": 2, "blocked": 2, "error": 1}
    assert [run.started_at for run in summary.recent] == sorted(
        (run.started_at for run in summary.recent), reverse=True
    )
    assert summary.recent[0].kind == "review"


def test_summary_lists_at_most_the_last_ten_runs(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "runs.jsonl", clock=lambda: NOW)
    for index in range(14):
        ledger.append(ledger_run(at=NOW - 100 + index, task=f"t{index}"))
    summary = ledger.summary()
    assert summary.total.runs == 14
    assert [run.task for run in summary.recent] == [f"t{index}" for index in range(13, 3, -1)]


def test_summary_as_text(tmp_path: Path) -> None:
    summary = _fixture_ledger(tmp_path / "runs.jsonl").summary(days=7)
    text = format_summary(summary, ["Lisa/learn-go: Run the Go toolchain to learn Go"])
    assert text == textwrap.dedent(
        """\
        Autonomous runs, last 7 days (since 2027-01-08 08:00 UTC)

        KIND       RUNS  DONE  NO-UPDATE  BLOCKED  ERROR  IN TOKENS  OUT TOKENS
        idle          2     1          1        0      0     15,000         850
        heartbeat     3     1          1        1      0    520,100      27,020
        review        1     0          0        0      1          0           0
        desire        2     1          0        1      0      7,900       1,600
        total         8     3          2        2      1    543,000      29,470

        Outcomes
        done       ##############################  3
        no-update  ####################            2
        blocked    ####################            2
        error      ##########                      1

        Last 8 runs
        STARTED (UTC)     KIND       OUTCOME     TIME   TOKENS  TOOLS  TASK / NOTE
        2027-01-15 07:00  review     error       1.5s        0      0  No run 'x'
        2027-01-15 06:00  desire     done        1.5s    8,500      0  learn-rust
        2027-01-15 03:00  desire     blocked     1.5s    1,000      1  tidy-notes: File.write is not allowed in autonomous runs
        2027-01-14 09:00  idle       no-update   1.5s    3,050      0  rest
        2027-01-14 08:00  idle       done       42.0s   12,800      0  -
        2027-01-13 09:00  heartbeat  blocked     1.5s  505,000      0  Token budget exceeded: 505,000 tokens used, 500,000 were left in the window
        2027-01-13 08:00  heartbeat  no-update   1.5s      120      0  (no update)
        2027-01-12 08:00  heartbeat  done        1.5s   42,000      3  -

        needs you: Lisa/learn-go: Run the Go toolchain to learn Go"""
    )


def test_summary_without_runs_says_so(tmp_path: Path) -> None:
    summary = Ledger(tmp_path / "runs.jsonl", clock=lambda: NOW).summary(days=1)
    assert format_summary(summary) == (
        "Autonomous runs, last 1 days (since 2027-01-14 08:00 UTC)\n(no runs)"
    )


def test_summary_json_round_trips_the_numbers(tmp_path: Path) -> None:
    data = _fixture_ledger(tmp_path / "runs.jsonl").summary(days=7).to_json()
    assert data["total"] == {
        "kind": "total",
        "runs": 8,
        "input_tokens": 543_000,
        "output_tokens": 29_470,
        "outcomes": {"done": 3, "no-update": 2, "blocked": 2, "error": 1},
    }
    assert data["since"] == "2027-01-08T08:00:00.000Z"
    assert len(data["recent"]) == 8
    runs = [AutonomyRun.from_json(run) for run in data["recent"]]
    assert runs == _fixture_ledger(tmp_path / "again.jsonl").summary(days=7).recent


# ------------------------------------------------------------------------------ approvals


class _NoAsking:
    """An approver that fails the test if it is ever asked."""

    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return "yes"


def _gate(tmp_path: Path, policy: ApprovalPolicy | None = None) -> tuple[ApprovalGate, _NoAsking]:
    asker = _NoAsking()
    registry = ToolRegistry({"file": FileTools(Workspace(tmp_path))})
    return ApprovalGate(registry, policy=policy, mode="autonomous", ask_user=asker), asker


def _call(method: str, args: dict[str, Any], events: list[tuple[str, dict[str, Any]]]) -> ToolCall:
    return ToolCall(
        "File",
        "file://workspace",
        method,
        [args],
        on_event=lambda kind, data: events.append((kind, data)),
    )


def test_autonomous_mode_runs_reads_and_refuses_effects_without_asking(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("old")
    gate, asker = _gate(tmp_path)
    events: list[tuple[str, dict[str, Any]]] = []

    assert gate.call(_call("read", {"path": "notes.md"}, events)) == "old"
    with pytest.raises(ExecutionError) as refused:
        gate.call(_call("write", {"path": "notes.md", "content": "new"}, events))

    assert str(refused.value) == (
        "File.write is not allowed in autonomous runs: they may only read, "
        "and this call's risk is effect"
    )
    assert (tmp_path / "notes.md").read_text() == "old"
    assert asker.asked == []
    assert [(data["decision"], data.get("by"), data["mode"]) for _, data in events] == [
        ("pending", None, "autonomous"),
        ("refused", "autonomous", "autonomous"),
    ]


def test_autonomous_mode_overrules_a_policy_that_would_run_an_effect(tmp_path: Path) -> None:
    policy = ApprovalPolicy.from_data({"rules": [{"method": "write", "decision": "run"}]})
    gate, asker = _gate(tmp_path, policy)
    with pytest.raises(ExecutionError, match="not allowed in autonomous runs"):
        gate.call(_call("write", {"path": "a.md", "content": "x"}, []))
    assert not (tmp_path / "a.md").exists()
    assert asker.asked == []


def test_autonomous_mode_refuses_reads_a_policy_asks_or_denies(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("a")
    asks = ApprovalPolicy.from_data({"defaults": {"read": "ask"}})
    denies = ApprovalPolicy.from_data({"defaults": {"read": "deny"}})
    gate, asker = _gate(tmp_path, asks)
    with pytest.raises(ExecutionError, match="asking is not allowed in autonomous runs"):
        gate.call(_call("read", {"path": "a.md"}, []))
    gate, asker = _gate(tmp_path, denies)
    with pytest.raises(ExecutionError, match="refused by the approval policy"):
        gate.call(_call("read", {"path": "a.md"}, []))
    assert asker.asked == []


# ------------------------------------------------------------------------------ runs


def _run(
    workspace: Path,
    source: str,
    model: MeteredModel,
    kind: Kind = "idle",
    **options: Any,
) -> WindowReport:
    """An autonomous window over `source` in `workspace`, answered by `model`, on the ticking
    clock, without journaling unless a test asks for it."""
    overrides = {"model": model, "journal": False, "learn": False}
    overrides.update(options.pop("overrides", {}))
    return run_autonomous(
        write_program(workspace, source),
        kind,
        workspace=workspace,
        config_overrides=overrides,
        clock=options.pop("clock", Ticker()),
        **options,
    )


def test_a_run_that_returns_a_value_is_done_and_recorded(tmp_path: Path) -> None:
    model = MeteredModel([("Two runs of report.as failed; worth a look.", 120, 30)])

    report = _run(tmp_path, ECHO, model)

    expected = AutonomyRun(
        kind="idle",
        started_at=NOW + 0.25,
        duration_ms=250,
        input_tokens=120,
        output_tokens=30,
        tool_calls=0,
        outcome="done",
    )
    assert report.runs == [expected]
    assert report.stopped == "window"
    assert report.spent_tokens == 150
    assert report.problems == []
    assert not report.failed
    assert Ledger.for_workspace(tmp_path).read() == [expected]


@pytest.mark.parametrize(
    ("answer", "note"),
    [
        (None, "returned nothing"),
        ("", "returned an empty answer"),
        ("   \n", "returned an empty answer"),
        ("(no update)", "(no update)"),
        ("Looked at the notes again. (No update)", "(no update)"),
        ({"rest": True}, "rest"),
        ({"rest": True, "note": "all quiet\nnothing new"}, "all quiet nothing new"),
        ({}, "returned an empty value"),
        ([], "returned an empty value"),
    ],
)
def test_resting_answers_are_no_update(tmp_path: Path, answer: Any, note: str) -> None:
    report = _run(tmp_path, ECHO, MeteredModel([(answer, 10, 1)]))
    (run,) = report.runs
    assert (run.outcome, run.note) == ("no-update", note)
    assert report.stopped == "rest"


@pytest.mark.parametrize(
    "value",
    ["(no update) but then I did write the summary", {"rest": False}, {"a": 1}, [0], 0, False],
)
def test_anything_else_returned_is_done(value: Any) -> None:
    assert classify(value) == ("done", "")


def test_a_failing_run_is_an_error_with_its_message(tmp_path: Path) -> None:
    model = MeteredModel([(ExecutionError("the model endpoint is down"), 0, 0)])

    report = _run(tmp_path, ECHO, model)

    (run,) = report.runs
    assert run.outcome == "error"
    assert "the model endpoint is down" in run.note
    assert (run.input_tokens, run.output_tokens) == (0, 0)
    assert report.failed
    assert Ledger.for_workspace(tmp_path).read() == report.runs


def test_exceeding_the_token_budget_blocks_the_run_with_its_tokens(tmp_path: Path) -> None:
    model = MeteredModel([("A very long reflection.", 900, 300)])

    report = _run(tmp_path, ECHO, model, budget_tokens=1000)

    (run,) = report.runs
    assert run.outcome == "blocked"
    assert (run.input_tokens, run.output_tokens) == (900, 300)
    assert run.note == "Token budget exceeded: 1,200 tokens used, 1,000 were left in the window"
    assert report.budget_tokens == 1000
    assert not report.failed
    assert Ledger.for_workspace(tmp_path).read() == report.runs


def test_a_budget_of_zero_means_no_budget(tmp_path: Path) -> None:
    report = _run(tmp_path, ECHO, MeteredModel([("Done.", 10**7, 10**6)]), budget_tokens=0)
    assert report.budget_tokens is None
    assert [run.outcome for run in report.runs] == ["done"]


@pytest.mark.parametrize("kind", ["idle", "heartbeat", "review", "desire"])
def test_each_kind_has_its_default_budget(tmp_path: Path, kind: Kind) -> None:
    report = _run(tmp_path, PURSUER, MeteredModel([("ok", 1, 1)]), kind)
    assert report.budget_tokens == DEFAULT_BUDGETS[kind]
    assert DEFAULT_BUDGETS == {
        "idle": 200_000,
        "heartbeat": 500_000,
        "review": 100_000,
        "desire": 100_000,
    }


def test_an_effectful_call_is_refused_not_asked_and_blocks_the_run(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("old notes")
    # Even a policy that lets File.write run does not let an autonomous run write.
    policy = tmp_path / "approvals.json"
    policy.write_text(json.dumps({"rules": [{"method": "write", "decision": "run"}]}))
    model = MeteredModel([("new notes", 50, 10)])

    report = _run(tmp_path, WRITER, model, overrides={"approvals": policy})

    (run,) = report.runs
    assert run.outcome == "blocked"
    assert "File.write is not allowed in autonomous runs" in run.note
    assert run.tool_calls == 2  # the read that ran and the write that was refused
    assert (run.input_tokens, run.output_tokens) == (50, 10)
    assert (tmp_path / "notes.md").read_text() == "old notes"


def test_a_call_a_policy_denies_also_blocks_the_run(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("old notes")
    policy = tmp_path / "approvals.json"
    policy.write_text(json.dumps({"rules": [{"method": "write", "decision": "deny"}]}))

    report = _run(tmp_path, WRITER, MeteredModel([("new", 5, 5)]), overrides={"approvals": policy})

    (run,) = report.runs
    assert run.outcome == "blocked"
    assert "File.write was refused by the approval policy" in run.note
    assert (tmp_path / "notes.md").read_text() == "old notes"


def test_an_autonomous_run_cannot_be_given_an_approver_or_other_tools(tmp_path: Path) -> None:
    for overrides in (
        {"ask_user": lambda request: "yes"},
        {"mock_tools": True},
        {"max_tokens": 10},
        {"workspace": tmp_path / "elsewhere"},
    ):
        with pytest.raises(ValueError, match="Autonomous runs set"):
            _run(tmp_path, ECHO, MeteredModel([("x", 1, 1)]), overrides=overrides)
    assert Ledger.for_workspace(tmp_path).read() == []


def test_a_window_must_hold_a_task_and_a_budget_cannot_be_negative(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="window"):
        _run(tmp_path, ECHO, MeteredModel([("x", 1, 1)]), window=0)
    with pytest.raises(ValueError, match="budget_tokens"):
        _run(tmp_path, ECHO, MeteredModel([("x", 1, 1)]), budget_tokens=-1)


def test_a_window_stops_at_the_first_rest(tmp_path: Path) -> None:
    model = MeteredModel(
        [
            ("Sorted the inbox.", 10, 5),
            ("Read the log.", 10, 5),
            ("(no update)", 10, 1),
            ("x", 1, 1),
        ]
    )

    report = _run(tmp_path, ECHO, model, "heartbeat", window=5)

    assert [run.outcome for run in report.runs] == ["done", "done", "no-update"]
    assert report.stopped == "rest"
    assert len(model.requests) == 3
    assert [run.started_at for run in report.runs] == [NOW + 0.25, NOW + 0.75, NOW + 1.25]


def test_a_window_runs_at_most_k_tasks(tmp_path: Path) -> None:
    model = MeteredModel([("Did something.", 10, 5)])
    report = _run(tmp_path, ECHO, model, "heartbeat", window=3)
    assert [run.outcome for run in report.runs] == ["done"] * 3
    assert report.stopped == "window"


def test_a_window_stops_launching_tasks_once_its_budget_is_spent(tmp_path: Path) -> None:
    model = MeteredModel([("Did something.", 300, 100)])

    report = _run(tmp_path, ECHO, model, "heartbeat", window=5, budget_tokens=800)

    assert [run.outcome for run in report.runs] == ["done", "done"]
    assert report.stopped == "budget"
    assert report.spent_tokens == 800
    assert len(model.requests) == 2


def test_the_task_that_overspends_the_window_is_blocked_and_the_last(tmp_path: Path) -> None:
    model = MeteredModel([("Did something.", 300, 100)])

    report = _run(tmp_path, ECHO, model, "heartbeat", window=5, budget_tokens=1000)

    assert [run.outcome for run in report.runs] == ["done", "done", "blocked"]
    assert [run.tokens for run in report.runs] == [400, 400, 400]
    assert "200 were left in the window" in report.runs[-1].note
    assert report.stopped == "budget"


def test_a_program_that_does_not_load_is_one_recorded_error(tmp_path: Path) -> None:
    report = _run(tmp_path, "main agent {", MeteredModel([("x", 1, 1)]), window=3)

    (run,) = report.runs
    assert run.outcome == "error"
    assert "agent.as" in run.note
    assert report.stopped == "unrunnable"
    assert report.failed
    assert Ledger.for_workspace(tmp_path).read() == report.runs


def test_a_model_that_cannot_be_set_up_is_one_recorded_error(tmp_path: Path) -> None:
    report = run_autonomous(
        write_program(tmp_path, ECHO),
        "heartbeat",
        workspace=tmp_path,
        window=3,
        config_overrides={"model": "mock", "responses": tmp_path / "missing.json"},
        clock=Ticker(),
    )

    (run,) = report.runs
    assert run.outcome == "error"
    assert "Scripted responses not found" in run.note
    assert report.stopped == "unrunnable"


def test_a_ledger_that_cannot_be_written_does_not_fail_the_run(tmp_path: Path) -> None:
    (tmp_path / ".agentscript").write_text("not a directory")

    report = _run(tmp_path, ECHO, MeteredModel([("Done.", 5, 5)]))

    assert [run.outcome for run in report.runs] == ["done"]
    # The lock, the recap and the ledger could not be had: each is said, none failed the run.
    assert [problem.split(":")[0] for problem in report.problems] == [
        "The idle window ran without its lock",
        "No recap for the idle window",
        "Cannot record the autonomous run in " + str(tmp_path / ".agentscript/autonomy/runs.jsonl"),
    ]


# ------------------------------------------------------------------------------ desires

# What the user can do for learn-go, a needs-user desire with a prompt.
LEARN_GO_ACTION = " — you can: ask: Run go test"


def _desire(slug: str, intensity: float, **fields: Any) -> dict[str, Any]:
    return {
        "op": "desire_add",
        "slug": slug,
        "what": f"Wants to {slug.replace('-', ' ')}",
        "why": "Because it came up in a conversation.",
        "intensity": intensity,
        **fields,
    }


def _give_desires(workspace: Path, agent: str, *desires: dict[str, Any]) -> None:
    store = ProfileStore(workspace, clock=lambda: NOW - HOUR)
    for desire in desires:
        result = store.apply(agent, desire, who="test", why="fixture")
        assert result.ok, result.message


def _lisas_desires(workspace: Path) -> None:
    _give_desires(
        workspace,
        "Lisa",
        _desire("learn-go", 1.0, actionable=True, pursuit="needs-user", prompt="Run go test"),
        _desire("see-the-sea", 0.95),  # not actionable
        _desire("learn-rust", 0.9, actionable=True, prompt="Read chapter 1 of the Rust book"),
        _desire("tidy-notes", 0.5, actionable=True),
    )


def test_a_desire_window_pursues_the_strongest_desire_it_can_pursue_alone(
    tmp_path: Path,
) -> None:
    _lisas_desires(tmp_path)
    model = MeteredModel([("Read the first chapter.", 40, 20)])

    report = _run(tmp_path, PURSUER, model, "desire")

    (run,) = report.runs
    assert (run.task, run.outcome) == ("learn-rust", "done")
    (request,) = model.requests
    assert request.context[0].value == {
        "slug": "learn-rust",
        "what": "Wants to learn rust",
        "prompt": "Read chapter 1 of the Rust book",
    }
    assert [desire.slug for desire in report.needs_user] == ["learn-go"]
    assert report.to_json()["needs_user"] == ["learn-go: Wants to learn go" + LEARN_GO_ACTION]


def test_a_desire_window_of_k_never_pursues_a_desire_that_needs_the_user(
    tmp_path: Path,
) -> None:
    _lisas_desires(tmp_path)
    model = MeteredModel([("Took a step.", 40, 20)])

    report = _run(tmp_path, PURSUER, model, "desire", window=5)

    assert [run.task for run in report.runs] == ["learn-rust", "tidy-notes"]
    assert [request.context[0].value["slug"] for request in model.requests] == [
        "learn-rust",
        "tidy-notes",
    ]
    assert report.stopped == "window"


def test_a_desire_window_with_nothing_to_pursue_rests_and_says_why(tmp_path: Path) -> None:
    _give_desires(tmp_path, "Lisa", _desire("learn-go", 1.0, actionable=True, pursuit="needs-user"))
    model = MeteredModel([("x", 1, 1)])

    report = _run(tmp_path, PURSUER, model, "desire")

    (run,) = report.runs
    assert (run.outcome, run.note, run.tokens) == (
        "no-update",
        "no open desire it can pursue on its own",
        0,
    )
    assert report.stopped == "nothing-to-do"
    assert model.requests == []
    assert [desire.slug for desire in report.needs_user] == ["learn-go"]


def test_needs_you_lists_every_agents_waiting_desires(tmp_path: Path) -> None:
    _lisas_desires(tmp_path)
    _give_desires(
        tmp_path,
        "Scribe",
        _desire("get-a-printer", 0.7, actionable=True, pursuit="needs-user"),
        _desire("write-more", 0.7, actionable=True),
    )
    assert needs_you(tmp_path, NOW) == [
        "Lisa/learn-go: Wants to learn go" + LEARN_GO_ACTION,
        "Scribe/get-a-printer: Wants to get a printer — you can: do it with the agent in an "
        "attended run, or close the desire",
    ]
    assert needs_you(tmp_path / "nobody", NOW) == []


# ------------------------------------------------------------------------------ reviews


def test_a_review_is_given_the_recap_of_recent_runs(tmp_path: Path) -> None:
    earlier = agentscript.run(
        agentscript.load(write_program(tmp_path, ECHO, "earlier.as")),
        {},
        RunConfig(model=MeteredModel([("fine", 1, 1)]), learn=False),
    )
    assert earlier.journal is not None
    assert earlier.journal.wait(30) == []
    model = MeteredModel([("One run, and it went fine.", 30, 10)])

    report = _run(
        tmp_path,
        REVIEWER,
        model,
        "review",
        clock=Ticker(start=time.time()),
        overrides={"journal": True},
    )

    assert [run.outcome for run in report.runs] == ["done"]
    recap = model.requests[0].context[0].value
    assert recap["runs"] == 1
    assert recap["ok"] == 1
    assert [program["program"] for program in recap["programs"]] == ["earlier.as"]


# ------------------------------------------------------------------------------ the command line


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["autonomy", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _answers(workspace: Path, *answers: Any) -> str:
    path = workspace / "answers.json"
    path.write_text(json.dumps(list(answers)), encoding="utf-8")
    return str(path)


def test_cli_run_records_the_run_in_the_programs_workspace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = write_program(tmp_path, ECHO)
    answers = _answers(tmp_path, "Sorted the inbox.", "(no update)", "More.")

    code, out, err = _cli(
        capsys, "run", str(program), "--kind", "heartbeat", "--window", "3", "--mock", answers
    )

    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("heartbeat  done  0 tokens  0 tool calls  ")
    assert lines[1].startswith("heartbeat  no-update  0 tokens  0 tool calls  ")
    assert lines[1].endswith("  (no update)")
    assert lines[2:] == ["window: 2 run(s), stopped: rest, 0 of 500,000 tokens"]
    runs = Ledger.for_workspace(tmp_path).read()
    assert [(run.kind, run.outcome) for run in runs] == [
        ("heartbeat", "done"),
        ("heartbeat", "no-update"),
    ]


def test_cli_run_refuses_effects_without_asking_even_at_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def nobody_may_ask(prompt: str = "") -> str:
        raise AssertionError(f"an autonomous run asked: {prompt}")

    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setattr("builtins.input", nobody_may_ask)
    (tmp_path / "notes.md").write_text("old notes")
    program = write_program(tmp_path, WRITER)

    code, out, _ = _cli(
        capsys,
        "run",
        str(program),
        "--kind",
        "idle",
        "--budget-tokens",
        "0",
        "--mock",
        _answers(tmp_path, "new notes"),
        "--input",
        '{"why": "tick"}',
    )

    assert code == 0
    assert out.startswith("idle  blocked  0 tokens  2 tool calls  ")
    assert "File.write is not allowed in autonomous runs" in out
    assert out.splitlines()[-1] == "window: 1 run(s), stopped: window, 0 tokens"
    assert (tmp_path / "notes.md").read_text() == "old notes"


def test_cli_run_exits_1_when_a_run_ends_in_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = write_program(tmp_path, "main agent {")
    workspace = tmp_path / "elsewhere"

    code, out, _ = _cli(
        capsys, "run", str(program), "--kind", "review", "--workspace", str(workspace)
    )

    assert code == 1
    assert out.startswith("review  error  0 tokens  0 tool calls  0.0s  ")
    assert [run.outcome for run in Ledger.for_workspace(workspace).read()] == ["error"]
    assert not (tmp_path / ".agentscript").exists()


def test_cli_desire_run_shows_what_needs_the_user(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _lisas_desires(tmp_path)
    program = write_program(tmp_path, PURSUER)

    code, out, _ = _cli(
        capsys, "run", str(program), "--kind", "desire", "--mock", _answers(tmp_path, "A step.")
    )

    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("desire  learn-rust  done  ")
    assert lines[-1] == "needs you: learn-go: Wants to learn go" + LEARN_GO_ACTION


def test_cli_run_rejects_input_that_is_not_an_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = write_program(tmp_path, ECHO)
    code, _, err = _cli(capsys, "run", str(program), "--kind", "idle", "--input", "[1]")
    assert (code, err) == (1, "--input must be a JSON object\n")
    assert Ledger.for_workspace(tmp_path).read() == []


def _recent_ledger(workspace: Path) -> None:
    """Runs of the last hours by the real clock: `summary` looks back from now."""
    now = time.time()
    ledger = Ledger.for_workspace(workspace)
    ledger.append(ledger_run("idle", "done", at=now - 3 * HOUR, tokens=(1000, 200)))
    ledger.append(ledger_run("idle", "blocked", at=now - 2 * HOUR, tokens=(5000, 900)))
    ledger.append(ledger_run("desire", "done", at=now - HOUR, task="learn-rust"))
    ledger.append(ledger_run("heartbeat", "done", at=now - 30 * DAY))


def test_cli_summary_in_a_pipe_is_plain_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _recent_ledger(tmp_path)
    _lisas_desires(tmp_path)

    code, out, _ = _cli(capsys, "summary", "--workspace", str(tmp_path))

    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("Autonomous runs, last 7 days (since ")
    rows = [line.split() for line in lines]
    assert [
        "KIND",
        "RUNS",
        "DONE",
        "NO-UPDATE",
        "BLOCKED",
        "ERROR",
        "IN",
        "TOKENS",
        "OUT",
        "TOKENS",
    ] in rows
    assert ["idle", "2", "1", "0", "1", "0", "6,000", "1,100"] in rows
    assert ["desire", "1", "1", "0", "0", "0", "100", "20"] in rows
    assert ["total", "3", "2", "0", "1", "0", "6,100", "1,120"] in rows
    assert "heartbeat" not in out
    assert lines[-1] == "needs you: Lisa/learn-go: Wants to learn go" + LEARN_GO_ACTION
    assert "\x1b[" not in out


def test_cli_summary_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _recent_ledger(tmp_path)
    _lisas_desires(tmp_path)

    code, out, _ = _cli(capsys, "summary", "--workspace", str(tmp_path), "--json", "--days", "60")

    assert code == 0
    data = json.loads(out)
    assert data["days"] == 60
    assert data["total"]["runs"] == 4
    assert [kind["kind"] for kind in data["kinds"]] == ["idle", "heartbeat", "desire"]
    assert [run["kind"] for run in data["recent"]] == ["desire", "idle", "idle", "heartbeat"]
    assert data["needs_you"] == ["Lisa/learn-go: Wants to learn go" + LEARN_GO_ACTION]


def test_cli_summary_at_a_terminal_draws_tables_and_bars(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _recent_ledger(tmp_path)
    _lisas_desires(tmp_path)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "160")

    code, out, _ = _cli(capsys, "summary", "--workspace", str(tmp_path))

    assert code == 0
    assert "Autonomous runs, last 7 days" in out
    assert "█" * 30 in out  # the larger outcome, done, has the full bar
    assert "█" * 15 in out.replace("█" * 30, "")  # blocked has half of it
    assert "learn-rust" in out
    assert "needs you: Lisa/learn-go: Wants to learn go" + LEARN_GO_ACTION in out


def test_cli_summary_of_an_empty_workspace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _cli(capsys, "summary", "--workspace", str(tmp_path))
    assert code == 0
    assert out.splitlines()[1:] == ["(no runs)"]


# A desire pursuit that needs to write: refused in an autonomous run.
WRITING_PURSUER = """
import llm M from "openai://m"
import tool File from "file://workspace"

main agent Lisa {
  model M
  role "curious assistant"
  description "Pursues its own interests."
  main func(input) {
    use input.desire
    File.write({ path: "notes.md", content: input.desire.slug })
    return { desire: input.desire.slug }
  }
}
"""


def test_a_desire_the_agent_cannot_pursue_alone_is_switched_to_needs_user(
    tmp_path: Path,
) -> None:
    _give_desires(tmp_path, "Lisa", _desire("tidy-notes", 0.5, actionable=True))
    model = MeteredModel([("x", 1, 1)])

    first = _run(tmp_path, WRITING_PURSUER, model, "desire")
    second = _run(tmp_path, WRITING_PURSUER, model, "desire")

    assert [(run.task, run.outcome) for run in first.runs] == [("tidy-notes", "blocked")]
    desire = ProfileStore(tmp_path).load("Lisa").desire("tidy-notes")
    assert desire is not None and desire.pursuit == "needs-user"
    # The next window does not try it again, and lists it for the user.
    assert second.stopped == "nothing-to-do"
    assert [view.slug for view in second.needs_user] == ["tidy-notes"]


def test_the_refused_desire_says_what_the_user_can_run(tmp_path: Path) -> None:
    _give_desires(tmp_path, "Lisa", _desire("tidy-notes", 0.5, actionable=True))
    _run(tmp_path, WRITING_PURSUER, MeteredModel([("x", 1, 1)]), "desire")

    (line,) = needs_you(tmp_path, NOW)
    assert line.startswith("Lisa/tidy-notes: Wants to tidy notes — you can: it was refused (")
    assert "File.write is not allowed in autonomous runs" in line
    # The command is the same pursuit, run by the user, whose gate asks instead of refusing.
    command = line.split("pursue it with your approval: ", 1)[1]
    assert command.startswith("agentscript run agent.as --input ")
    assert '"slug": "tidy-notes"' in command


def test_a_heartbeat_is_given_the_recap_of_the_runs_since_the_last_one(tmp_path: Path) -> None:
    earlier = agentscript.run(
        agentscript.load(write_program(tmp_path, ECHO, "earlier.as")),
        {},
        RunConfig(model=MeteredModel([("fine", 1, 1)]), learn=False),
    )
    assert earlier.journal is not None and earlier.journal.wait(30) == []
    model = MeteredModel([("One run while you were away.", 30, 10), ("Nothing new.", 30, 10)])
    clock = Ticker(start=time.time())

    first = _run(tmp_path, REVIEWER, model, "heartbeat", clock=clock)
    second = _run(tmp_path, REVIEWER, model, "heartbeat", clock=clock)

    assert [run.outcome for run in first.runs + second.runs] == ["done", "done"]
    recaps = [request.context[0].value for request in model.requests]
    assert (recaps[0]["runs"], recaps[0]["ok"]) == (1, 1)
    # The second heartbeat's recap starts where the first one began: nothing new since.
    assert recaps[1]["runs"] == 0


HOLD_LOCK = """
import sys, time
from pathlib import Path
from agentscript.learn.locks import file_lock
with file_lock(Path(sys.argv[1]), timeout=5):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_second_window_of_a_kind_runs_nothing_while_one_runs(tmp_path: Path) -> None:
    from agentscript.learn.autonomy import window_lock_path

    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(window_lock_path(tmp_path, "idle"))],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        model = MeteredModel([("Done.", 5, 5)])
        busy = _run(tmp_path, ECHO, model)
        other_kind = _run(tmp_path, ECHO, model, "heartbeat")
    finally:
        holder.kill()
        holder.wait()

    assert (busy.stopped, busy.runs, busy.spent_tokens) == ("busy", [], 0)
    assert "Another idle window is running here" in busy.problems[0]
    assert [run.outcome for run in other_kind.runs] == ["done"]  # its own lock, its own budget
    assert [run.kind for run in Ledger.for_workspace(tmp_path).read()] == ["heartbeat"]
    # The killed holder's lock is stale (its pid is gone): the next window runs.
    after = _run(tmp_path, ECHO, MeteredModel([("Done.", 5, 5)]))
    assert [run.outcome for run in after.runs] == ["done"]


def test_autonomy_runs_blocked_by_read_only_mode_teach_nothing(tmp_path: Path) -> None:
    from agentscript.app.learning import catch_up
    from agentscript.learn.graph import NodeType
    from agentscript.learn.journal import Journal, journal_path, wait_for_journal

    (tmp_path / "notes.md").write_text("first note\n", encoding="utf-8")
    database = tmp_path / "memory.db"
    overrides = {"journal": True, "learn": True, "memory_db": database}
    clock = Ticker(start=time.time())
    for _ in range(2):
        report = _run(
            tmp_path, WRITER, MeteredModel([("x", 1, 1)]), clock=clock, overrides=overrides
        )
        assert [run.outcome for run in report.runs] == ["blocked"]
    wait_for_journal()
    assert catch_up(tmp_path, database).problems == []

    journal = Journal.open(journal_path(tmp_path))
    try:
        assert len(journal.store.runs()) == 2
        assert journal.graph.nodes(NodeType.EXPERIENCE) == []
    finally:
        journal.close()
    memory = agentscript.memory.MemoryService.open(tmp_path, database=database)
    with memory:
        found = memory.recall("", tags=["experience"], include_archived=True)
    assert found.count == 0
