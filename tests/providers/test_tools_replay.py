"""ReplayTools answers journaled tool calls without running them; JournaledTools logs them."""

from __future__ import annotations

from typing import Any

import pytest

from agentscript.providers.memory.mock import MockMemory
from agentscript.providers.memory.replay import JournaledMemory, ReplayMemory
from agentscript.providers.tools.approvals import Answer, ApprovalGate, ApprovalRequest
from agentscript.providers.tools.base import Risk
from agentscript.providers.tools.registry import ToolRegistry
from agentscript.providers.tools.replay import JournaledTools, OutcomeUnknown, ReplayTools
from agentscript.runtime.errors import ExecutionError, ReplayMismatch
from agentscript.runtime.ports import (
    MEMORY_EXCHANGE,
    TOOL_FINISHED,
    TOOL_STARTED,
    MemoryRequest,
    ToolCall,
    ToolExchange,
)

WRITE = ToolCall("File", "file://workspace", "write", [{"path": "a.md", "content": "x"}])
READ = ToolCall("File", "file://workspace", "read", [{"path": "a.md"}])


class LiveTools:
    """Stands for the real tools behind the gate: counts what actually ran."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def call(self, request: ToolCall) -> Any:
        self.ran.append(request.method)
        request.report("approval", {"decision": "approved"})
        if request.method == "fail":
            raise ExecutionError("disk full")
        return {"ok": True, "live": request.method}


def risk(request: ToolCall) -> Risk:
    return "read" if request.method == "read" else "effect"


def exchange(request: ToolCall, **fields: Any) -> ToolExchange:
    return ToolExchange(request.uri, request.method, list(request.args), **fields)


def replay(*exchanges: ToolExchange, **options: Any) -> tuple[ReplayTools, LiveTools]:
    live = LiveTools()
    return ReplayTools(list(exchanges), live, risk, "run R", **options), live


def test_a_finished_call_is_answered_with_its_events_and_nothing_runs() -> None:
    events: list[tuple[str, dict[str, Any]]] = []
    request = ToolCall(
        WRITE.tool_name,
        WRITE.uri,
        WRITE.method,
        WRITE.args,
        on_event=lambda kind, data: events.append((kind, data)),
    )
    recorded = exchange(
        WRITE, finished=True, result={"ok": True}, events=[("approval", {"decision": "approved"})]
    )
    tools, live = replay(recorded)
    assert tools.call(request) == {"ok": True}
    assert events == [("approval", {"decision": "approved"})]
    assert live.ran == []


def test_a_journaled_error_is_raised_again() -> None:
    tools, live = replay(exchange(WRITE, finished=True, error="disk full"))
    with pytest.raises(ExecutionError, match="disk full"):
        tools.call(WRITE)
    assert live.ran == []


def test_an_unfinished_read_runs_again_but_an_unfinished_write_needs_the_users_word() -> None:
    tools, live = replay(exchange(READ), exchange(WRITE))
    assert tools.call(READ) == {"ok": True, "live": "read"}
    with pytest.raises(OutcomeUnknown, match="started in run R but never finished"):
        tools.call(WRITE)
    assert live.ran == ["read"]

    tools, live = replay(exchange(WRITE), rerun_unfinished=True)
    assert tools.call(WRITE) == {"ok": True, "live": "write"}


def test_a_call_never_journaled_is_a_mismatch_unless_the_replay_may_go_live() -> None:
    other = ToolCall("File", "file://workspace", "write", [{"path": "b.md", "content": "y"}])
    tools, _ = replay(exchange(WRITE, finished=True, result={"ok": True}))
    with pytest.raises(ReplayMismatch) as caught:
        tools.call(other)
    assert "does not match at tool call File.write" in str(caught.value)
    assert '"path":"a.md"' in str(caught.value) and '"path":"b.md"' in str(caught.value)

    tools, _ = replay(go_live=True)
    assert tools.call(other) == {"ok": True, "live": "write"}


def test_effects_mode_runs_reads_live() -> None:
    tools, _ = replay(exchange(READ, finished=True, result={"old": True}), mode="effects")
    assert tools.call(READ) == {"ok": True, "live": "read"}


class Log:
    def __init__(self) -> None:
        self.entries: list[tuple[str, dict[str, Any], bool]] = []

    def exchange(self, kind: str, data: dict[str, Any], durable: bool = False) -> None:
        self.entries.append((kind, data, durable))


def test_journaled_tools_write_a_call_with_effects_before_it_runs() -> None:
    log = Log()
    tools = JournaledTools(LiveTools(), log, risk)
    tools.call(WRITE)
    tools.call(READ)
    with pytest.raises(ExecutionError):
        tools.call(ToolCall("File", "file://workspace", "fail", []))
    kinds = [(kind, durable) for kind, _, durable in log.entries]
    # A call with effects is on disk before it runs and as soon as it is done; reads go with
    # the next write.
    assert kinds == [
        (TOOL_STARTED, True),
        (TOOL_FINISHED, True),
        (TOOL_STARTED, False),
        (TOOL_FINISHED, False),
        (TOOL_STARTED, True),
        (TOOL_FINISHED, True),
    ]
    assert log.entries[1][1]["events"] == [["approval", {"decision": "approved"}]]
    assert log.entries[5][1]["error"] == "disk full"


class Scheme:
    """A scheme tool whose writes are effects; counts what ran."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def risk(self, request: ToolCall) -> Risk:
        return "read" if request.method == "read" else "effect"

    def call(self, request: ToolCall) -> Any:
        self.ran.append(request.method)
        return {"ok": True}


def gated(mode: Any, answers: list[Answer] | None) -> tuple[ReplayTools, Scheme, list[str]]:
    scheme = Scheme()
    asked: list[str] = []

    def ask(approval: ApprovalRequest) -> Answer:
        asked.append(approval.note or "")
        assert answers is not None
        return answers.pop(0)

    gate = ApprovalGate(
        ToolRegistry({"file": scheme}), mode=mode, ask_user=ask if answers is not None else None
    )
    tools = ReplayTools([exchange(WRITE)], gate, gate.registry.risk, "run R", go_live=True)
    return tools, scheme, asked


def test_an_unfinished_write_is_asked_about_even_when_approvals_are_automatic() -> None:
    tools, scheme, asked = gated("auto", ["yes"])
    assert tools.call(WRITE) == {"ok": True}
    assert scheme.ran == ["write"]
    assert asked == [
        "it started in run R but never finished, so whether its effect happened is unknown"
    ]

    tools, scheme, asked = gated("auto", ["no"])
    with pytest.raises(OutcomeUnknown, match="--rerun-unfinished"):
        tools.call(WRITE)
    assert scheme.ran == []


def test_an_unfinished_write_with_nobody_to_ask_is_refused() -> None:
    tools, scheme, _ = gated("auto", None)
    with pytest.raises(OutcomeUnknown, match="never finished"):
        tools.call(WRITE)
    assert scheme.ran == []


def test_memory_calls_are_journaled_and_replayed_without_the_store() -> None:
    log = Log()
    memory = JournaledMemory(MockMemory(), log)
    added = MemoryRequest("Notes", "memory://notes", "add", {"text": "tide"})
    asked = MemoryRequest("Notes", "memory://notes", "query", {"text": "tide"})
    memory.add(added)
    found = memory.query(asked)
    assert [kind for kind, _, _ in log.entries] == [MEMORY_EXCHANGE, MEMORY_EXCHANGE]

    class NoStore(MockMemory):
        def query(self, request: MemoryRequest) -> Any:
            raise AssertionError("the store is not asked")

    replayed = ReplayMemory([data for _, data, _ in log.entries], NoStore(), "run R", False)
    assert replayed.query(asked) == found
    with pytest.raises(ReplayMismatch, match=r"memory call Notes\.query"):
        replayed.query(MemoryRequest("Notes", "memory://notes", "query", {"text": "moon"}))
