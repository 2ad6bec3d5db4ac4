"""The trace: event shapes of reference §5, nesting of agent calls, the pretty format, and
trace sinks that see every event as it happens."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.trace import TraceEvent, TraceSink, format_trace
from timings import without_timings

Run = Callable[..., Any]
Program = Callable[..., str]

BODY = """mem = Lessons.add({ kind: "lesson", text: "tides" })
past = Lessons.query({ kind: "lesson" })
for p in past < 1 { use p.record < 2k }
found = Search.find({ q: input.q })
w = B.work(1)
use found max 300 as "search result"
return generate({ input: { task: "brief" } }) -> { ok boolean }"""

WORKER = """
agent B {
  func work(n) {
    use n
    return n
  }
  main func() { return 1 }
}
"""


@pytest.fixture
def full_run(
    run: Run, program: Program, scripted_input: Callable[..., Any], sink: TraceSink
) -> Any:
    """A run that produces every 0.1.0 event kind, with the recording sink attached."""
    source = (
        program(
            BODY,
            params="input { q string }",
            imports='import memory Lessons from "file://lessons.jsonl"\n',
        ).replace("\nagent A {", "\nmain agent A {", 1)
        + WORKER
    )
    return run(source, {}, input_provider=scripted_input({"q": "moon"}), sinks=[sink])


def test_event_kinds_in_execution_order(full_run: Any) -> None:
    assert [event["kind"] for event in full_run.trace] == [
        "input",
        "memory",
        "memory",
        "for",
        "use",
        "loop_end",
        "tool",
        "agent",
        "use",
        "generate",
    ]


def test_input_event(full_run: Any) -> None:
    assert full_run.trace[0]["data"] == {"path": "input.q", "value": "moon"}


def test_memory_events(full_run: Any) -> None:
    add, query = without_timings([full_run.trace[1]["data"], full_run.trace[2]["data"]])
    envelope = {
        "id": "1",
        "created_at": "mock",
        "updated_at": "mock",
        "record": {"kind": "lesson", "text": "tides"},
    }
    assert add == {
        "memory": "Lessons",
        "operation": "add",
        "uri": "file://lessons.jsonl",
        "args": {"kind": "lesson", "text": "tides"},
        "result": envelope,
        "count": None,
        "id": "1",
        "record": {"kind": "lesson", "text": "tides"},
    }
    assert query == {
        "memory": "Lessons",
        "operation": "query",
        "uri": "file://lessons.jsonl",
        "args": {"kind": "lesson"},
        "result": [envelope],
        "count": 1,
    }


def test_for_and_use_events(full_run: Any) -> None:
    for_event, use_event = full_run.trace[3]["data"], full_run.trace[4]["data"]
    assert for_event["item"] == "p"
    assert for_event["index"] == 0
    assert for_event["value"]["id"] == "1"
    assert for_event["loop"] == "12:1"  # line:column of the `for` statement
    assert use_event == {"source": "p.record", "budget": {"amount": 2, "unit": "k"}}


def test_use_event_budget_names_a_missing_unit_as_null(full_run: Any) -> None:
    assert full_run.trace[8]["data"] == {
        "source": "found",
        "budget": {"amount": 300, "unit": None},
        "label": "search result",
    }


def test_use_is_traced_every_time_it_runs(run: Run, program: Program) -> None:
    result = run(program("for x in [1, 2, 3] < 3 { use x < 1k }\nreturn 1"))
    assert [event["kind"] for event in result.trace] == ["for", "use"] * 3 + ["loop_end"]
    assert result.trace[-1]["data"]["rounds"] == 3


def test_use_event_without_budget(run: Run, program: Program) -> None:
    (event,) = run(program('use "x"\nreturn 1')).trace
    assert event == {"kind": "use", "data": {"source": '"x"', "budget": None}}


def test_tool_event(full_run: Any) -> None:
    assert without_timings(full_run.trace[6]["data"]) == {
        "tool": "Search",
        "method": "find",
        "scheme": "mcp",
        "uri": "mcp://tools/search",
        "args": [{"q": "moon"}],
        "result": {
            "summary": "Search.find",
            "source": "mcp://tools/search",
            "args": [{"q": "moon"}],
        },
        "effects": None,
    }


def test_tool_effects_are_copied_when_the_result_lists_them(run: Run, program: Program) -> None:
    class EffectTools:
        def call(self, request: Any) -> Any:
            return {"ok": True, "effects": [{"id": "file-write:a.txt", "undoable": True}]}

    (event,) = run(program('return Search.write({ path: "a.txt" })'), tools=EffectTools()).trace
    assert event["data"]["effects"] == [{"id": "file-write:a.txt", "undoable": True}]


def test_agent_event_nests_the_callee_events(full_run: Any) -> None:
    event = full_run.trace[7]
    assert isinstance(event["data"].pop("duration_ms"), int)
    assert event == {
        "kind": "agent",
        "data": {
            "agent": "B",
            "function": "work",
            "args": [1],
            "result": 1,
            "trace": [{"kind": "use", "data": {"source": "n", "budget": None}}],
        },
    }


def test_generate_event(full_run: Any) -> None:
    data = full_run.trace[9]["data"]
    assert list(without_timings(data)) == [
        "instruction",
        "attempts",
        "budget",
        "debug",
        "context",
        "result",
        "max_attempts",
        "promptTokens",
        "model",
    ]
    assert data["instruction"] == {"task": "brief"}
    assert (data["attempts"], data["budget"], data["debug"]) == (1, None, False)
    assert data["result"] == {"ok": True}
    context = data["context"]
    assert list(context) == [
        "agentName",
        "model",
        "identity",
        "system",
        "context",
        "instruction",
        "returnSchema",
        "budget",
        "finalUserMessage",
    ]
    assert context["agentName"] == "A"
    assert context["model"] == {"name": "Model", "uri": "openai://gpt-4.1-mini"}
    assert context["identity"] == {"role": "Researcher", "description": "Finds facts."}
    (item,) = context["context"]
    assert item["label"] == "search result"
    assert item["source"] == "found"
    assert context["finalUserMessage"].startswith("Context:\n[search result] found:\n")


def test_trace_is_json(full_run: Any) -> None:
    assert json.loads(json.dumps(full_run.trace)) == full_run.trace


# ----------------------------------------------------------------------------- sinks


def test_sink_receives_every_event_in_execution_order(full_run: Any, sink: Any) -> None:
    assert [(callback, kind) for callback, kind, _ in sink.calls] == [
        ("event", "input"),
        ("event", "memory"),
        ("event", "memory"),
        ("event", "for"),
        ("event", "use"),
        ("event", "loop_end"),
        ("step_started", "tool"),
        ("event", "tool"),
        ("agent_started", "agent"),
        ("event", "use"),
        ("event", "agent"),
        ("event", "use"),
        ("step_started", "generate"),
        ("event", "generate"),
    ]
    started = sink.calls[8][2]
    assert started == {"agent": "B", "function": "work", "args": [1]}
    assert sink.calls[12][2]["max_attempts"] == 1  # a generate in flight names its attempts
    finished = sink.calls[10][2]
    assert finished["result"] == 1


class LinkingSink(TraceSink):
    """Remembers ids, parents and depths, and that every event converts to JSON."""

    def __init__(self) -> None:
        self.started: list[TraceEvent] = []
        self.events: list[TraceEvent] = []
        self.json: list[str] = []

    def agent_started(self, call: TraceEvent) -> None:
        self.started.append(call)
        self.json.append(json.dumps(call.to_json()))

    def event(self, event: TraceEvent) -> None:
        self.events.append(event)
        self.json.append(json.dumps(event.to_json()))


def test_sink_events_carry_ids_parents_and_depths(run: Run, program: Program) -> None:
    sink = LinkingSink()
    source = (
        program('use "outer"\nreturn B.work(2)').replace("\nagent A {", "\nmain agent A {", 1)
        + WORKER
    )
    run(source, sinks=[sink])
    (call,) = sink.started
    outer_use, inner_use, finished = sink.events
    assert finished is call
    assert (outer_use.parent, outer_use.depth) == (None, 0)
    assert (inner_use.parent, inner_use.depth) == (call.id, 1)
    assert (call.parent, call.depth) == (None, 0)
    assert len({outer_use.id, inner_use.id, call.id}) == 3
    finished_json = json.loads(sink.json[-1])
    assert isinstance(finished_json["data"].pop("duration_ms"), int)
    assert finished_json == {
        "kind": "agent",
        "data": {
            "agent": "B",
            "function": "work",
            "args": [2],
            "result": 2,
            "trace": [{"kind": "use", "data": {"source": "n", "budget": None}}],
        },
    }


def test_sink_sees_failed_agent_calls_finish(run: Run, program: Program) -> None:
    sink = LinkingSink()
    source = program("return B.work(2)").replace("\nagent A {", "\nmain agent A {", 1) + WORKER
    source = source.replace("return n\n", "return n.missing\n")
    with pytest.raises(ExecutionError, match=r"^Cannot read property 'missing' at "):
        run(source, sinks=[sink])
    assert [event.kind for event in sink.events] == ["use", "agent"]
    assert sink.events[-1].data["error"].startswith("Cannot read property 'missing'")


# ----------------------------------------------------------------------------- pretty format


def test_pretty_trace_of_a_run(full_run: Any) -> None:
    assert format_trace(full_run.trace) == (
        "- input input.q\n"
        "- memory Lessons.add\n"
        "- memory Lessons.query\n"
        "- for p[0]\n"
        "- use p.record\n"
        "- tool Search.find\n"
        "- agent B.work\n"
        "  - use n\n"
        "- use found\n"
        '- generate {"task":"brief"}'
    )


def test_empty_trace() -> None:
    assert format_trace([]) == "(empty trace)"


@pytest.mark.parametrize(
    ("instruction", "line"),
    [
        ("x" * 72, "- generate " + "x" * 72),
        ("x" * 73, "- generate " + "x" * 69 + "..."),
        (
            ["abc"] * 20,
            "- generate " + json.dumps(["abc"] * 20, separators=(",", ":"))[:69] + "...",
        ),
        (None, "- generate null"),
        (12.0, "- generate 12"),
    ],
)
def test_long_values_are_cut_to_72_characters(instruction: Any, line: str) -> None:
    assert format_trace([{"kind": "generate", "data": {"instruction": instruction}}]) == line


@pytest.mark.parametrize(
    ("kind", "line"),
    [
        ("agent", "- agent ?.?"),
        ("tool", "- tool ?.?"),
        ("memory", "- memory ?.?"),
        ("input", "- input ?"),
        ("for", "- for ?[?]"),
        ("custom", "- custom"),
    ],
)
def test_missing_names_print_a_question_mark(kind: str, line: str) -> None:
    assert format_trace([{"kind": kind, "data": {}}]) == line


def test_nested_agents_indent_two_spaces_per_level() -> None:
    trace = [
        {
            "kind": "agent",
            "data": {
                "agent": "A",
                "function": "f",
                "trace": [
                    {
                        "kind": "agent",
                        "data": {
                            "agent": "B",
                            "function": "g",
                            "trace": [{"kind": "for", "data": {"item": "x", "index": 0}}],
                        },
                    },
                    {"kind": "use", "data": {"source": "y"}},
                ],
            },
        }
    ]
    assert format_trace(trace) == "- agent A.f\n  - agent B.g\n    - for x[0]\n  - use y"
