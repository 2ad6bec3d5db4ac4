"""Limits every worker shares, counted in the queue's database: two worker processes on one
queue never send more requests in a period than the limit allows, though each alone would
(the fake model server counts what arrives), and a call over a limit waits and says so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentscript.app.errors import AppError
from agentscript.app.queue.database import QueueDatabase
from agentscript.app.queue.limits import (
    CONCURRENCY,
    REQUESTS,
    TOKENS,
    Limit,
    SharedLimits,
    Ticket,
    parse_concurrency,
    parse_rate,
)
from agentscript.cli.main import main
from openai_wire import OpenAiWireServer, serving
from queue_support import Workers, queue_url, submit

PROGRAM = """import llm Model from "openai://small"

main agent Labeler {
    model Model
    role "labeler"
    description "Labels a ticket."

    main func(input { ticket: string }) {
        use input.ticket as "ticket"
        generate({ input: "Label it." }) -> { label: string }
    }
}
"""

LIMIT = 4
PERIOD = 2.0
RUNS = 12


@pytest.fixture(params=["sqlite", "postgres"])
def queue(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return queue_url(request.param, tmp_path)


@pytest.fixture
def server() -> Iterator[OpenAiWireServer]:
    with serving(lambda model, body: json.dumps({"label": "bug"})) as started:
        yield started


def most_in_any_window(moments: list[float], seconds: float) -> int:
    """The most moments that fall within any `seconds` long stretch."""
    ordered = sorted(moments)
    return max(
        sum(1 for later in ordered[index:] if later - moment < seconds)
        for index, moment in enumerate(ordered)
    )


def test_two_workers_share_one_requests_limit(
    tmp_path: Path, queue: str, server: OpenAiWireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "labeler.as").write_text(PROGRAM, encoding="utf-8")
    cases = [
        {"id": f"t{i}", "input": {"ticket": f"ticket {i}"}, "expected": None} for i in range(RUNS)
    ]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    workers = Workers(queue, server, tmp_path)
    limit = ("--requests", f"openai={LIMIT}/{PERIOD:g}s")
    workers.start(2.0, *limit)
    workers.start(2.0, *limit)
    workers.wait_until_serving()
    try:
        code, results = submit(
            capsys, str(tmp_path / "labeler.as"), "--input-file", str(tmp_path / "cases.jsonl"),
            "--queue", queue, "--wait",
        )  # fmt: skip
    finally:
        workers.stop()
    assert code == 0
    assert [row["value"] for row in results] == [{"label": "bug"}] * RUNS
    assert len(server.arrivals) == RUNS
    # Four threads in two workers would send all twelve at once; the limit lets four through
    # in any two seconds. A request is counted when it leaves the worker's limit check and
    # arrives a little later (a process's first one after opening its connection), so the
    # window counted here is shorter by that way: unlimited, it would still hold all twelve.
    assert most_in_any_window(server.arrivals, PERIOD - 0.5) <= LIMIT
    assert main(["runs", "list", "--queue", queue, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert len({run["worker"] for run in listed}) == 2  # both workers took runs
    assert "waiting" in workers.errors() and f"openai: {LIMIT} requests per 2s" in workers.errors()
    # A run that waited says in its trace how long its model call waited, and for which
    # limit. Which runs waited depends on the order the workers took them (not the cases'),
    # so every run's trace is read (only four of the twelve requests fit in one period).
    waited = 0
    for row in results:
        assert main(["runs", "show", row["runs"][0], "--workspace", str(tmp_path)]) == 0
        waited += f"openai: {LIMIT} requests per 2s" in capsys.readouterr().out
    assert waited >= 1


@pytest.mark.parametrize(
    ("option", "at_once"),
    [(("--model-concurrency", "openai://small=1"), 1), (("--queue-concurrency", "2"), 2)],
)
def test_calls_and_runs_at_once_hold_over_workers_started_without_the_option(
    tmp_path: Path, option: tuple[str, str], at_once: int, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "labeler.as").write_text(PROGRAM, encoding="utf-8")
    cases = [{"id": f"t{i}", "input": {"ticket": f"t {i}"}, "expected": None} for i in range(8)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    queue = queue_url("sqlite", tmp_path)
    # Each answer takes a while, so calls overlap whenever the limits let them.
    with serving(lambda model, body: json.dumps({"label": "bug"}), latency=0.2) as server:
        workers = Workers(queue, server)
        workers.start(2.0, *option)
        workers.wait_until_serving()
        workers.start()  # no option: it applies the stored limit
        workers.wait_until_serving()
        try:
            code, _ = submit(
                capsys, str(tmp_path / "labeler.as"), "--input-file",
                str(tmp_path / "cases.jsonl"), "--queue", queue, "--wait",
            )  # fmt: skip
        finally:
            workers.stop()
    assert code == 0
    assert len(server.requests) == 8
    # Two workers of two slots each would have four calls in flight.
    assert server.most_in_flight == at_once


def limits_on(tmp_path: Path, *limits: Limit) -> SharedLimits:
    shared = SharedLimits(QueueDatabase(queue_url("sqlite", tmp_path)), "me")
    shared.publish(list(limits))
    return shared


def test_tokens_are_counted_when_the_answer_comes(tmp_path: Path) -> None:
    shared = limits_on(tmp_path, Limit(TOKENS, "openai", 100, 60.0))
    first = shared.acquire("openai", "openai://small")
    assert isinstance(first, Ticket)
    # Spent nothing yet: a second call fits; once 100 tokens were spent, none does.
    assert isinstance(shared.acquire("openai", "openai://small"), Ticket)
    shared.release(first, 100)
    waiting = shared.acquire("openai", "openai://small")
    assert isinstance(waiting, tuple)
    seconds, limit = waiting
    assert 59 < seconds <= 60 and limit.kind == TOKENS
    # Another provider is not limited by it.
    assert shared.acquire("anthropic", "anthropic://claude") == Ticket(None)


def test_calls_in_flight_per_model_and_a_dead_workers_calls(tmp_path: Path) -> None:
    shared = limits_on(tmp_path, Limit(CONCURRENCY, "openai://small", 1))
    held = shared.acquire("openai", "openai://small")
    assert isinstance(held, Ticket) and held.row is not None
    assert isinstance(shared.acquire("openai", "openai://small"), tuple)
    assert shared.acquire("openai", "openai://large") == Ticket(None)
    shared.forget_worker("me")  # as when this worker is found dead
    assert isinstance(shared.acquire("openai", "openai://small"), Ticket)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("openai=500/min", Limit(REQUESTS, "openai", 500, 60.0)),
        ("openai=500", Limit(REQUESTS, "openai", 500, 60.0)),
        ("openai=5/2s", Limit(REQUESTS, "openai", 5, 2.0)),
        ("openai=5/h", Limit(REQUESTS, "openai", 5, 3600.0)),
    ],
)
def test_rates_are_read_with_their_period(text: str, expected: Limit) -> None:
    assert parse_rate(REQUESTS, text) == expected


@pytest.mark.parametrize("text", ["openai", "openai=many", "openai=5/fortnight", "=5"])
def test_a_bad_rate_names_the_option_and_the_form(text: str) -> None:
    with pytest.raises(AppError, match=r"--requests .*PROVIDER=N/PERIOD"):
        parse_rate(REQUESTS, text)


def test_a_bad_limit_on_the_command_line_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = queue_url("sqlite", tmp_path)
    assert main(["worker", "--queue", url, "--model-concurrency", "openai://x=0"]) == 2
    assert "--model-concurrency 'openai://x=0': give MODEL=N" in capsys.readouterr().err
    assert parse_concurrency("openai://gpt-4o=4") == Limit(CONCURRENCY, "openai://gpt-4o", 4)
    assert main(["worker", "--queue", url, "--concurrency", "8", "--queue-concurrency", "4"]) == 2
    assert "fewer than this worker's --concurrency 8" in capsys.readouterr().err
