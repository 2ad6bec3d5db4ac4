"""Every tool call is journaled, failed ones included: a TOOL_CALL with its risk level, a
TOOL_RESULT with its latency (and the error when the call raised), approvals paired with the
call they were about — while the trace the run returns keeps the original's shape."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentscript.learn.graph import NodeType
from agentscript.learn.journal import Journal, replay_run, run_trace
from learn_support import canonical, journaled_run

READ_MISSING = """import llm Model from "openai://gpt-4.1-mini"
import tool File from "file://workspace"

main agent A {
  model Model
  role "r"
  description "d"
  main func() {
    File.write({ path: "notes.md", content: "hello" })
    return File.read({ path: "missing.md" })
  }
}
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    opened = Journal.open(tmp_path / "journal" / "runs.db")
    yield opened
    opened.close()


def test_a_tool_call_that_raises_is_journaled_with_its_error(
    journal: Journal, workspace: Path
) -> None:
    run = journaled_run(journal, workspace, READ_MISSING, input={})
    assert run.error is not None and "missing.md" in str(run.error)

    calls = journal.graph.nodes(NodeType.TOOL_CALL, run.run_id)
    results = journal.graph.nodes(NodeType.TOOL_RESULT, run.run_id)
    assert [node.metadata["tool_name"] for node in calls] == ["File.write", "File.read"]
    assert [node.metadata["risk_level"] for node in calls] == ["effect", "read"]
    assert [node.metadata["success"] for node in results] == [True, False]
    assert "missing.md" in results[1].metadata["error"]
    assert all(isinstance(node.metadata["latency_ms"], float) for node in results)

    trace = run_trace(journal, run.run_id)
    assert [(step["tool"], step["ok"]) for step in trace.tool_chain] == [
        ("File.write", True),
        ("File.read", False),
    ]
    # The run's own trace, and its replay, are the original's: successful calls only.
    assert [event["kind"] for event in run.trace if event["kind"] == "tool"] == ["tool"]
    assert "risk" not in next(e for e in run.trace if e["kind"] == "tool")["data"]
    assert canonical(replay_run(journal, run.run_id)) == canonical(run.trace)


def test_approvals_name_the_call_they_were_about(journal: Journal, workspace: Path) -> None:
    run = journaled_run(journal, workspace, READ_MISSING, input={}, approve="deny")
    assert run.error is not None and "was refused" in str(run.error)

    (call,) = journal.graph.nodes(NodeType.TOOL_CALL, run.run_id)
    (result,) = journal.graph.nodes(NodeType.TOOL_RESULT, run.run_id)
    approvals = journal.graph.nodes(NodeType.APPROVAL, run.run_id)
    assert [node.metadata["decision"] for node in approvals] == ["pending", "refused"]
    assert {node.metadata["pair_id"] for node in approvals} == {call.metadata["pair_id"]}
    assert approvals[1].metadata["risk_reason"] == "effect risk under --approve deny"
    assert (call.metadata["approved"], result.metadata["success"]) == (False, False)
    assert "was refused" in result.metadata["error"]
