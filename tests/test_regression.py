"""Regression programs in 0.1.0 syntax (our versions of the original's v0, v1 and v2 fixtures),
loaded from files, checked and run with the mock model, tools and memory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.providers.memory.mock import MockMemory

Run = Callable[..., Any]


@pytest.fixture
def regression(fixtures_dir: Path) -> Callable[[str], agentscript.lang.Program]:
    def load(name: str) -> agentscript.lang.Program:
        program = agentscript.load(fixtures_dir / "regression" / name)
        assert [d.format() for d in agentscript.check(program)] == []
        return program

    return load


def test_v0_react_loop(regression: Callable[[str], Any], run: Run) -> None:
    result = run(regression("react.as"), {"question": "Why do tides happen?"})
    assert result.value["ok"] is True
    # One pass of the loop: the mock model says the evidence is enough at once.
    assert agentscript.format_trace(result.trace).splitlines() == [
        "- use question",
        "- use notes",
        "- generate Decide what to search for next.",
        "- tool Search.query",
        "- use result",
        "- generate Summarize the search result.",
        "- use question",
        "- use notes",
        "- generate Is the evidence enough to answer?",
        "- use question",
        "- use notes",
        "- generate Answer the question.",
    ]


def test_v0_react_loop_runs_until_enough(
    regression: Callable[[str], Any], run: Run, make_llm: Callable[..., Any]
) -> None:
    step = [{"query": "moon", "why": "start"}, {"summary": "The moon pulls water."}]
    llm = make_llm(*step, {"done": False}, *step, {"done": True})
    llm.answers.append({"ok": True, "text": "Gravity.", "error": ""})
    result = run(regression("react.as"), {"question": "Why?"}, llm=llm)
    assert result.value == {"ok": True, "text": "Gravity.", "error": ""}
    answer = llm.requests[-1]
    notes = next(item for item in answer.context if item.source == "notes")
    assert notes.value == [{"summary": "The moon pulls water."}] * 2


def test_v1_multi_file_plan(regression: Callable[[str], Any], run: Run) -> None:
    program = regression("multifile.as")
    assert [agent.name for agent in program.agents] == ["Worker", "Lead"]
    result = run(program)
    assert result.value == {"ok": True, "first": "step-1", "count": 2}
    assert [event["kind"] for event in result.trace] == [
        "for",
        "agent",
        "for",
        "agent",
        "loop_end",
        "use",
        "generate",
    ]
    worker_call = result.trace[1]["data"]
    assert worker_call["args"] == [{"id": "step-1", "task": "Collect merged changes"}]
    assert worker_call["result"] == {"id": "step-1", "done": True}


def test_v2_memory_loop(regression: Callable[[str], Any], run: Run) -> None:
    program = regression("memory.as")
    memory = MockMemory()
    first = run(program, {"goal": "Ship the release"}, memory=memory)
    assert first.value == {"ok": True, "lessons": 0}
    added = [event["data"] for event in first.trace if event["kind"] == "memory"][-1]
    assert added["operation"] == "add"
    assert added["record"] == {"kind": "lesson", "text": "", "goal": "Ship the release"}
    assert added["uri"].startswith("file:///") and added["uri"].endswith(
        "/.agentscript/lessons.jsonl"
    )
    second = run(program, {"goal": "Ship the release"}, memory=memory)
    assert second.value == {"ok": True, "lessons": 1}
    generate = next(event["data"] for event in second.trace if event["kind"] == "generate")
    (past,) = generate["context"]["context"]
    assert past["source"] == "past"
    assert "Ship the release" in past["text"]
