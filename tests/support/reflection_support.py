"""Support for the reflection, profile and lock tests: a clock that stands still, processes
started together, a journal written by hand for the recap, and runs to reflect on.

Processes are real (`sys.executable -c`), released together through a "go" file once each has
said it is ready, so contention is real; nothing waits on a timer to decide a result.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentscript.learn.journal import Journal
from agentscript.learn.journal_store import JournalEntry, RunRecord, RunStatus

# 2027-01-15T08:00:00Z
T0 = 1_800_000_000.0
DAY = 86_400.0

# A worker that waits for the go file, then runs `body` with `argv` = [ready, go, *args].
_PRELUDE = """
import pathlib, sys, time
ready, go = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
ready.touch()
while not go.exists():
    time.sleep(0.001)
"""

# Adds 1 to the number in a file, `count` times, each read-change-write under the lock.
COUNTER_WORKER = """
from agentscript.learn.locks import file_lock
counter, count = pathlib.Path(sys.argv[3]), int(sys.argv[4])
for _ in range(count):
    with file_lock(counter.with_suffix(".lock")):
        counter.write_text(str(int(counter.read_text()) + 1))
"""

# Applies `count` changes to one agent's profile: feelings and journal lines, alternately.
PROFILE_WORKER = """
from agentscript.learn.profile import ProfileStore
workspace, name, count = pathlib.Path(sys.argv[3]), sys.argv[4], int(sys.argv[5])
store = ProfileStore(workspace)
for index in range(count):
    if index % 2:
        operation = {"op": "journal", "text": f"{name} note {index}"}
    else:
        operation = {"op": "feel", "emotion": "curiosity", "delta": 0.01, "trigger": f"{name} {index}"}
    result = store.apply("Lead", operation, who=name, why=f"change {index}")
    assert result.ok, result.message
"""


class FixedClock:
    """A clock that stands still until a test moves it."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, days: float) -> None:
        self.now += days * DAY


def run_together(
    base: Path, body: str, argument_lists: Sequence[Sequence[str]]
) -> list[subprocess.CompletedProcess[str]]:
    """Start one process per argument list running `body`, release them at once when all are
    ready, and wait for them all. Fails the test if one could not start."""
    go = base / "go"
    processes = []
    readies = []
    for index, arguments in enumerate(argument_lists):
        ready = base / f"ready-{index}"
        readies.append(ready)
        processes.append(
            subprocess.Popen(
                [sys.executable, "-c", _PRELUDE + body, str(ready), str(go), *arguments],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    deadline = time.monotonic() + 120
    while not all(ready.exists() for ready in readies):
        if any(process.poll() is not None for process in processes):
            break
        assert time.monotonic() < deadline, "the workers never became ready"
        time.sleep(0.01)
    go.touch()
    finished = []
    for process, arguments in zip(processes, argument_lists, strict=True):
        stdout, stderr = process.communicate(timeout=300)
        finished.append(subprocess.CompletedProcess(arguments, process.returncode, stdout, stderr))
    return finished


def dead_pid() -> int:
    """The pid of a process that has exited (and was reaped) on this host."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def write_run(
    journal: Journal,
    run_id: str,
    status: RunStatus,
    started_at: float,
    *,
    program: str | None = "/work/app/report.as",
    workspace: str | None = "/work/app",
    entry: str | None = None,
    duration: float = 2.0,
    events: int = 3,
    input: Any = None,
    value: Any = None,
    error: str | None = None,
) -> RunRecord:
    """Store one ended run with its start and end entries and `events` tool events, the way a
    journal sink would have written it."""
    ended = started_at + duration
    run = RunRecord(
        run_id=run_id,
        status=status,
        started_at=started_at,
        heartbeat_at=ended,
        pid=1,
        host="elsewhere",
        program=program,
        entry=entry,
        workspace=workspace,
        ended_at=ended,
        error=error,
    )
    start = {"program": program, "entry": entry, "workspace": workspace, "input": input or {}}
    entries = [JournalEntry(run_id, 0, "start", "run", None, None, 0, started_at, start)]
    for number in range(1, events + 1):
        data = {"tool": "File", "method": "read", "uri": "file://workspace", "args": []}
        entries.append(
            JournalEntry(run_id, number, "end", "tool", number, None, 0, started_at + 1, data)
        )
    end: dict[str, Any] = {"status": status, "value": value}
    if error is not None:
        end["error"] = error
    entries.append(JournalEntry(run_id, events + 1, "end", "run", None, None, 0, ended, end))
    journal.store.save(run, entries, new=True)
    return journal.store.run(run_id) or run
