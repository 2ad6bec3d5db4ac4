"""Reflection on a finished run: the quality gate (retry, error file, underreflect), per-operation
validation, what each operation changes, what the model is shown, the recap, and the commands."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentscript.cli.main import main
from agentscript.learn.experiences import recall_experiences
from agentscript.learn.journal import Journal
from agentscript.learn.journal_store import JournalEntry, RunRecord
from agentscript.learn.profile import ProfileStore
from agentscript.learn.recap import recap
from agentscript.learn.reflection import (
    REFLECTIONS_DIR,
    MalformedAnswer,
    ReflectionError,
    ReflectionReport,
    ReflectionSettings,
    entry_agent,
    parse_reflection,
    reflect,
)
from agentscript.runtime.errors import ExecutionError
from conftest import RecordingLlm
from experience_support import (
    FOUND,
    READER,
    TALKER,
    journal_of,
    learned_run,
    make_workspace,
    open_memory,
)
from reflection_support import DAY, T0, FixedClock, write_run

TOTAL = {"total": 3}
SECRET = "sk-" + "Q1w2E3r4T5y6U7i8O9p0A1s2"
MODEL = "openai://gpt-4.1-mini"


def answer(*operations: dict[str, Any], summary: str = "I summed the report.") -> str:
    return json.dumps({"summary": summary, "operations": list(operations)})


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def reader_run(workspace: Path, database: Path) -> str:
    """A substantial run: it calls two tools."""
    ran = learned_run(workspace, database, [FOUND, TOTAL])
    assert ran.error is None, ran.error
    return ran.run_id


@pytest.fixture
def talker_run(workspace: Path, database: Path) -> str:
    """A short run: two events, no tool call."""
    ran = learned_run(
        workspace, database, [{"answer": "4", "score": 1}], source=TALKER, name="talker.as"
    )
    assert ran.error is None, ran.error
    return ran.run_id


Reflect = Callable[..., tuple[ReflectionReport, RecordingLlm]]


@pytest.fixture
def reflect_on(workspace: Path, database: Path, make_llm: Callable[..., RecordingLlm]) -> Reflect:
    """`reflect_on(run_id, answer, …)`: reflect with a model that gives these answers."""

    def run(run_id: str, *answers: Any, **options: Any) -> tuple[ReflectionReport, RecordingLlm]:
        llm = make_llm(*answers)
        options.setdefault("clock", FixedClock())
        with open_memory(workspace, database) as memory:
            report = reflect(
                journal_of(workspace), run_id, llm, service=memory, model=MODEL, **options
            )
        return report, llm

    return run


def profiles(workspace: Path) -> ProfileStore:
    return ProfileStore(workspace, clock=FixedClock())


# ----------------------------------------------------------------------------- the quality gate


def test_a_malformed_answer_is_asked_again_then_written_to_an_error_file(
    workspace: Path, reader_run: str, reflect_on: Reflect
) -> None:
    report, llm = reflect_on(reader_run, "I think it went well.", '{"summary": 3}')
    assert report.outcome == "error"
    assert report.attempts == 2
    first, retry = llm.requests
    assert "CRITICAL" not in first.instruction and first.attempt == 1
    assert retry.attempt == 2
    assert "CRITICAL: your previous answer could not be used" in retry.instruction
    assert "the answer is not JSON: I think it went well." in retry.instruction
    assert "CRITICAL" in retry.built.final_user_message
    assert report.error_path == workspace / REFLECTIONS_DIR / f"{report.reflection_id}.error.json"
    saved = json.loads(report.error_path.read_text(encoding="utf-8"))
    assert saved["raw"] == "I think it went well."
    assert saved["retry_raw"] == '{"summary": 3}'
    assert saved["first_error"] == "the answer is not JSON: I think it went well."
    assert saved["retry_error"] == 'the answer has no "summary" text'
    assert saved["run_id"] == reader_run
    record = json.loads((workspace / REFLECTIONS_DIR / f"{report.reflection_id}.json").read_text())
    assert record["outcome"] == "error" and record["error_file"] == str(report.error_path)
    assert "attempt 2: the answer has no" in record["error"]
    assert not profiles(workspace).path("Reader").exists()


def test_a_retry_that_answers_well_is_used(reader_run: str, reflect_on: Reflect) -> None:
    good = answer({"op": "journal", "text": "Found it on the second try."})
    report, llm = reflect_on(reader_run, "```\nnot json\n```", good)
    assert report.outcome == "done"
    assert (report.attempts, len(llm.requests), report.error_path) == (2, 2, None)
    assert [result.op for result in report.applied] == ["journal"]


def test_a_fenced_answer_is_accepted_at_once(reader_run: str, reflect_on: Reflect) -> None:
    fenced = "```json\n" + answer({"op": "journal", "text": "Fenced."}) + "\n```"
    report, llm = reflect_on(reader_run, fenced)
    assert (report.outcome, report.attempts, len(llm.requests)) == ("done", 1, 1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"summary": "s", "operations": [{"op": "journal"}]}', ("s", [{"op": "journal"}])),
        ('```json\n{"summary": " s ", "operations": []}\n```', ("s", [])),
        ('{"summary": "s"}', ("s", [])),
    ],
)
def test_parse_reflection_accepts(text: str, expected: tuple[str, list[Any]]) -> None:
    assert parse_reflection(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "the answer is not JSON: (empty)"),
        ("no json here", "the answer is not JSON: no json here"),
        ('["summary"]', "the answer is a list, not a JSON object"),
        ('{"operations": []}', 'the answer has no "summary" text'),
        ('{"summary": "  "}', 'the answer has no "summary" text'),
        ('{"summary": "s", "operations": {"op": "feel"}}', '"operations" is a dict, not a list'),
    ],
)
def test_parse_reflection_refuses(text: str, reason: str) -> None:
    with pytest.raises(MalformedAnswer) as refused:
        parse_reflection(text)
    assert str(refused.value) == reason


def test_a_failing_model_is_recorded_as_an_error(
    workspace: Path, reader_run: str, reflect_on: Reflect
) -> None:
    report, llm = reflect_on(reader_run, ExecutionError("connection refused"))
    assert (report.outcome, report.attempts, len(llm.requests)) == ("error", 1, 1)
    assert report.error == "attempt 1: the model failed: connection refused"
    assert report.error_path is not None
    saved = json.loads(report.error_path.read_text())
    assert (saved["raw"], saved["retry_raw"], saved["retry_error"]) == (None, None, None)


def test_no_operation_from_a_substantial_run_is_underreflect(
    workspace: Path, reader_run: str, reflect_on: Reflect
) -> None:
    report, _ = reflect_on(reader_run, answer())
    assert (report.outcome, report.substantial, report.underreflect) == (
        "no-update",
        True,
        True,
    )
    assert report.record_path is not None
    assert json.loads(report.record_path.read_text())["signals"] == ["underreflect"]


def test_no_operation_from_a_short_run_is_not_underreflect(
    talker_run: str, reflect_on: Reflect
) -> None:
    report, _ = reflect_on(talker_run, answer())
    assert (report.outcome, report.substantial, report.underreflect) == (
        "no-update",
        False,
        False,
    )
    stricter, _ = reflect_on(
        talker_run, answer(), settings=ReflectionSettings(substantial_events=2)
    )
    assert stricter.underreflect


def test_a_substantial_run_with_a_proposal_is_not_underreflect(
    reader_run: str, reflect_on: Reflect
) -> None:
    report, _ = reflect_on(reader_run, answer({"op": "feel", "emotion": "awe"}))
    assert report.outcome == "no-update"  # the one proposal was invalid, but there was one
    assert not report.underreflect


# ----------------------------------------------------------------------------- operations


def test_each_operation_is_validated_and_applied_on_its_own(
    workspace: Path, reader_run: str, reflect_on: Reflect
) -> None:
    report, _ = reflect_on(
        reader_run,
        answer(
            {"op": "feel", "emotion": "pride", "delta": 0.2, "trigger": "I found the file"},
            {"op": "feel", "emotion": "pride", "delta": 2, "trigger": "far too proud"},
            {"op": "rewrite_memory", "text": "everything"},
            "remember this",
            {"op": "remember", "text": "The data report has two rows", "kind": "fact"},
            {"op": "remember", "text": "Run keys are mine", "key": "run:x"},
            {"op": "journal", "text": "Looking up the file first paid off."},
        ),
    )
    assert report.outcome == "done"
    assert [(r.index, r.op) for r in report.applied] == [(0, "feel"), (6, "journal")]
    assert [(r.index, r.op, r.message) for r in report.skipped] == [
        (1, "feel", "delta: Input should be less than or equal to 0.4"),
        (
            2,
            "rewrite_memory",
            "unknown operation 'rewrite_memory' (known: remember, experience_add, "
            "experience_retire, feel, desire_add, desire_update, opinion_form, journal)",
        ),
        (3, "?", "an operation must be a JSON object"),
        (4, "remember", "a fact needs a key"),
        (5, "remember", "the key 'run:x' is the runtime's"),
    ]
    history = profiles(workspace).history("Reader")
    assert [(c["op"], c["who"]) for c in history] == [
        ("feel", "reflection"),
        ("journal", "reflection"),
    ]
    assert history[0]["why"] == f"reflection {report.reflection_id} on run {reader_run}"


def test_too_many_operations_are_skipped(reader_run: str, reflect_on: Reflect) -> None:
    notes = [{"op": "journal", "text": f"note {index}"} for index in range(3)]
    report, _ = reflect_on(
        reader_run, answer(*notes), settings=ReflectionSettings(max_operations=2)
    )
    assert [r.index for r in report.applied] == [0, 1]
    assert [(r.index, r.message) for r in report.skipped] == [(2, "too many operations")]


def test_remember_lands_in_the_memory_service(
    workspace: Path, database: Path, reader_run: str, reflect_on: Reflect
) -> None:
    report, _ = reflect_on(
        reader_run,
        answer(
            {"op": "remember", "text": "Reports live under reports/", "tags": ["layout"]},
            {
                "op": "remember",
                "text": "Ada",
                "kind": "fact",
                "key": "user-name",
                "scope": "global",
            },
        ),
    )
    assert [r.message for r in report.applied] == [
        "created knowledge 'Reports live under reports/'",
        "created fact 'Ada'",
    ]
    with open_memory(workspace, database) as memory:
        found = memory.recall("reports live", kind="knowledge")["results"][0]
        assert found["tags"] == ["layout", "reflection"]
        assert found["source"] == {"run": reader_run, "reason": "reflection"}
        assert found["scope"] == memory.workspace
        fact = memory.history("user-name")["versions"][0]
        assert (fact["scope"], fact["body"]) == ("global", "Ada")


def test_experiences_are_added_and_retired_through_learn_experiences(
    workspace: Path, database: Path, reader_run: str, reflect_on: Reflect
) -> None:
    lesson = {
        "op": "experience_add",
        "kind": "procedure",
        "title": "Find the report before reading it",
        "lesson": "Run Find.run on the report name first, then File.read the path it returns.",
        "when": "Summing a report whose folder is unknown",
        "confidence": 0.95,
    }
    added, _ = reflect_on(reader_run, answer(lesson))
    assert added.outcome == "done", added.skipped
    key = added.applied[0].message.removeprefix("created ")
    assert key.startswith("experience:reader:procedure:")
    graph = journal_of(workspace).graph
    node = graph.node(key)
    assert node is not None
    assert node.metadata["status"] == "stored"
    assert node.metadata["confidence"] == 0.8  # a model's own lesson is capped below the user's
    with open_memory(workspace, database) as memory:
        found = recall_experiences(memory, "report folder unknown", 10)
        assert key in [item["key"] for item in found]
    again, _ = reflect_on(reader_run, answer(lesson))
    assert [r.message for r in again.skipped] == [f"known {key}: this run already taught it"]
    retired, _ = reflect_on(
        reader_run,
        answer(
            {"op": "experience_retire", "key": key, "reason": "the report is always in reports/"},
            {"op": "experience_retire", "key": "experience:none:failure:0", "reason": "gone now"},
            {"op": "experience_retire", "key": "user-name", "reason": "not an experience"},
        ),
    )
    assert [r.message for r in retired.applied] == [f"retired {key}"]
    assert [r.message for r in retired.skipped] == [
        "no active experience experience:none:failure:0",
        "key: String should match pattern '^experience:\\S+$'",
    ]
    node = graph.node(key)
    assert node is not None and node.metadata["status"] == "retired"
    with open_memory(workspace, database) as memory:
        assert key not in [item["key"] for item in recall_experiences(memory, "report", 20)]


def test_profile_operations_change_the_profile_with_history(
    workspace: Path, reader_run: str, reflect_on: Reflect
) -> None:
    clock = FixedClock()
    report, _ = reflect_on(
        reader_run,
        answer(
            {"op": "feel", "emotion": "curiosity", "delta": 0.1, "trigger": "a new folder"},
            {
                "op": "desire_add",
                "slug": "map-reports",
                "what": "map where reports live",
                "why": "I looked for one",
                "actionable": True,
                "horizon": "spark",
                "prompt": "List the reports folder",
            },
            {"op": "desire_update", "slug": "map-reports", "progress": "found data.csv"},
            {
                "op": "opinion_form",
                "slug": "find-first",
                "stance": "finding a file beats guessing its path",
                "confidence": 0.4,
                "evidence": [f"run {reader_run}"],
            },
            {"op": "journal", "text": "A tidy run."},
        ),
        clock=clock,
    )
    assert len(report.applied) == 5, report.skipped
    profile = profiles(workspace).load("Reader")
    assert profile.emotion("curiosity", clock.now) == pytest.approx(0.7)
    desire = profile.desire("map-reports")
    assert (
        desire is not None and desire.active_at == T0 and desire.prompt == "List the reports folder"
    )
    opinion = profile.opinion("find-first")
    assert opinion is not None and opinion.evidence == [f"run {reader_run}"]
    assert [line.text for line in profile.journal] == ["A tidy run."]
    assert [c["op"] for c in profiles(workspace).history("Reader")] == [
        "feel",
        "desire_add",
        "desire_update",
        "opinion_form",
        "journal",
    ]


def test_a_desire_that_needs_the_user_opens_the_memory_digest(
    workspace: Path, database: Path, reader_run: str, reflect_on: Reflect
) -> None:
    needs = {
        "op": "desire_add",
        "slug": "install-csvkit",
        "what": "have csvkit installed",
        "why": "summing by hand is slow",
        "pursuit": "needs-user",
        "prompt": "pip install csvkit",
    }
    report, _ = reflect_on(reader_run, answer(needs))
    assert report.outcome == "done" and report.problems == []
    with open_memory(workspace, database) as memory:
        assert memory.digest()["text"].splitlines()[2] == "- needs you: have csvkit installed"
    closing = {
        "op": "desire_update",
        "slug": "install-csvkit",
        "close": {"outcome": "fulfilled", "reflection": "the user installed it"},
    }
    reflect_on(reader_run, answer(closing))
    with open_memory(workspace, database) as memory:
        assert "needs you" not in memory.digest()["text"]


# ----------------------------------------------------------------------------- what the model sees


def test_the_model_sees_the_run_the_recap_the_profile_and_the_experiences(
    workspace: Path, database: Path, reflect_on: Reflect
) -> None:
    ran = learned_run(workspace, database, [FOUND, TOTAL], task=f"Sum the data report {SECRET}")
    profiles(workspace).apply(
        "Reader",
        {"op": "desire_add", "slug": "faster", "what": "sum faster", "why": "it was slow"},
        "test",
        "setup",
    )
    report, llm = reflect_on(ran.run_id, answer(), clock=FixedClock(T0 + 3 * DAY))
    request = llm.requests[0]
    assert (request.agent_name, request.function_name) == ("Reflection", "reflect")
    assert request.return_shape is None and request.max_output_tokens == 2000
    assert request.model is not None and request.model.uri == MODEL
    system = request.built.system
    assert system.startswith("You are Reader, an agent that has just finished a run of reader.as")
    assert '"op": "experience_retire"' in system
    message = request.built.final_user_message
    assert f"Run {ran.run_id} of reader.as: ok after " in message
    assert "events (generate 2, tool 2, use 2)" in message
    assert '"tool": "Find.run"' in message and '"tool": "File.read"' in message
    assert "[recent runs] recent runs:\nRuns since " in message
    assert "reader.as: 1 run (1 ok)" in message
    assert "- faster [season, self] sum faster (strength 0.56)" in message
    assert "[relevant experiences] relevant experiences:\n- experience:reader:" in message
    assert "your mood" in message and "curiosity 0.60" in message
    assert SECRET not in message and SECRET not in system
    assert report.summary == "I summed the report."


def test_the_entry_agent_of_a_run() -> None:
    def run(entry: str | None = None, program: str | None = None) -> RunRecord:
        return RunRecord("r", "ok", 0.0, 0.0, 1, "h", program=program, entry=entry)

    generate = JournalEntry(
        "r", 3, "end", "generate", 3, None, 0, 0.0, {"context": {"agentName": "Lead"}}
    )
    nested = JournalEntry("r", 2, "end", "generate", 2, 1, 1, 0.0, {"context": {"agentName": "W"}})
    assert entry_agent(run("Worker.write"), [generate]) == "Worker"
    assert entry_agent(run(".main"), [nested, generate]) == "Lead"
    with pytest.raises(ReflectionError, match="does not say which agent"):
        entry_agent(run(program="/nowhere/x.as"), [nested])


def test_the_entry_agent_comes_from_the_program_when_the_run_made_no_generate(
    tmp_path: Path,
) -> None:
    program = tmp_path / "p.as"
    program.write_text(READER)
    record = RunRecord("r", "ok", 0.0, 0.0, 1, "h", program=str(program))
    assert entry_agent(record, []) == "Reader"


def test_a_running_run_is_not_reflected_on(tmp_path: Path, make_llm: Any) -> None:
    journal = Journal.open(tmp_path / "runs.db")
    now = time.time()
    journal.store.save(
        RunRecord("20270115-080000-aaaaaa", "running", now, now, os.getpid(), socket.gethostname()),
        [],
        new=True,
    )
    with (
        open_memory(tmp_path, tmp_path / "m.db") as memory,
        pytest.raises(ReflectionError, match="still running"),
    ):
        reflect(journal, "last", make_llm(), service=memory, workspace=tmp_path)
    journal.close()


# ----------------------------------------------------------------------------- the recap


def recap_journal(path: Path) -> Journal:
    journal = Journal.open(path, clock=FixedClock(T0 + DAY))
    secret = {"task": "PROMPT-TEXT summarise the quarter", "file": "FILE-CONTENTS"}
    write_run(journal, "20270114-000000-old000", "ok", T0 - 2 * DAY, input=secret)
    write_run(journal, "20270115-080000-aaaaaa", "ok", T0, input=secret, value="FILE-CONTENTS")
    write_run(
        journal,
        "20270115-090000-bbbbbb",
        "error",
        T0 + 3600,
        error="Tool File.read failed: FILE-CONTENTS were unreadable",
        events=5,
    )
    write_run(
        journal,
        "20270115-100000-cccccc",
        "interrupted",
        T0 + 7200,
        program="/work/app/fix.as",
        entry="Fixer.patch",
        events=1,
    )
    write_run(
        journal,
        "20270115-110000-dddddd",
        "ok",
        T0 + 3 * 3600,
        program="/work/site/build.as",
        workspace="/work/site",
        events=0,
    )
    # Started before the window, ended inside it: it counts.
    write_run(journal, "20270114-235000-eeeeee", "ok", T0 - 600, duration=1200, events=2)
    return journal


def test_the_recap_of_recent_runs(tmp_path: Path) -> None:
    journal = recap_journal(tmp_path / "runs.db")
    summary = recap(journal, since=T0)
    assert summary.text() == (
        "Runs since 2027-01-15T08:00:00Z: 5 (3 ok, 1 error, 1 interrupted)\n"
        "- /work/app: fix.as Fixer.patch: 1 run (1 interrupted), 1 event; "
        "last 20270115-100000-cccccc interrupted at 2027-01-15T10:00:02Z\n"
        "- /work/app: report.as: 3 runs (2 ok, 1 error), 10 events; "
        "last 20270115-090000-bbbbbb error at 2027-01-15T09:00:02Z\n"
        "- /work/site: build.as: 1 run (1 ok), 0 events; "
        "last 20270115-110000-dddddd ok at 2027-01-15T11:00:02Z"
    )
    data = summary.to_json()
    assert (data["runs"], data["ok"], data["error"], data["interrupted"]) == (5, 3, 1, 1)
    text = json.dumps(data) + summary.text()
    for content in ("PROMPT-TEXT", "FILE-CONTENTS", "quarter", "unreadable", "File.read"):
        assert content not in text
    assert recap(journal, since=T0) == summary  # deterministic
    journal.close()


def test_a_recap_without_runs(tmp_path: Path) -> None:
    journal = recap_journal(tmp_path / "runs.db")
    empty = recap(journal, since=T0 + 10 * DAY)
    assert empty.empty and empty.text() == "Runs since 2027-01-25T08:00:00Z: none"
    assert empty.to_json()["programs"] == []
    journal.close()


# ----------------------------------------------------------------------------- the commands


def test_the_reflect_command(
    workspace: Path,
    database: Path,
    reader_run: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = tmp_path / "reflection.json"
    script.write_text(json.dumps({"Reflection": [answer({"op": "journal", "text": "Done."})]}))
    where = ["--workspace", str(workspace), "--db", str(database)]
    code = main(["reflect", "last", "--mock", str(script), *where])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert (
        out.startswith("reflection 2") and f"on run {reader_run} (Reader): done, 1 applied" in out
    )
    assert "applied  journal: journal: Done." in out
    code = main(["reflect", reader_run[:15], "--mock", *where, "--json"])
    out, err = capsys.readouterr()
    assert code == 0
    assert json.loads(out)["outcome"] == "no-update"
    assert "warning: underreflect: run" in err
    script.write_text(json.dumps({"Reflection": ["no", "still no"]}))
    code = main(["reflect", "last", "--mock", str(script), *where])
    out, err = capsys.readouterr()
    assert code == 1
    assert "error: attempt 1: the answer is not JSON: no; attempt 2" in out
    assert ".error.json" in out
    code = main(["reflect", "last", "--mock", "--model", MODEL, *where])
    assert code == 1
    assert "Use either --model or --mock" in capsys.readouterr().err


def test_run_reflect_reflects_with_the_runs_own_mock_answers(
    workspace: Path, database: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "reader.as").write_text(READER)
    script = tmp_path / "answers.json"
    feel = {"op": "feel", "emotion": "pride", "delta": 0.1, "trigger": "I found it"}
    script.write_text(json.dumps({"Reader": [FOUND, TOTAL], "Reflection": [answer(feel)]}))
    code = main(
        [
            "run",
            str(workspace / "reader.as"),
            "--mock",
            str(script),
            "--input",
            '{"task": "Sum the data report"}',
            "--memory-db",
            str(database),
            "--reflect",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["value"] == {"total": 3}
    assert "(Reader): done, 1 applied, 0 skipped" in err
    assert "applied  feel: pride 0.00 → pride 0.10" in err
    assert profiles(workspace).load("Reader").revision == 1
    code = main(["run", str(workspace / "reader.as"), "--mock", "--no-journal", "--reflect"])
    assert code == 1
    assert "--reflect needs the run journaled" in capsys.readouterr().err


# ----------------------------------------------------------------------------- in the ledger


def test_every_reflection_is_in_the_ledger_and_the_summary_has_their_histogram(
    workspace: Path, reader_run: str, reflect_on: Reflect
) -> None:
    from agentscript.learn.autonomy_ledger import Ledger, format_summary

    note = {"op": "journal", "text": "Found it."}
    reflect_on(reader_run, answer())
    reflect_on(reader_run, answer(note))
    reflect_on(reader_run, answer(note, {"op": "journal", "text": "Twice."}))
    reflect_on(reader_run, answer(note))
    reflect_on(reader_run, "not json", "still not json")

    ledger = Ledger.for_workspace(workspace, clock=lambda: T0 + DAY)
    runs = ledger.read()
    assert [(run.kind, run.outcome, run.operations) for run in runs] == [
        ("reflect", "no-update", 0),
        ("reflect", "done", 1),
        ("reflect", "done", 2),
        ("reflect", "done", 1),
        ("reflect", "error", None),
    ]
    assert runs[0].note == "underreflect" and runs[0].task == f"run {reader_run}"
    summary = ledger.summary(days=7)
    assert summary.operation_counts == {0: 1, 1: 2, 2: 1}
    text = format_summary(summary)
    assert "Operations per reflection" in text
    bars = text.split("Operations per reflection\n", 1)[1].splitlines()[:3]
    assert [(line.split()[0], line.split()[-1]) for line in bars] == [
        ("0", "1"),
        ("1", "2"),
        ("2", "1"),
    ]
    assert summary.to_json()["operation_counts"] == {"0": 1, "1": 2, "2": 1}
