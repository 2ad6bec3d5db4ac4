"""Real processes against each backend: concurrent writers, and writers killed mid-write.

Nothing here measures time. Writers are separate processes (forked by memory_support.py run as
a script); a writer is SIGKILLed at a moment drawn from a seeded generator, and the test then
checks that every record whose `add` had returned is still there and the store opens.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from agentscript.app.memory_resources import export
from agentscript.providers.memory.jsonl import repair_jsonl
from zygote_support import kill_writers

if TYPE_CHECKING:
    from memory_support import MemoryBackend

pytest_plugins = ["memory_support"]

WRITER = Path(__file__).parents[1] / "support" / "memory_support.py"
WORKERS = 8
ADDS_PER_WORKER = 500
KILLS = 50
THREADS = 6
THREAD_ADDS = 40
# The latest moment of a kill after a writer started; adds take a few milliseconds each.
LATEST_KILL_SECONDS = 0.06
# Only guards against a hung writer; never reached when things work.
PROCESS_TIMEOUT_SECONDS = 600


def test_concurrent_writers_store_every_record_exactly_once(backend: MemoryBackend) -> None:
    uri = backend.uri("stress")
    stressed = subprocess.run(
        [
            sys.executable,
            str(WRITER),
            "stress",
            uri,
            str(backend.root),
            str(WORKERS),
            str(ADDS_PER_WORKER),
        ],
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_SECONDS,
    )
    assert stressed.returncode == 0, stressed.stdout + stressed.stderr
    envelopes = list(export(uri))
    assert len(envelopes) == WORKERS * ADDS_PER_WORKER
    assert len({envelope["id"] for envelope in envelopes}) == len(envelopes)
    written = sorted((e["record"]["worker"], e["record"]["index"]) for e in envelopes)
    assert written == [(w, i) for w in range(WORKERS) for i in range(ADDS_PER_WORKER)]
    if backend.name == "jsonl":
        # export parsed every line; there is no blank, torn or doubled one besides.
        lines = (backend.root / "stress.jsonl").read_bytes().split(b"\n")
        assert lines[-1] == b""
        assert len(lines) - 1 == WORKERS * ADDS_PER_WORKER


def test_threads_of_one_run_share_each_store_safely(backend: MemoryBackend) -> None:
    """A run's parallel branches call one router from several threads at once."""

    def write(worker: int) -> None:
        for index in range(THREAD_ADDS):
            backend.add({"kind": "thread", "worker": worker, "index": index}, namespace="threads")

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(write, range(THREADS)))
    envelopes = list(export(backend.uri("threads")))
    written = sorted((e["record"]["worker"], e["record"]["index"]) for e in envelopes)
    assert written == [(w, i) for w in range(THREADS) for i in range(THREAD_ADDS)]
    assert len({envelope["id"] for envelope in envelopes}) == len(envelopes)
    assert len(backend.query({"kind": "thread", "limit": 1000}, namespace="threads")) == len(
        written
    )


def test_killed_writers_never_lose_an_acknowledged_record(backend: MemoryBackend) -> None:
    uri = backend.uri("crash")
    acknowledged, outcomes = kill_writers(
        [sys.executable, str(WRITER), "zygote", uri, str(backend.root)],
        kills=KILLS,
        seed=20261130,
        latest_kill_seconds=LATEST_KILL_SECONDS,
        timeout=PROCESS_TIMEOUT_SECONDS,
    )
    assert outcomes == [-signal.SIGKILL] * KILLS
    assert acknowledged, "no add returned before a kill: the test did not test anything"

    moved_text = ""
    if backend.name == "jsonl":
        # A kill inside a write may leave a torn line; repair moves it aside, and it can only
        # be the text of an add that never returned.
        report = repair_jsonl(backend.root / "crash.jsonl")
        if report.corrupt_path is not None:
            moved_text = report.corrupt_path.read_text(encoding="utf-8")
    stored = [envelope["id"] for envelope in export(uri)]
    assert len(stored) == len(set(stored))
    assert set(acknowledged) <= set(stored)
    assert not [identifier for identifier in acknowledged if identifier in moved_text]
    assert len(backend.query({"kind": "crash", "limit": 5}, namespace="crash")) == min(
        5, len(stored)
    )
