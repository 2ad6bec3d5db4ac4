"""Support for the compaction tests: fake models, a consistency check, and compactor processes.

`EchoModel` answers every summary with text derived from the prompt, so a test can see which
sources went into which summary; `FailingModel` raises. `assert_consistent` checks what a
crash must never break: every summary's sources are archived *by that summary*, every source
archived by a summary is listed in it, and a bucket has at most one active summary.

Run as a script, this module starts compactor processes on a prepared database, forked from
one process that imported everything once:

    python memsvc_compaction_support.py race DB MOMENT WORKERS   # WORKERS compact at once
    python memsvc_compaction_support.py zygote DB MOMENT         # "go MODE" forks, "kill" kills

A racer waits until every racer is forked, compacts, and prints `report <json>`. A zygote's
compactor prints `written <id>` after each summary it wrote and `finished` at the end; in mode
`model` it prints `summarising <level> <bucket>` and then blocks inside the model call, in mode
`between` it blocks after its first written summary, in mode `free` it never blocks. The zygote
prints `started <pid>` and, once the compactor is gone, `ended <pid> <code>`.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any

from agentscript.memory import EntryFilter, FixedClock, MemoryService
from agentscript.memory.compaction import ProgressEvent, compact
from agentscript.memory.summarizer import Summarizer
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import GenerateRequest, GenerateResponse
from agentscript.runtime.usage import Usage

SUMMARISED_IN = "summarised in "


class EchoModel:
    """A model whose summary names the level, the bucket and the first line of every source,
    and which records each request (thread-safe)."""

    def __init__(self, on_call: Callable[[GenerateRequest], None] | None = None) -> None:
        self.requests: list[GenerateRequest] = []
        self._lock = threading.Lock()
        self._on_call = on_call

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        with self._lock:
            self.requests.append(request)
        if self._on_call is not None:
            self._on_call(request)
        firsts = [item.text.splitlines()[0] for item in request.context]
        text = f"{request.function_name} summary\n\n" + "\n".join(f"- {line}" for line in firsts)
        return GenerateResponse(value=text, raw_text=text, usage=Usage(10, 5), provider="echo")

    @property
    def calls(self) -> list[str]:
        """`level` of each call, in order."""
        return [request.function_name for request in self.requests]


class FailingModel:
    """A model that is down."""

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        self.calls += 1
        raise ExecutionError("LLM provider 'openai' request failed: connection refused")


def assert_consistent(memory: MemoryService, scope: str, acknowledged: set[str]) -> None:
    """What no crash may break; see the module docstring."""
    everything = {
        entry.id: entry for entry in memory.store.export((scope,))
    }  # one consistent snapshot
    assert acknowledged <= set(everything), "an acknowledged entry is missing"
    active_buckets: set[tuple[str | None, str]] = set()
    for entry in everything.values():
        if entry.kind == "summary":
            for source in entry.archive_ref:
                assert source in everything, f"summary {entry.id} lists a missing source"
                assert everything[source].archived
                assert everything[source].archive_reason == SUMMARISED_IN + entry.id
            if entry.active:
                assert (entry.level, entry.bucket) not in active_buckets
                active_buckets.add((entry.level, entry.bucket))
        if (entry.archive_reason or "").startswith(SUMMARISED_IN):
            summary = everything.get((entry.archive_reason or "")[len(SUMMARISED_IN) :])
            assert summary is not None, f"{entry.id} is archived by a summary that is not there"
            assert entry.id in summary.archive_ref
    assert memory.check(scope=scope)["ok"]


def all_summaries(memory: MemoryService, scope: str) -> list[Any]:
    """Every summary ever written in the scope, active or archived."""
    return memory.store.select(EntryFilter(scopes=(scope,), kinds=("summary",), archived=None))


# ---------------------------------------------------------------------- compactor processes


def _open(database: str, moment: str) -> MemoryService:
    return MemoryService.open(None, database=database, clock=FixedClock(_moment(moment)))


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


def race(database: str, moment: str, workers: int) -> int:
    """Fork `workers` compactors that start together; 0 if every one succeeded."""
    _open(database, moment).close()  # create and import everything before forking
    gate_read, gate_write = os.pipe()
    pids = []
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:
            os.close(gate_write)
            os.read(gate_read, 1)  # returns at EOF: when the parent lets everyone go
            _child(partial(_race_one, database, moment))
        pids.append(pid)
    os.close(gate_read)
    os.close(gate_write)
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
    return 0 if codes == [0] * workers else 1


def _race_one(database: str, moment: str) -> None:
    memory = _open(database, moment)
    # The model yields the processor, so compactors interleave between listing and writing.
    model = EchoModel(on_call=lambda request: os.sched_yield())
    report = compact(memory, Summarizer(model), scope="global")
    memory.close()
    line = json.dumps({**report.to_dict(), "pid": os.getpid()})
    os.write(1, f"report {line}\n".encode())


def zygote(database: str, moment: str) -> None:
    """Fork one compactor per `go MODE` line on stdin; SIGKILL it at the next line."""
    _open(database, moment).close()
    while True:
        command = sys.stdin.readline().split()
        if not command or command[0] != "go":
            return
        mode = command[1]
        pid = os.fork()
        if pid == 0:
            _child(partial(_compact_until_killed, database, moment, mode))
        os.write(1, f"started {pid}\n".encode())
        sys.stdin.readline()
        # Not reaped before this kill, so the pid cannot belong to anyone else.
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        os.write(1, f"ended {pid} {os.waitstatus_to_exitcode(status)}\n".encode())


def _compact_until_killed(database: str, moment: str, mode: str) -> None:
    memory = _open(database, moment)
    current: list[str] = []

    def in_model(request: GenerateRequest) -> None:
        if mode == "model":
            os.write(1, f"summarising {' '.join(current)}\n".encode())
            threading.Event().wait()  # blocked in the model until killed

    def around(event: ProgressEvent) -> None:
        current[:] = [event.level, event.bucket]
        outcome = event.outcome
        if outcome is not None and outcome.status == "written":
            os.write(1, f"written {outcome.summary_id}\n".encode())
            if mode == "between":
                threading.Event().wait()  # blocked between two buckets until killed

    compact(memory, Summarizer(EchoModel(on_call=in_model)), scope="global", progress=around)
    os.write(1, b"finished\n")
    threading.Event().wait()  # stay alive, so every compactor ends by the same SIGKILL


def _child(work: Callable[[], None]) -> None:
    code = 0
    try:
        work()
    except BaseException as error:
        os.write(1, f"error {error!r}".replace("\n", " ").encode() + b"\n")
        code = 1
    os._exit(code)


if __name__ == "__main__":
    command, arguments = sys.argv[1], sys.argv[2:]
    if command == "race":
        sys.exit(race(arguments[0], arguments[1], int(arguments[2])))
    elif command == "zygote":
        zygote(arguments[0], arguments[1])
    else:
        sys.exit(f"unknown command {command!r}")
