"""The run journal: every event of a run written as it happens, large payloads stored once,
replay equal to the trace the run returned, interrupted runs recognised (even after SIGKILL),
and several processes writing one journal."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agentscript.learn.journal import (
    STALE_SECONDS,
    Journal,
    effective_status,
    format_run,
    format_runs,
    list_runs,
    rebuild_trace,
    replay_run,
    run_trace,
    shared_journal,
    show_run,
    wait_also_for,
    wait_for_journal,
)
from agentscript.learn.journal_store import (
    INLINE_LIMIT,
    JournalEntry,
    JournalError,
    RunRecord,
    SqliteJournalStore,
    pack,
    unpack,
)
from learn_support import (
    FAILING_RESPONSES,
    FixedClock,
    JournaledRun,
    canonical,
    flatten,
    journaled_run,
)

SRC = Path(__file__).resolve().parents[2] / "src"
# No process can have this id: Linux pids stop at 2**22.
DEAD_PID = 2**22 + 7


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def journal(tmp_path: Path, clock: FixedClock) -> Iterator[Journal]:
    # Outside the workspace, so `Search.run` over the workspace never reads the database.
    opened = Journal.open(tmp_path / "journal" / "runs.db", clock)
    yield opened
    opened.close()


@pytest.fixture
def ok_run(journal: Journal, workspace: Path) -> JournaledRun:
    return journaled_run(journal, workspace)


@pytest.fixture
def failed_run(journal: Journal, workspace: Path) -> JournaledRun:
    return journaled_run(journal, workspace, responses=FAILING_RESPONSES)


# ----------------------------------------------------------------------------- completeness


def trace_events(entries: list[JournalEntry]) -> list[tuple[int | None, str]]:
    return [(e.event_id, e.kind) for e in entries if e.phase == "end" and e.kind != "run"]


def test_every_event_of_a_run_is_journaled(journal: Journal, ok_run: JournaledRun) -> None:
    entries = journal.store.entries(ok_run.run_id)
    returned = flatten(ok_run.trace)
    assert len(trace_events(entries)) == len(returned) == 27
    kinds = sorted({kind for _, kind in trace_events(entries)})
    assert kinds == [
        "agent",
        "approval",
        "for",
        "generate",
        "loop_end",
        "memory",
        "parallel_for",
        "tool",
        "use",
    ]
    assert ok_run.problems == []


def test_event_ids_are_unique_and_entries_numbered_in_order(
    journal: Journal, ok_run: JournaledRun
) -> None:
    entries = journal.store.entries(ok_run.run_id)
    assert [entry.seq for entry in entries] == list(range(len(entries)))
    ids = [event_id for event_id, _ in trace_events(entries)]
    assert len(ids) == len(set(ids))


def test_run_start_and_end_are_entries(journal: Journal, ok_run: JournaledRun) -> None:
    entries = journal.store.entries(ok_run.run_id)
    start, end = entries[0], entries[-1]
    assert (start.kind, start.phase, start.data["input"]) == ("run", "start", {"topic": "tides"})
    assert (end.kind, end.phase, end.data["status"]) == ("run", "end", "ok")
    assert end.data["value"] == ok_run.value


def test_each_agent_call_has_a_start_and_an_end(journal: Journal, ok_run: JournaledRun) -> None:
    entries = journal.store.entries(ok_run.run_id)
    starts = [
        (e.event_id, e.data["agent"]) for e in entries if e.phase == "start" and e.kind == "agent"
    ]
    ends = [
        (e.event_id, e.data["agent"]) for e in entries if e.phase == "end" and e.kind == "agent"
    ]
    assert sorted(starts) == sorted(ends)
    assert [agent for _, agent in starts] == ["Worker", "Checker", "Worker", "Checker"]
    nested = [e for e in entries if e.kind == "agent" and e.data["agent"] == "Checker"]
    assert {e.depth for e in nested} == {1}


def test_failed_generate_and_run_error_are_journaled(
    journal: Journal, failed_run: JournaledRun
) -> None:
    entries = journal.store.entries(failed_run.run_id)
    failed = [e.data for e in entries if e.kind == "generate" and e.data.get("ok") is False]
    assert len(failed) == 1
    assert failed[0]["attempts"] == 2
    assert failed[0]["error"].startswith("LLM provider did not return JSON: still not json")
    end = entries[-1].data
    assert end["status"] == "error"
    assert end["error_type"] == "ModelOutputError"
    record = journal.store.run(failed_run.run_id)
    assert record is not None
    assert (record.status, record.error) == ("error", end["error"])


def test_approvals_and_effects_are_journaled(journal: Journal, ok_run: JournaledRun) -> None:
    entries = journal.store.entries(ok_run.run_id)
    decisions = [e.data["decision"] for e in entries if e.kind == "approval"]
    assert decisions == ["pending", "approved", "pending", "approved"]
    writes = [e.data for e in entries if e.kind == "tool" and e.data["method"] == "write"]
    assert [w["effects"][0]["path"] for w in writes] == ["a.md", "b.md"]


# ----------------------------------------------------------------------------- replay


def test_replay_equals_the_trace_the_run_returned(journal: Journal, ok_run: JournaledRun) -> None:
    assert canonical(replay_run(journal, ok_run.run_id)) == canonical(ok_run.trace)


def test_replay_of_a_failed_run_equals_its_error_trace(
    journal: Journal, failed_run: JournaledRun
) -> None:
    assert failed_run.error is not None
    assert canonical(replay_run(journal, failed_run.run_id)) == canonical(failed_run.trace)


def test_replay_closes_calls_a_killed_run_left_open() -> None:
    call = {"agent": "A", "function": "f", "args": []}
    entries = [
        JournalEntry("r", 1, "start", "agent", 1, None, 0, 0.0, call),
        JournalEntry("r", 2, "end", "use", 2, 1, 1, 0.0, {"source": "x"}),
        # One level deeper than the call's own events: inside a parallel iteration.
        JournalEntry("r", 3, "end", "generate", 3, 1, 2, 0.0, {"instruction": "in it"}),
    ]
    assert rebuild_trace(entries) == [
        {
            "kind": "agent",
            "data": {
                "agent": "A",
                "function": "f",
                "args": [],
                "trace": [
                    {"kind": "use", "data": {"source": "x"}},
                    {
                        "kind": "parallel_for",
                        "data": {
                            "unfinished": True,
                            "iterations": [
                                {
                                    "index": None,
                                    "ok": False,
                                    "trace": [
                                        {
                                            "kind": "generate",
                                            "data": {"instruction": "in it"},
                                        }
                                    ],
                                }
                            ],
                        },
                    },
                ],
                "unfinished": True,
            },
        }
    ]


# ----------------------------------------------------------------------------- payloads


def test_a_large_payload_is_stored_once(journal: Journal, workspace: Path) -> None:
    big = "tide table " * 3000
    source = """import llm Model from "openai://gpt-4.1-mini"
import tool File from "file://workspace"

main agent A {
  model Model
  role "r"
  description "d"
  main func() {
    draft = generate({ input: "draft" }) -> { text string }
    File.write({ path: "one.md", content: draft.text })
    File.write({ path: "two.md", content: draft.text })
    return { size: draft.text.length }
  }
}
"""
    run = journaled_run(journal, workspace, source, input={}, responses=[{"text": big}])
    assert run.error is None
    store = journal.store
    assert isinstance(store, SqliteJournalStore)
    # The text is in the generate result and in both writes' arguments: one blob.
    assert store.blob_count() == 1
    with sqlite3.connect(store.path) as connection:
        longest = connection.execute("SELECT MAX(LENGTH(data_json)) FROM entries").fetchone()[0]
    assert longest <= INLINE_LIMIT
    assert canonical(replay_run(journal, run.run_id)) == canonical(run.trace)


def test_pack_cuts_large_parts_and_unpack_restores_them() -> None:
    value = {
        "small": 1,
        "text": "x" * 100,
        "big": "y" * 5000,
        "many": [{"n": n, "f": n / 2} for n in range(2000)],
        "nested": {"deep": ["z" * 5000, True, None]},
    }
    packed = pack(value, limit=1000)
    assert len(packed.text) <= 1000
    assert {tuple(path) for path, _ in packed.holes} == {("big",), ("many",), ("nested", "deep", 0)}
    assert canonical(unpack(packed.text, packed.holes, packed.blobs)) == canonical(value)


def test_pack_blobs_a_container_with_its_large_children_inside() -> None:
    value = ["a" * 1200] + ["small"] * 300
    packed = pack(value, limit=1000)
    assert packed.text == "null"
    assert [path for path, _ in packed.holes] == [[0], []]
    assert len(packed.blobs) == 2
    assert unpack(packed.text, packed.holes, packed.blobs) == value


def test_pack_keeps_small_values_inline() -> None:
    packed = pack({"a": [1, 2.0, "three", None, True]})
    assert (packed.holes, packed.blobs) == ([], {})
    assert packed.text == '{"a":[1,2.0,"three",null,true]}'


# ----------------------------------------------------------------------------- reading


def test_list_show_and_resolve_runs(journal: Journal, workspace: Path, clock: FixedClock) -> None:
    first = journaled_run(journal, workspace)
    clock.now += 60
    second = journaled_run(journal, workspace, responses=FAILING_RESPONSES)
    views = list_runs(journal)
    assert [(v.run.run_id, v.status) for v in views] == [
        (second.run_id, "error"),
        (first.run_id, "ok"),
    ]
    assert journal.resolve("last").run_id == second.run_id
    assert journal.resolve(first.run_id[:-2]).run_id == first.run_id
    table = format_runs(views)
    assert table.splitlines()[0].split() == [
        "ID",
        "STATUS",
        "STARTED",
        "(UTC)",
        "TIME",
        "EVENTS",
        "PROGRAM",
    ]
    assert f"{first.run_id}  ok" in table
    detail = show_run(journal, first.run_id)
    assert detail.to_json()["run"]["events"] == 27
    pretty = format_run(detail)
    assert pretty.startswith(f"run {first.run_id}  ok\n")
    assert "  - tool File.write" in pretty


def test_unknown_and_ambiguous_references_are_errors(
    journal: Journal, workspace: Path, clock: FixedClock
) -> None:
    with pytest.raises(JournalError, match="No runs in"):
        journal.resolve("last")
    journaled_run(journal, workspace)
    journaled_run(journal, workspace)
    with pytest.raises(JournalError, match="No run 'nope'"):
        journal.resolve("nope")
    with pytest.raises(JournalError, match="is ambiguous"):
        journal.resolve("20")


def test_a_process_shares_one_journal_per_file(tmp_path: Path) -> None:
    path = tmp_path / "journal" / "runs.db"
    assert shared_journal(path) is shared_journal(str(path))
    assert shared_journal(path) is not shared_journal(tmp_path / "other.db")


def test_reading_a_journal_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "none" / "runs.db"
    journal = Journal.open(path)
    assert list_runs(journal) == []
    assert not path.exists()


# ----------------------------------------------------------------------------- liveness


def record(**changes: Any) -> RunRecord:
    base = RunRecord(
        run_id="r",
        status="running",
        started_at=1000.0,
        heartbeat_at=1000.0,
        pid=os.getpid(),
        host="here",
    )
    return replace(base, **changes)


def test_a_running_run_of_a_live_process_is_running() -> None:
    assert effective_status(record(), now=1010.0, host="here") == "running"


def test_a_running_run_whose_process_is_gone_is_interrupted() -> None:
    assert effective_status(record(pid=DEAD_PID), now=1010.0, host="here") == "interrupted"


def test_a_run_on_another_host_is_interrupted_only_when_its_heartbeat_is_stale() -> None:
    other = record(pid=DEAD_PID, host="elsewhere")
    assert effective_status(other, now=1000.0 + STALE_SECONDS, host="here") == "running"
    assert effective_status(other, now=1001.0 + STALE_SECONDS, host="here") == "interrupted"


def test_finished_statuses_are_kept() -> None:
    for status in ("ok", "error", "interrupted"):
        assert effective_status(record(status=status, pid=DEAD_PID), 9e9, "here") == status


def test_a_sink_that_was_never_finished_is_running_while_its_process_lives(
    journal: Journal,
) -> None:
    sink = journal.sink()
    sink.start_run("p.as", {})
    # What the background thread does within FLUSH_SECONDS.
    sink.flush()
    assert [view.status for view in list_runs(journal)] == ["running"]
    sink.finish_run("interrupted")
    assert sink.wait() == []
    assert [view.status for view in list_runs(journal)] == ["interrupted"]


# ----------------------------------------------------------------------------- processes

CHILD = """
import sys, time
from pathlib import Path
import agentscript
from agentscript.learn.journal import Journal
from agentscript.runtime.ports import GenerateResponse

class SlowLlm:
    def generate(self, request):
        time.sleep(600)
        return GenerateResponse(value={"text": "late"}, provider="slow")

SOURCE = '''import llm Model from "openai://gpt-4.1-mini"
import tool File from "file://workspace"
main agent A {
  model Model
  role "r"
  description "d"
  main func() {
    File.write({ path: "before.md", content: "written before the model hangs" })
    answer = generate({ input: "hang" }) -> { text string }
    return answer
  }
}
'''
workspace = Path(sys.argv[2])
journal = Journal.open(sys.argv[1])
program = agentscript.load_source(SOURCE, path=workspace / "slow.as")
sink = journal.sink()
print(sink.start_run(str(workspace / "slow.as"), {}, workspace=workspace), flush=True)
agentscript.run(program, {}, agentscript.RunConfig(
    model=SlowLlm(), trace_sinks=[sink], approve="auto", workspace=workspace))
"""


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return env


def test_a_run_killed_with_sigkill_leaves_a_journal_showing_it_interrupted(
    tmp_path: Path, workspace: Path
) -> None:
    path = tmp_path / "journal" / "runs.db"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), str(workspace)],
        stdout=subprocess.PIPE,
        env=child_env(),
        text=True,
    )
    try:
        assert child.stdout is not None
        run_id = child.stdout.readline().strip()
        # The write's approval request, decision and tool event reach the file while the
        # model hangs: the flusher writes them without any help from the run.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = SqliteJournalStore(path).run(run_id)
            if found is not None and found.events >= 3:
                break
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    journal = Journal.open(path)
    assert [(view.run.run_id, view.status) for view in list_runs(journal)] == [
        (run_id, "interrupted")
    ]
    kinds = [event["kind"] for event in replay_run(journal, run_id)]
    assert kinds == ["approval", "approval", "tool"]
    trace = run_trace(journal, run_id)
    assert (trace.status, trace.success) == ("interrupted", False)
    assert [step["tool"] for step in trace.tool_chain] == ["File.write"]
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


WRITER = """
import sys
from pathlib import Path
import agentscript
from agentscript.learn.journal import Journal

SOURCE = '''import llm Model from "openai://gpt-4.1-mini"
main agent A {
  model Model
  role "r"
  description "d"
  main func(input { n number }) {
    use input.n
    a = generate({ input: "one" }) -> { text string }
    return B.twice(input.n)
  }
}
agent B {
  model Model
  role "r"
  description "d"
  func twice(n) { return n * 2 }
  main func() { return 1 }
}
'''
journal = Journal.open(sys.argv[1])
workspace = Path(sys.argv[2])
program = agentscript.load_source(SOURCE, path=workspace / "w.as")
for n in range(int(sys.argv[3])):
    sink = journal.sink()
    sink.start_run(str(workspace / "w.as"), {"n": n}, workspace=workspace)
    result = agentscript.run(program, {"n": n}, agentscript.RunConfig(
        model="mock", trace_sinks=[sink], workspace=workspace))
    sink.finish_run("ok", value=result.value, usage=result.usage)
    assert sink.wait() == [], sink.problems
"""


def test_waiting_for_the_journal_waits_for_its_other_writers_until_they_are_done() -> None:
    """An eval's workers journal the cells they ran after the eval returned: waiting for the
    journal waits for them too, with what is left of the timeout, until each says done."""
    asked: list[float | None] = []

    def writer(timeout: float | None) -> bool:
        asked.append(timeout)
        return len(asked) > 1

    wait_also_for(writer)
    assert wait_for_journal(timeout=5) is False
    assert wait_for_journal(timeout=5) is True
    assert wait_for_journal(timeout=5) is True  # done writers are not asked again
    assert len(asked) == 2 and all(t is not None and 0 < t <= 5 for t in asked)


def test_runs_from_several_processes_share_one_journal(tmp_path: Path, workspace: Path) -> None:
    path = tmp_path / "journal" / "runs.db"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(workspace), "10"],
            env=child_env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [writer.communicate(timeout=300)[1] for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0, 0, 0], outputs
    journal = Journal.open(path)
    views = list_runs(journal, limit=None)
    assert len(views) == 40
    assert {view.status for view in views} == {"ok"}
    for view in views:
        entries = journal.store.entries(view.run.run_id)
        assert [entry.seq for entry in entries] == list(range(len(entries)))
        assert [event["kind"] for event in replay_run(journal, view.run.run_id)] == [
            "use",
            "generate",
            "agent",
        ]
    values = sorted(journal.store.entries(view.run.run_id)[-1].data["value"] for view in views)
    assert values == sorted([n * 2 for n in range(10)] * 4)


# ----------------------------------------------------------------------------- failure


def test_a_journal_that_cannot_be_written_never_breaks_the_run(
    tmp_path: Path, workspace: Path
) -> None:
    # A directory where the database file should be: SQLite cannot open it.
    blocked = tmp_path / "blocked.db"
    blocked.mkdir()
    run = journaled_run(Journal.open(blocked), workspace)
    assert run.error is None
    assert run.value["steps"] == ["ship"]
    assert len(run.problems) == 1
    assert run.problems[0].startswith("The run journal stopped recording: Run journal ")


def test_finish_without_start_is_reported(journal: Journal) -> None:
    assert journal.sink().finish_run("ok") == [
        "The run journal was never started (finish_run before start_run)"
    ]


def test_a_redacted_secret_never_reaches_the_journal_file(
    journal: Journal, workspace: Path
) -> None:
    secret = "tok-4f9a8b7c6d5e"
    source = """import llm Model from "openai://gpt-4.1-mini"
import tool Env from "env://process"

main agent A {
  model Model
  role "r"
  description "d"
  main func() {
    token = Env.get({ name: "SERVICE_TOKEN" })
    return { token: token }
  }
}
"""
    path = workspace / "secret.as"
    path.write_text(source, encoding="utf-8")
    import agentscript

    sink = journal.sink()
    sink.start_run(str(path), {}, workspace=workspace)
    result = agentscript.run(
        agentscript.load_source(source, path=path),
        {},
        agentscript.RunConfig(
            model="mock",
            trace_sinks=[sink],
            workspace=workspace,
            environ={"SERVICE_TOKEN": secret},
            env_allow=["SERVICE_TOKEN"],
        ),
    )
    assert result.value == {"token": secret}
    # What the Tracer's redact hook hands every sink (see the wiring in docs/runs.md).
    sink.redact(secret)
    sink.finish_run("ok", value=result.value)
    assert sink.wait() == []
    store = journal.store
    assert isinstance(store, SqliteJournalStore)
    journal.close()
    raw = b"".join(file.read_bytes() for file in store.path.parent.iterdir())
    assert secret.encode() not in raw
    assert b"[REDACTED]" in raw


# ----------------------------------------------------------------------------- exchanges


def test_a_durable_exchange_is_on_disk_with_the_start_before_the_call_returns(
    journal: Journal,
) -> None:
    """What a kill leaves: the start and the durable exchange, written by the run itself in one
    small transaction, while the trace events wait for the background thread."""
    sink = journal.sink()
    sink.start_run("p.as", {"topic": "tides"})
    sink.exchange("model_exchange", {"call": "A.f", "value": 1})  # waits for the next write
    sink.exchange("tool_started", {"call": 1, "uri": "file://workspace"}, durable=True)
    # Read as another process would, before any flush: the journal file itself.
    store = SqliteJournalStore(journal.store.location)
    entries = store.entries(sink.run_id)
    run = store.run(sink.run_id)
    store.close()
    assert [(e.phase, e.kind) for e in entries] == [("start", "run"), ("end", "tool_started")]
    assert entries[0].data["input"] == {"topic": "tides"}
    assert run is not None and run.status == "running" and run.events == 0
    sink.finish_run("ok", value=2)
    sink.wait(30)
    kinds = [e.kind for e in journal.store.entries(sink.run_id)]
    assert kinds == ["run", "model_exchange", "tool_started", "run"]  # in the order they came
    finished = journal.store.run(sink.run_id)
    assert finished is not None and finished.events == 0  # exchanges are not trace events


class SteppingBackClock:
    """A wall clock that NTP keeps stepping back: every third reading is a second earlier."""

    def __init__(self) -> None:
        self.readings = 0

    def __call__(self) -> float:
        self.readings += 1
        return 1_800_000_000.0 + self.readings * 0.01 - (self.readings % 3 == 0) * 1.0


def test_entries_times_never_go_back_within_a_run(tmp_path: Path, workspace: Path) -> None:
    """Each entry's time is taken as its seq is, never before the entry before it: a span
    exported from the journal stays inside its run's even when the wall clock steps back."""
    journal = Journal.open(tmp_path / "journal" / "runs.db", SteppingBackClock())
    try:
        run = journaled_run(journal, workspace)
        entries = journal.store.entries(run.run_id)
        record = journal.resolve(run.run_id)
    finally:
        journal.close()
    times = [entry.at for entry in entries]
    assert len(times) > 20 and times == sorted(times)
    assert record.ended_at is not None
    assert record.started_at == times[0] and record.ended_at == times[-1]
