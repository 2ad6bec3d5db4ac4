"""Workers killed (SIGKILL) at random points while runs with a side effect are on the queue:
every run finishes once with the value an uninterrupted run gives, no effect is repeated, and
only calls in flight at a kill are sent twice (counted apart; the workers run with
--rerun-unfinished, so a write a kill cut short is carried out again rather than refused).
Real worker processes, a real local model server, SQLite and PostgreSQL."""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agentscript.app.queue.engine import QueueClient
from openai_wire import serving, user_message
from queue_support import Workers, queue_url, queued_runs, submit

NOTES = """import llm Model from "openai://steps"
import tool File from "file://workspace"

main agent Writer {
    model Model
    role "writer"
    description "Writes a note, saves it, then titles it."

    main func(input { topic: string }) {
        use input.topic as "topic"
        note = generate({ input: "Write a note." }) -> { text: string }
        File.write({ path: "notes/" + input.topic + ".txt", content: note.text })
        generate({ input: "Title it." }) -> { title: string }
    }
}
"""
RUNS = 12
KILLS = 3
CONCURRENCY = 2  # a worker's: at most this many of its model calls are in flight at a kill


def topic_of(body: dict[str, Any]) -> str:
    return user_message(body).split("topic:\n", 1)[1].splitlines()[0]


def answer(model: str, body: dict[str, Any]) -> str:
    topic = topic_of(body)
    if "Write a note." in user_message(body):
        return json.dumps({"text": f"a note on {topic}"})
    return json.dumps({"title": f"On {topic}"})


@pytest.fixture(params=["sqlite", "postgres"])
def queue(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return queue_url(request.param, tmp_path)


def wait_for_requests(server: Any, count: int) -> None:
    deadline = time.monotonic() + 60
    while len(server.requests) < count and time.monotonic() < deadline:
        time.sleep(0.01)


def holding_runs(queue: str, workers: Workers) -> list[Any]:
    """The live workers that hold a running run (a worker's name holds its pid), or all the
    live ones when none does."""
    holders = {run.worker for run in queued_runs(queue) if run.status == "running"}
    alive = [p for p in workers.processes if p.poll() is None]
    holding = [p for p in alive if any(f"-{p.pid}-" in str(name) for name in holders)]
    return holding or alive


def write_calls(workspace: Path, run_ids: list[str]) -> tuple[int, int]:
    """The job's file writes carried out again over its attempts, and those an attempt started
    and never finished (in flight at a kill). A write replayed from the journal returns its
    first record (the file did not exist); one carried out again finds the file there."""
    from agentscript.learn.journal import Journal, journal_path
    from agentscript.runtime.ports import TOOL_FINISHED, TOOL_STARTED

    journal = Journal.open(journal_path(workspace))
    try:
        again = unfinished = 0
        for run_id in run_ids:
            entries = journal.store.entries(run_id)
            writes = {
                e.data["call"]
                for e in entries
                if e.kind == TOOL_STARTED and e.data["method"] == "write"
            }
            ended = {e.data["call"]: e.data for e in entries if e.kind == TOOL_FINISHED}
            unfinished += len(writes - set(ended))
            for call in writes & set(ended):
                effects = ended[call]["result"]["effects"]
                again += sum(1 for effect in effects if effect["existed"])
        return again, unfinished
    finally:
        journal.close()


def test_random_kills_finish_every_run_once_without_repeating_an_effect(
    tmp_path: Path, queue: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seed = random.randrange(1_000_000)
    rng = random.Random(seed)  # named in every failure, to replay the same kill points
    (tmp_path / ".git").mkdir()
    program = tmp_path / "notes.as"
    program.write_text(NOTES, encoding="utf-8")
    cases = [{"id": f"t{i}", "input": {"topic": f"t{i}"}, "expected": None} for i in range(RUNS)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))

    with serving(answer, latency=0.1) as server:
        workers = Workers(queue, server)
        workers.start(2.0, "--rerun-unfinished")
        workers.start(2.0, "--rerun-unfinished")
        workers.wait_until_serving()
        try:
            code, queued = submit(
                capsys, str(program), "--input-file", str(tmp_path / "cases.jsonl"),
                "--queue", queue,
            )  # fmt: skip
            assert code == 0
            # Kill points spread over the runs' requests (two a run), so some kills come
            # after a run's write and some before.
            for point in sorted(rng.sample(range(2, 2 * RUNS - 2), KILLS)):
                wait_for_requests(server, point)
                victim = rng.choice(holding_runs(queue, workers))
                victim.kill()
                victim.wait()
                workers.start(2.0, "--rerun-unfinished")
            client = QueueClient(queue)
            try:
                waited = [client.wait(run["id"]) for run in queued]
            finally:
                client.close()
        finally:
            workers.stop()

    outcomes = [outcome for outcome in waited if outcome is not None]
    assert len(outcomes) == RUNS
    failed = [(o.runs, o.error) for o in outcomes if not o.ok]
    assert not failed, f"{failed} (seed {seed})"
    assert [o.value for o in outcomes] == [{"title": f"On t{i}"} for i in range(RUNS)], seed
    for number, outcome in enumerate(outcomes):
        note = tmp_path / "notes" / f"t{number}.txt"
        assert note.read_text(encoding="utf-8") == f"a note on t{number}"
        again, in_flight = write_calls(tmp_path, outcome.runs)
        assert again <= in_flight, f"t{number} wrote again: {outcome.runs} (seed {seed})"
    asked = Counter((topic_of(b), "Write a note." in user_message(b)) for b in server.requests)
    assert len(asked) == 2 * RUNS, seed  # every call of every run was asked
    sent_again = sum(count - 1 for count in asked.values())
    assert sent_again <= KILLS * CONCURRENCY, seed  # only what was in flight at a kill
    # The kills cut runs short: one was resumed by a later attempt, or its first call (in
    # flight, not journaled yet) was asked again.
    assert any(len(o.runs) > 1 for o in outcomes) or sent_again, f"no run cut (seed {seed})"
