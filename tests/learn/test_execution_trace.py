"""Execution traces of runs that succeeded, failed or were refused, and the summaries that
keep secrets and paths outside the workspace out of long-lived memory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentscript.learn.execution_trace import INTERRUPTED_REASON, TaskExecutionTrace
from agentscript.learn.journal import Journal, run_trace
from agentscript.learn.journal_store import JournalEntry, RunRecord
from agentscript.learn.sensitive import SECRET, looks_like_secret, summarise, summarise_text
from learn_support import FAILING_RESPONSES, FixedClock, journaled_run

WRITE = """import llm Model from "openai://gpt-4.1-mini"
import tool File from "file://workspace"

main agent A {
  model Model
  role "r"
  description "d"
  main func(input { note string, api_token string, source string }) {
    File.write({ path: "notes.md", content: input.note, token: input.api_token })
    return { saved: input.source }
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
    opened = Journal.open(tmp_path / "journal" / "runs.db", FixedClock())
    yield opened
    opened.close()


def test_trace_of_a_successful_run(journal: Journal, workspace: Path) -> None:
    run = journaled_run(journal, workspace)
    trace = run_trace(journal, run.run_id)
    assert (trace.run_id, trace.status, trace.success) == (run.run_id, "ok", True)
    assert trace.goal == {"topic": "tides"}
    assert [(s["tool"], s["ok"], s["files"]) for s in trace.tool_chain] == [
        ("File.write", True, ["a.md"]),
        ("File.write", True, ["b.md"]),
        ("Search.run", True, ["."]),
    ]
    assert [step["approval_id"] for step in trace.tool_chain] == ["approval-1", "approval-2", None]
    assert [
        (a["approval_id"], a["decision"], a["by"], a["risk"]) for a in trace.approval_trace
    ] == [
        ("approval-1", "approved", "auto", "effect"),
        ("approval-2", "approved", "auto", "effect"),
    ]
    assert trace.files == [
        {"path": ".", "actions": ["read"]},
        {"path": "a.md", "actions": ["write"]},
        {"path": "b.md", "actions": ["write"]},
    ]
    assert trace.result == {"steps": ["ship"], "found": 4, "ideas": ["idea", "idea"], "past": 1}
    assert (trace.failure_reason, trace.retry_count) == ("", 1)
    assert [(c["check"], c["passed"]) for c in trace.verification].count(
        ("output shape", True)
    ) == 5
    assert ("tool ok", "File.write", True) in [
        (c["check"], c["subject"], c["passed"]) for c in trace.verification
    ]
    tools = [s["pair_id"] for s in trace.tool_chain]
    assert set(tools) <= set(trace.source_event_ids)
    assert trace.source_event_ids == sorted(trace.source_event_ids)


def test_trace_is_stored_on_the_episode_when_the_run_ends(
    journal: Journal, workspace: Path
) -> None:
    run = journaled_run(journal, workspace)
    stored = journal.graph.episode_trace(run.run_id)
    assert stored is not None
    assert TaskExecutionTrace.from_json(stored) == run_trace(journal, run.run_id)


def test_trace_of_a_failed_run(journal: Journal, workspace: Path) -> None:
    run = journaled_run(journal, workspace, responses=FAILING_RESPONSES)
    trace = run_trace(journal, run.run_id)
    assert (trace.status, trace.success, trace.result) == ("error", False, None)
    assert trace.failure_reason.startswith("LLM provider did not return JSON: still not json at ")
    # One repair for the failed plan (two attempts).
    assert trace.retry_count == 1
    assert ("output shape", "generate plan", False) in [
        (c["check"], c["subject"], c["passed"]) for c in trace.verification
    ]


def test_trace_of_a_run_whose_write_was_refused(journal: Journal, workspace: Path) -> None:
    run = journaled_run(
        journal,
        workspace,
        WRITE,
        input={"note": "n", "api_token": "t", "source": "s"},
        approve="deny",
    )
    trace = run_trace(journal, run.run_id)
    # The refused call is a failed step of its own, with the refusal as its error.
    step = trace.tool_chain[0]
    assert (len(trace.tool_chain), step["tool"], step["ok"]) == (1, "File.write", False)
    assert step.get("error") == "File.write was refused (--approve deny)"
    assert [(a["decision"], a["by"]) for a in trace.approval_trace] == [("refused", "mode")]
    assert trace.failure_reason.startswith(
        "Tool File.write (file://workspace) failed: File.write was refused (--approve deny)"
    )


def test_trace_of_an_interrupted_run_is_built_from_its_entries(journal: Journal) -> None:
    run = RunRecord(
        run_id="20270101-000000-abcdef",
        status="running",
        started_at=1.0,
        heartbeat_at=1.0,
        pid=2**22 + 7,
        host="elsewhere",
        program="p.as",
    )
    start = JournalEntry(run.run_id, 0, "start", "run", None, None, 0, 1.0, {"input": {"q": 1}})
    journal.store.save(run, [start], new=True)
    trace = run_trace(journal, run.run_id)
    assert (trace.status, trace.success, trace.goal) == ("interrupted", False, {"q": 1})
    assert trace.failure_reason == INTERRUPTED_REASON
    assert journal.graph.episode_trace(run.run_id) == trace.to_json()


# ----------------------------------------------------------------------------- sensitive values


def test_secrets_and_outside_paths_are_summarised_in_graph_and_trace(
    journal: Journal, workspace: Path
) -> None:
    token = "ghp_" + "a1B2" * 10
    run = journaled_run(
        journal,
        workspace,
        WRITE,
        input={
            "note": f"use {token} here",
            "api_token": "plain",
            "source": "/home/ada/private.txt",
        },
    )
    assert run.error is None
    trace = run_trace(journal, run.run_id)
    (step,) = trace.tool_chain
    assert step["args"] == [{"path": "notes.md", "content": f"use {SECRET} here", "token": SECRET}]
    assert trace.goal["api_token"] == SECRET
    assert trace.goal["source"].startswith("[outside workspace #")
    assert trace.result == {"saved": trace.goal["source"]}
    graph_text = str([node.metadata for node in journal.graph.nodes()])
    assert token not in graph_text and "/home/ada" not in graph_text
    # The journal keeps what the trace showed: the run's own record is complete.
    entries = journal.store.entries(run.run_id)
    assert any(token in str(entry.data) for entry in entries)


def test_summaries_keep_what_is_inside_the_workspace(workspace: Path) -> None:
    inside = str(workspace / "docs" / "a.md")
    assert summarise({"path": inside, "n": 3}, workspace) == {"path": "docs/a.md", "n": 3}
    assert summarise_text(f"failed at {inside}:3:4", workspace) == "failed at docs/a.md:3:4"
    assert summarise_text("../outside.md", workspace).startswith("[outside workspace #")
    assert summarise_text("https://example.com/a/b and 1/2", workspace) == (
        "https://example.com/a/b and 1/2"
    )


@pytest.mark.parametrize(
    "text",
    [
        "sk-proj-abcdefghijklmnop1234",
        "Authorization: Bearer abcdefghijklmnopqrstuvwx",
        "AKIAABCDEFGHIJKLMNOP",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlc2ln",
        "postgres://app:hunter2@db/prod",
        "Xy7" * 12,
        "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
    ],
)
def test_token_shapes_are_secrets(text: str) -> None:
    assert looks_like_secret(text)
    assert "hunter2" not in summarise_text(text, None)
    assert summarise_text(text, None) != text


@pytest.mark.parametrize(
    "text", ["deadbeef" * 8, "ordinary words only", "release-notes-2024", "a" * 40]
)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert not looks_like_secret(text)


def test_long_strings_are_cut() -> None:
    assert summarise_text("w" * 500, None, preview=20) == "w" * 17 + "..."
