"""`eval --queue`: the cells' runs go to worker processes on a durable queue (SQLite here), and
come back into the report a local eval of the same cases makes; Ctrl-C of the eval cancels its
runs still queued, so no worker runs them later."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.app.queue.engine import QueueClient
from agentscript.runtime.errors import LoadError
from openai_wire import OpenAiWireServer, serving, user_message
from queue_support import Workers, queue_url, queued_runs

PROGRAM = """import llm Model from "openai://small"

main agent Labeler {
    model Model
    role "labeler"
    description "Labels a ticket."

    main func(input { ticket: string }) {
        use input.ticket as "ticket"
        generate({ input: "Label it." }) -> { label: string }
    }
}
"""


def label(model: str, body: dict[str, Any]) -> str:
    """Tickets about a crash are bugs; the rest are questions (ticket 4 is answered wrong)."""
    ticket = user_message(body).split("ticket:\n", 1)[1].splitlines()[0]
    return json.dumps({"label": "bug" if "crash" in ticket or ticket.endswith("4") else "question"})


CASES = [
    {
        "id": f"t{i}",
        "input": {"ticket": f"crash {i}" if i % 2 else f"how do I {i}"},
        "expected": "bug" if i % 2 else "question",
    }
    for i in range(8)
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "labeler.as").write_text(PROGRAM, encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    return tmp_path


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAiWireServer]:
    with serving(label) as started:
        for name, value in started.environ().items():
            monkeypatch.setenv(name, value)
        yield started


def scored(report: agentscript.EvalReport) -> list[tuple[str, Any, float, bool]]:
    return [(row.id, row.value, row.score, row.passed) for row in report.rows]


def timeless(report: agentscript.EvalReport) -> list[dict[str, Any]]:
    """The report's summary but for the runs' latencies."""
    return [
        {key: value for key, value in summary.items() if not key.startswith("latency")}
        for summary in report.to_json()["summary"]
    ]


def test_an_eval_on_the_queue_reports_what_a_local_eval_reports(
    workspace: Path, server: OpenAiWireServer
) -> None:
    program, cases = workspace / "labeler.as", workspace / "cases.jsonl"
    local = agentscript.evaluate(program, cases, agentscript.EvalConfig(field="label"))
    queue = queue_url("sqlite", workspace)
    workers = Workers(queue, server)
    workers.start()
    workers.start()
    workers.wait_until_serving()
    try:
        queued = agentscript.evaluate(
            program,
            cases,
            agentscript.EvalConfig(field="label", queue=queue, concurrency=4),
        )
    finally:
        workers.stop()
    assert scored(queued) == scored(local)
    assert [row.passed for row in queued.rows].count(False) == 1  # t4
    assert timeless(queued) == timeless(local)
    assert len(server.requests) == 16  # each cell asked once locally, once on the queue
    # Each row names the worker's run in the workspace's journal, with what it spent.
    row = queued.rows[0]
    assert row.run_id is not None and row.usage["calls"] == 1 and row.tokens == 110
    client = QueueClient(queue)
    try:
        listed = client.runs()
    finally:
        client.close()
    assert sorted(run.label for run in listed) == sorted(c["id"] for c in CASES)
    assert {run.status for run in listed} == {"done"}
    assert all(run.worker for run in listed)


def test_ctrl_c_cancels_the_runs_still_queued(workspace: Path, server: OpenAiWireServer) -> None:
    queue = queue_url("sqlite", workspace)
    # No worker yet: every run the eval queues stays queued until the interruption.
    command = [
        sys.executable, "-m", "agentscript", "eval", str(workspace / "labeler.as"),
        "--data", str(workspace / "cases.jsonl"), "--queue", queue, "--concurrency", "3",
        "--field", "label", "--out", str(workspace / "results.jsonl"),
    ]  # fmt: skip
    evaluation = subprocess.Popen(
        command, env={**os.environ}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while len(queued_runs(queue)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(queued_runs(queue)) == 3
        evaluation.send_signal(signal.SIGINT)
        _, err = evaluation.communicate(timeout=60)
    finally:
        if evaluation.poll() is None:
            evaluation.kill()
    assert evaluation.returncode == 130, err
    assert "runs still queued were cancelled" in err
    assert [run.status for run in queued_runs(queue)] == ["cancelled"] * 3
    # A worker started afterwards finds nothing to run.
    workers = Workers(queue, server)
    workers.start()
    workers.wait_until_serving()
    time.sleep(0.5)  # a poll or two of the queue (not a timing assertion: nothing may run)
    workers.stop()
    assert server.requests == []
    assert [run.status for run in queued_runs(queue)] == ["cancelled"] * 3


def test_what_a_queued_run_cannot_take_is_refused_before_anything_runs(
    workspace: Path,
) -> None:
    with pytest.raises(LoadError, match="which take no --mock, --record"):
        agentscript.evaluate(
            workspace / "labeler.as",
            workspace / "cases.jsonl",
            agentscript.EvalConfig(
                mock=True, record=workspace / "tapes", queue=queue_url("sqlite", workspace)
            ),
        )
