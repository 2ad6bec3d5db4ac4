"""The compaction sink: a host's compaction/start → summary → end events become one checkpoint
entry tagged `compaction`, with a notice for the agent; the one-call tool does the same."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest

from agentscript.memory import FixedClock, MemoryConfig, MemoryService, MemoryServiceError
from agentscript.memory.compaction_sink import (
    MAX_OPEN_COMPACTIONS,
    CompactionSink,
    SinkOutcome,
    hook_event,
    write_checkpoint,
)
from agentscript.memory.entries import CHECKPOINT_REASON
from agentscript.memory.tools import call_tool
from agentscript.runtime.secrets import SecretSet

pytest_plugins = ["memsvc_support"]

SUMMARY = "## Where we are\nThe release script is fixed; the CI cache bug is still open."


def events(session: str = "s-1", **end: object) -> list[dict[str, object]]:
    return [
        {"type": "compaction/start", "session": session, "trigger": "auto"},
        {"type": "compaction/summary", "session": session, "summary": SUMMARY},
        {"type": "compaction/end", "session": session, **end},
    ]


def test_start_summary_end_writes_one_checkpoint_and_a_notice(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    sink = CompactionSink(memory)
    started, noted = (sink.feed(event).action for event in events()[:2])
    memory_clock.advance(timedelta(seconds=30))
    ended = sink.feed(events()[2])
    assert (started, noted, ended.action) == ("started", "noted", "written")
    assert ended.id is not None and ended.notice is not None
    assert ended.id in ended.notice and "recall with tags [compaction]" in ended.notice
    entry = memory.get(ended.id)
    assert (entry["kind"], entry["tags"], entry["scope"]) == (
        "episodic",
        ["compaction"],
        memory.workspace,
    )
    assert entry["body"] == SUMMARY
    assert entry["title"] == "Context checkpoint (auto): Where we are"
    assert entry["source"] == {"session": "s-1", "reason": CHECKPOINT_REASON}
    # Dated when the compaction started, not when it ended.
    assert entry["event_time"] == "2026-05-06T09:30:00.000Z"
    found = memory.recall("CI cache bug", tags=["compaction"])["results"]
    assert [hit["id"] for hit in found] == [ended.id]


def test_a_redelivered_end_writes_nothing_twice(memory: MemoryService) -> None:
    first_sink, second_sink = CompactionSink(memory), CompactionSink(memory)
    first = [first_sink.feed(event) for event in events()][-1]
    again = [second_sink.feed(event) for event in events()][-1]
    assert (first.action, again.action, again.id) == ("written", "exists", first.id)
    assert memory.recall(tags=["compaction"])["count"] == 1


def test_an_end_with_an_error_or_without_a_summary_writes_nothing(memory: MemoryService) -> None:
    sink = CompactionSink(memory)
    for event in events(error={"message": "model overloaded"}):
        outcome = sink.feed(event)
    assert outcome.action == "discarded" and "model overloaded" in str(outcome.reason)
    sink.feed({"type": "compaction/start", "session": "s-2"})
    empty = sink.feed({"type": "compaction/end", "session": "s-2"})
    assert (empty.action, empty.reason) == ("discarded", "the compaction sent no summary")
    assert memory.recall(tags=["compaction"])["count"] == 0


def test_sessions_are_kept_apart_and_a_late_sink_takes_the_summary_from_the_end(
    memory: MemoryService,
) -> None:
    sink = CompactionSink(memory)
    sink.feed({"type": "compaction/start", "session": "a"})
    sink.feed({"type": "compaction/start", "session": "b"})
    sink.feed({"type": "compaction/summary", "session": "b", "summary": "Session b state"})
    a = sink.feed({"type": "compaction/end", "session": "a", "summary": "Session a state"})
    b = sink.feed({"type": "compaction/end", "session": "b"})
    late = CompactionSink(memory).feed(
        {"type": "compaction/end", "session": "c", "summary": "Session c state"}
    )
    bodies = [memory.get(str(outcome.id))["body"] for outcome in (a, b, late)]
    assert bodies == ["Session a state", "Session b state", "Session c state"]


def test_the_checkpoint_goes_to_the_sessions_workspace(
    memory: MemoryService, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    sink = CompactionSink(memory)
    outcome = [sink.feed({**event, "cwd": str(elsewhere)}) for event in events()][-1]
    assert outcome.action == "written"
    assert memory.get(str(outcome.id), scope=str(elsewhere))["scope"] == str(elsewhere.resolve())


def test_auto_sink_false_turns_the_sink_off(open_memory: Callable[..., MemoryService]) -> None:
    memory = open_memory(config=MemoryConfig(auto_sink=False))
    sink = CompactionSink(memory)
    outcome = [sink.feed(event) for event in events()][-1]
    assert (outcome.action, outcome.reason) == ("disabled", "memory.yml sets auto_sink: false")
    assert memory.recall(tags=["compaction"], include_archived=True)["count"] == 0


def test_a_summary_holding_a_secret_is_refused_and_nothing_is_kept(memory: MemoryService) -> None:
    token = "ghp_" + "a1B2" * 9
    memory.secret_sets.append(SecretSet([token]))
    outcome = write_checkpoint(memory, session="s", summary=f"The token is {token}")
    assert outcome.action == "discarded" and str(outcome.reason).startswith("contains_secret")
    assert memory.recall(tags=["compaction"], include_archived=True)["count"] == 0


def test_a_quoted_digest_is_left_out_and_a_long_summary_is_cut(memory: MemoryService) -> None:
    memory.remember("User prefers short answers", kind="fact", key="style", scope="global")
    digest = memory.digest()["text"]
    long_tail = "x" * 40_000
    outcome = write_checkpoint(memory, session="s", summary=f"Intro\n{digest}\nAfter\n{long_tail}")
    body = memory.get(str(outcome.id))["body"]
    assert "<memory-digest" not in body and "[memory digest left out]" in body
    assert body.startswith("Intro\n[memory digest left out]\nAfter\n")
    assert len(body.encode()) <= 16_384 and "bytes kept)" in body


def test_events_are_checked_field_by_field(memory: MemoryService) -> None:
    sink = CompactionSink(memory)
    for event, field in (
        ({"type": "compaction/begin", "session": "s"}, "type"),
        ({"type": "compaction/start"}, "session"),
        ({"type": "compaction/summary", "session": "s", "summary": 3}, "summary"),
        ({"type": "compaction/end", "session": "s", "colour": "red"}, "colour"),
    ):
        with pytest.raises(MemoryServiceError) as error:
            sink.feed(event)
        assert (error.value.code, error.value.field) == ("invalid_argument", field)


def test_the_checkpoint_tool_is_the_whole_sink_in_one_call(memory: MemoryService) -> None:
    result = call_tool(
        memory, "memory_checkpoint", {"session": "s-9", "summary": SUMMARY, "trigger": "manual"}
    )
    assert result["action"] == "written" and result["id"] in result["notice"]
    again = call_tool(memory, "memory_checkpoint", {"session": "s-9", "summary": SUMMARY})
    assert (again["action"], again["id"]) == ("exists", result["id"])
    refused = call_tool(memory, "memory_checkpoint", {"session": "s-9"})
    assert refused["error"]["field"] == "summary"


def test_claude_codes_compaction_hooks_are_read_as_start_and_end(
    memory: MemoryService, tmp_path: Path
) -> None:
    common = {"session_id": "abc-123", "transcript_path": "/t.jsonl", "cwd": str(tmp_path)}
    sink = CompactionSink(memory)
    started = sink.feed({**common, "hook_event_name": "PreCompact", "trigger": "manual"})
    ended = sink.feed(
        {
            **common,
            "hook_event_name": "PostCompact",
            "trigger": "manual",
            "compact_summary": SUMMARY,
        }
    )
    assert (started.action, ended.action) == ("started", "written")
    entry = memory.get(str(ended.id), scope=str(tmp_path))
    assert (entry["title"], entry["scope"]) == (
        "Context checkpoint (manual): Where we are",
        str(tmp_path.resolve()),
    )
    assert hook_event({"hook_event_name": "Stop", "session_id": "abc-123"}) is None


def test_sinks_in_parallel_keep_one_checkpoint(open_memory: Callable[..., MemoryService]) -> None:
    services = [open_memory() for _ in range(4)]
    start = threading.Barrier(len(services))

    def deliver(service: MemoryService) -> SinkOutcome:
        start.wait()
        return write_checkpoint(service, session="shared", summary=SUMMARY)

    with ThreadPoolExecutor(len(services)) as pool:
        outcomes = list(pool.map(deliver, services))
    assert len({outcome.id for outcome in outcomes}) == 1
    assert sorted(outcome.action for outcome in outcomes).count("written") == 1
    assert services[0].recall(tags=["compaction"], include_archived=True)["count"] == 1


def test_compactions_that_never_end_do_not_pile_up(memory: MemoryService) -> None:
    sink = CompactionSink(memory)
    sink.feed({"type": "compaction/start", "session": "first"})
    sink.feed({"type": "compaction/summary", "session": "first", "summary": "Early state"})
    for number in range(MAX_OPEN_COMPACTIONS):
        sink.feed({"type": "compaction/start", "session": f"s-{number}"})
        sink.feed({"type": "compaction/summary", "session": f"s-{number}", "summary": "State"})
    # The oldest open compaction made room for the others: its summary is gone.
    dropped = sink.feed({"type": "compaction/end", "session": "first"})
    kept = sink.feed({"type": "compaction/end", "session": "s-0"})
    assert (dropped.action, dropped.reason) == ("discarded", "the compaction sent no summary")
    assert kept.action == "written"
