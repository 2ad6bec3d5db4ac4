"""Runs on a durable queue (DBOS on SQLite here): several worker processes, `submit --wait`, a
worker killed mid-run and its run taken over from the journal, a program changed under a
queued run. The model is a local OpenAI-wire server; workers are real processes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscript.app.queue.engine import QueueClient
from agentscript.app.queue.jobs import JobOutcome
from agentscript.cli.main import main
from openai_wire import OpenAiWireServer, serving, user_message
from queue_support import Workers, queue_url, queued_runs, submit

TWO_STEPS = """import llm Model from "openai://steps"

main agent Writer {
    model Model
    role "writer"
    description "Outlines, then writes."

    main func(input { topic: string }) {
        use input.topic as "topic"
        outline = generate({ input: "Outline it." }) -> { points: string }
        use outline.points as "outline"
        generate({ input: "Write it from the outline." }) -> { text: string }
    }
}
"""


def answer(model: str, body: dict[str, Any]) -> str:
    prompt = user_message(body)
    topic = prompt.split("topic:\n", 1)[1].splitlines()[0]
    if "Outline it." in prompt:
        return json.dumps({"points": f"points about {topic}"})
    return json.dumps({"text": f"text from points about {topic}"})


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "writer.as").write_text(TWO_STEPS, encoding="utf-8")
    cases = [{"id": f"c{i}", "input": {"topic": f"topic {i}"}, "expected": None} for i in range(6)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    return tmp_path


@pytest.fixture(params=["sqlite", "postgres"])
def queue(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return queue_url(request.param, tmp_path)


@pytest.fixture
def server() -> Iterator[OpenAiWireServer]:
    with serving(answer) as started:
        yield started


def journaled_answers(workspace: Path, at_least: int) -> None:
    """Wait until the workspace's journal holds `at_least` model answers (it is written in the
    background, a few milliseconds after each call)."""
    from agentscript.learn.journal import Journal, journal_path
    from agentscript.runtime.ports import MODEL_EXCHANGE

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        journal = Journal.open(journal_path(workspace))
        try:
            runs = journal.store.runs()
            answers = [
                entry
                for run in runs
                for entry in journal.store.entries(run.run_id)
                if entry.kind == MODEL_EXCHANGE and entry.phase == "end"
            ]
        finally:
            journal.close()
        if len(answers) >= at_least:
            return
        time.sleep(0.05)
    raise AssertionError(f"the journal never held {at_least} model answers")


def wait_for(queue: str, workflow_id: str) -> JobOutcome:
    client = QueueClient(queue)
    try:
        outcome = client.wait(workflow_id)
        assert outcome is not None  # no stop was asked for
        return outcome
    finally:
        client.close()


def test_two_workers_finish_every_submitted_run(
    workspace: Path, queue: str, server: OpenAiWireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    workers = Workers(queue, server)
    workers.start()
    workers.start()
    try:
        code, results = submit(
            capsys, str(workspace / "writer.as"), "--input-file",
            str(workspace / "cases.jsonl"), "--queue", queue, "--wait",
        )  # fmt: skip
    finally:
        workers.stop()
    assert code == 0
    assert [row["label"] for row in results] == [f"c{i}" for i in range(6)]
    assert [row["value"] for row in results] == [
        {"text": f"text from points about topic {i}"} for i in range(6)
    ]
    # A queued run's id is its first attempt's run id in the journal.
    assert all(row["ok"] and row["runs"] == [row["id"]] for row in results)
    assert len(server.requests) == 12  # two generates a run, each asked once
    assert main(["runs", "list", "--queue", queue, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted(run["label"] for run in listed) == [f"c{i}" for i in range(6)]
    assert all(run["status"] == "done" and run["worker"] for run in listed)


def test_a_killed_workers_run_is_taken_over_without_asking_twice(
    workspace: Path, queue: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The first generate is answered; the second waits at the server until the kill.
    with serving(answer, hold_after=1) as server:
        workers = Workers(queue, server)
        doomed = workers.start()
        try:
            code, queued = submit(
                capsys, str(workspace / "writer.as"), "--input", '{"topic": "tea"}',
                "--queue", queue,
            )  # fmt: skip
            assert code == 0
            deadline = time.monotonic() + 60
            while len(server.requests) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(server.requests) == 2
            journaled_answers(workspace, at_least=1)
            doomed.kill()
            doomed.wait()
            server.release()
            workers.start()
            outcome = wait_for(queue, queued[0]["id"])
        finally:
            workers.stop()
    assert outcome.ok, outcome.error
    assert outcome.value == {"text": "text from points about tea"}
    assert len(outcome.runs) == 2  # the dead attempt, and the one that resumed it
    outlines = [b for b in server.requests if "Outline it." in user_message(b)]
    assert len(outlines) == 1  # answered before the kill: never asked again
    # The request in flight at the kill may be sent once more, and only that one.
    assert len(server.requests) in (2, 3)


def test_a_program_changed_under_a_queued_run_is_refused_not_mixed(
    workspace: Path, queue: str, server: OpenAiWireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, queued = submit(
        capsys, str(workspace / "writer.as"), "--input", '{"topic": "tea"}', "--queue", queue
    )
    assert code == 0
    program = workspace / "writer.as"
    program.write_text(TWO_STEPS.replace("Outline it.", "Outline it well."), encoding="utf-8")
    workers = Workers(queue, server)
    workers.start()
    try:
        outcome = wait_for(queue, queued[0]["id"])
    finally:
        workers.stop()
    assert not outcome.ok
    assert "changed since the run was submitted" in (outcome.error or "")
    assert server.requests == []


def test_a_worker_takes_prefetch_runs_beyond_its_slots_and_runs_only_its_slots(
    workspace: Path, queue: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Every request waits at the server: three runs queued for one slot and two prefetched.
    with serving(answer, hold_after=0) as server:
        workers = Workers(queue, server, workspace)
        workers.start(2.0, "--concurrency", "1", "--prefetch", "2")
        try:
            code, queued = submit(
                capsys, str(workspace / "writer.as"), "--input-file",
                str(workspace / "cases.jsonl"), "--queue", queue,
            )  # fmt: skip
            assert code == 0
            deadline = time.monotonic() + 60
            states: Counter[str] = Counter()
            while states.get("running", 0) < 3 and time.monotonic() < deadline:
                assert main(["runs", "list", "--queue", queue, "--json"]) == 0
                states = Counter(run["status"] for run in json.loads(capsys.readouterr().out))
                time.sleep(0.05)
            assert states == {"running": 3, "queued": 3}, workers.errors()  # a slot, 2 prefetched
            time.sleep(0.5)
            assert len(server.requests) == 1  # one slot: one run at a time
            server.release()
            outcomes = [wait_for(queue, run["id"]) for run in queued]
        finally:
            workers.stop()
    assert all(outcome.ok for outcome in outcomes)
    assert len(server.requests) == 12


def test_ctrl_c_of_submit_wait_leaves_the_runs_queued_for_a_worker(
    workspace: Path, server: OpenAiWireServer
) -> None:
    queue = queue_url("sqlite", workspace)
    command = [
        sys.executable, "-m", "agentscript", "submit", str(workspace / "writer.as"),
        "--input-file", str(workspace / "cases.jsonl"), "--queue", queue, "--wait",
    ]  # fmt: skip
    waiting = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(queued_runs(queue)) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        waiting.send_signal(signal.SIGINT)
        _, err = waiting.communicate(timeout=60)
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == 130, err
    assert "the queued runs stay queued" in err
    runs = queued_runs(queue)
    assert [run.status for run in runs] == ["queued"] * 6
    workers = Workers(queue, server)
    workers.start()
    try:
        outcomes = [wait_for(queue, run.workflow_id) for run in runs]
    finally:
        workers.stop()
    assert all(outcome.ok for outcome in outcomes)
    assert len(server.requests) == 12


def test_a_bad_queue_url_is_a_clear_error(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["submit", str(workspace / "writer.as"), "--input", "{}", "--queue", "redis://x"])
    assert code == 2
    assert "give postgresql://USER@HOST/DB" in capsys.readouterr().err
