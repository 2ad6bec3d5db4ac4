"""Agents from async Python: `agentscript.arun` and `agentscript.stream` against a local
OpenAI-wire server on 127.0.0.1 (streaming too), in one event loop."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.learn.journal import Journal, wait_for_journal
from agentscript.runtime.budgets import BudgetExceeded
from agentscript.runtime.ports import GenerateRequest, GenerateResponse
from openai_wire import serving, user_message

PROGRAM = """import llm Model from "openai://base"

main agent Greeter {
    model Model
    role "greeter"
    description "Greets a person by name."

    main func(input { name: string }) {
        use input.name as "name"
        generate({ input: "Greet the person." }) -> { greeting: string, name: string }
    }
}
"""


def echo_name(model: str, body: dict[str, Any]) -> str:
    """Answers with the name in the prompt: a run that got another run's answer shows it."""
    found = re.search(r"name:\n(.+)", user_message(body))
    name = found.group(1) if found else "?"
    return json.dumps({"greeting": f"Hello, {name}! Nice to meet you today.", "name": name})


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "greet.as"
    path.write_text(PROGRAM, encoding="utf-8")
    return path


def config(server: Any, tmp_path: Path, **options: Any) -> agentscript.RunConfig:
    return agentscript.RunConfig(
        environ=server.environ(), journal_path=tmp_path / "journal.db", **options
    )


def test_twenty_runs_at_once_each_get_their_own_answer_and_journal_entry(
    program: Path, tmp_path: Path
) -> None:
    names = [f"person-{index}" for index in range(20)]

    async def all_at_once(server: Any) -> list[agentscript.RunResult]:
        return await asyncio.gather(
            *(agentscript.arun(program, {"name": name}, config(server, tmp_path)) for name in names)
        )

    with serving(echo_name, latency=0.2) as server:
        results = asyncio.run(all_at_once(server))
        assert server.most_in_flight > 1  # they overlapped
    assert [result.value["name"] for result in results] == names
    assert [result.usage["calls"] for result in results] == [1] * 20
    wait_for_journal()  # a run's end is written by the journal's background thread
    journal = Journal.open(tmp_path / "journal.db")
    try:
        runs = journal.store.runs()
        assert len(runs) == 20 and {run.status for run in runs} == {"ok"}
    finally:
        journal.close()


def test_runs_at_once_keep_their_own_budgets(program: Path, tmp_path: Path) -> None:
    twice = PROGRAM.replace(
        '        generate({ input: "Greet the person." })',
        '        first = generate({ input: "Hi." }) -> { greeting: string, name: string }\n'
        '        generate({ input: "Greet the person." })',
    )
    program.write_text(twice, encoding="utf-8")

    async def both(server: Any) -> list[Any]:
        return await asyncio.gather(
            agentscript.arun(program, {"name": "Ada"}, config(server, tmp_path, max_calls=1)),
            agentscript.arun(program, {"name": "Bob"}, config(server, tmp_path)),
            return_exceptions=True,
        )

    with serving(echo_name, latency=0.1) as server:
        limited, free = asyncio.run(both(server))
    assert isinstance(limited, BudgetExceeded) and limited.budget == "calls"
    assert isinstance(free, agentscript.RunResult)
    assert free.value["name"] == "Bob" and free.usage["calls"] == 2
    journal = Journal.open(tmp_path / "journal.db")
    try:
        assert sorted(run.status for run in journal.store.runs()) == ["error", "ok"]
    finally:
        journal.close()


def test_the_loop_keeps_running_while_a_run_waits_for_its_model(
    program: Path, tmp_path: Path
) -> None:
    ticks = 0

    async def ticker(stop: asyncio.Event) -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    async def main(server: Any) -> agentscript.RunResult:
        stop = asyncio.Event()
        ticking = asyncio.create_task(ticker(stop))
        result = await agentscript.arun(program, {"name": "Ada"}, config(server, tmp_path))
        stop.set()
        await ticking
        return result

    with serving(echo_name, latency=0.5) as server:
        result = asyncio.run(main(server))
    assert result.value["name"] == "Ada"
    # The model took half a second; a blocked loop would have ticked once or twice.
    assert ticks > 10


def test_streamed_text_and_partial_values_arrive_in_order_and_end_with_the_value(
    program: Path, tmp_path: Path
) -> None:
    async def main(server: Any) -> list[Any]:
        events: list[Any] = []
        async with agentscript.stream(program, {"name": "Ada"}, config(server, tmp_path)) as run:
            async for event in run:
                events.append(event)
            assert run.result.value["name"] == "Ada"
        return events

    with serving(echo_name) as server:
        events = asyncio.run(main(server))
    kinds = [type(event).__name__ for event in events]
    assert kinds[-1] == "Finished" and kinds.count("Finished") == 1
    texts = [event.text for event in events if isinstance(event, agentscript.TextDelta)]
    assert len(texts) > 3 and json.loads("".join(texts)) == events[-1].result.value
    partials = [event.value for event in events if isinstance(event, agentscript.PartialValue)]
    assert len(partials) > 2
    # Each partial value grows toward the answer, and the last one is the answer.
    assert partials[-1] == events[-1].result.value
    greetings = [p.get("greeting", "") for p in partials]
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(greetings))
    generate_done = max(
        i
        for i, e in enumerate(events)
        if isinstance(e, agentscript.StepDone) and e.event.kind == "generate"
    )
    assert kinds.index("StepStarted") < kinds.index("TextDelta") < generate_done


def test_a_cancelled_run_stops_and_its_journal_entry_says_interrupted(
    program: Path, tmp_path: Path
) -> None:
    three_steps = PROGRAM.replace(
        '        generate({ input: "Greet the person." })',
        '        first = generate({ input: "Hi." }) -> { greeting: string, name: string }\n'
        '        again = generate({ input: "Hi again." }) -> { greeting: string, name: string }\n'
        '        generate({ input: "Greet the person a third time." })',
    )
    program.write_text(three_steps, encoding="utf-8")

    async def main(server: Any) -> None:
        task = asyncio.create_task(
            agentscript.arun(program, {"name": "Ada"}, config(server, tmp_path))
        )
        while len(server.requests) < 2:  # the second generate is waiting at the server
            assert not task.done(), task.exception()
            await asyncio.sleep(0.01)
        task.cancel()
        for _ in range(5):  # the task takes the cancellation: the run is told to stop
            await asyncio.sleep(0)
        server.release()
        with pytest.raises(asyncio.CancelledError):
            await task

    with serving(echo_name, hold_after=1) as server:
        asyncio.run(main(server))
        # The run stopped as the second answer came back: the third generate never asked.
        assert len(server.requests) == 2
    wait_for_journal()  # a run's end is written by the journal's background thread
    journal = Journal.open(tmp_path / "journal.db")
    try:
        (run,) = journal.store.runs()
        assert run.status == "interrupted"
    finally:
        journal.close()


def test_a_failed_run_raises_its_located_error_where_it_is_awaited(
    program: Path, tmp_path: Path
) -> None:
    def wrong_shape(model: str, body: dict[str, Any]) -> str:
        return json.dumps({"greeting": 3})

    with serving(wrong_shape) as server, pytest.raises(agentscript.AgentScriptError) as failed:
        asyncio.run(agentscript.arun(program, {"name": "Ada"}, config(server, tmp_path)))
    assert failed.value.located().endswith("greet.as:10:55")
    assert "field 'greeting' must be a string, got 3" in str(failed.value)


SLOW_TOOL = """import asyncio
from pathlib import Path


async def wait() -> str:
    \"\"\"Says it has started, then waits far longer than any test.\"\"\"
    (Path(__file__).parents[1] / "started").touch()
    await asyncio.sleep(3600)
    return "woke"
"""

WAITER = """import tool Slow from "python:PACKAGE.slow"

main agent Waiter {
    main func() {
        Slow.wait()
    }
}
"""


@pytest.fixture
def slow_package(tmp_path: Path) -> Iterator[Path]:
    """A workspace allowing one Python tool module whose `wait` never ends on its own."""
    package = "asyncslow_" + "".join(c for c in tmp_path.name if c.isalnum())
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "slow.py").write_text(SLOW_TOOL)
    (tmp_path / "pyproject.toml").write_text(
        f"[project]\nname = 'demo'\n\n[tool.agentscript]\npython_tools = ['{package}.slow']\n"
    )
    program = tmp_path / "wait.as"
    program.write_text(WAITER.replace("PACKAGE", package))
    yield program
    for name in [name for name in sys.modules if name.split(".")[0] == package]:
        del sys.modules[name]


def test_cancelling_stops_the_tool_call_in_flight(slow_package: Path, tmp_path: Path) -> None:
    settings = agentscript.RunConfig(
        model="mock", approve="auto", journal_path=tmp_path / "journal.db"
    )
    started = tmp_path / "started"

    async def main() -> None:
        task = asyncio.create_task(agentscript.arun(slow_package, None, settings))
        while not started.exists():  # the tool's function is running
            assert not task.done(), task.exception()
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    journal = Journal.open(tmp_path / "journal.db")
    try:
        (run,) = journal.store.runs()
        assert run.status == "interrupted"
        # The call was interrupted, not waited out to the Python tool's own two-minute cap,
        # and the journal keeps it.
        (failed,) = [e.data for e in journal.store.entries(run.run_id) if e.kind == "tool"]
        assert failed["error"] == "Interrupted while the tool was running"
    finally:
        journal.close()


GREET_BOTH = """import llm Model from "openai://base"

main agent Greeter {
    model Model
    role "greeter"
    description "Greets two people at once."

    main func() {
        parallel for name in ["a", "b"] max 2 {
            use name as "name"
            generate({ input: "Greet the person." }) -> { greeting: string }
        }
    }
}
"""


TURN_ANSWERS = ('{"greeting": "aaaaaaaaaaaaaaa"}', '{"greeting": "bbbbbbbbbbbbbbb"}')


class TakingTurns:
    """A model whose two concurrent answers stream a piece each in turn, so their text
    interleaves at the sinks the way two `parallel for` iterations' streams do."""

    def __init__(self) -> None:
        self._turns = threading.Barrier(2, timeout=30)
        self._lock = threading.Lock()
        self._next = iter(TURN_ANSWERS)

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        with self._lock:
            text = next(self._next)
        for start in range(0, len(text), 3):
            request.stream(text[start : start + 3])
            self._turns.wait()
        return GenerateResponse(value=json.loads(text), raw_text=text)


def test_concurrent_generates_stream_partial_values_of_their_own_answer(tmp_path: Path) -> None:
    program = tmp_path / "both.as"
    program.write_text(GREET_BOTH)
    settings = agentscript.RunConfig(model=TakingTurns(), journal=False, learn=False)

    async def main() -> tuple[list[Any], Any]:
        async with agentscript.stream(program, None, settings) as run:
            partials = [
                event.value async for event in run if isinstance(event, agentscript.PartialValue)
            ]
            return partials, run.result.value

    partials, value = asyncio.run(main())
    answers = [json.loads(text) for text in TURN_ANSWERS]
    assert sorted(value, key=json.dumps) == answers
    # Each partial value is on its way to one of the answers, never a mix of the two.
    for partial in partials:
        assert any(
            all(answer[key].startswith(part) for key, part in partial.items()) for answer in answers
        ), partial
    assert all(answer in partials for answer in answers)


def test_iterating_a_stream_outside_its_async_with_says_how_to_use_it(program: Path) -> None:
    async def main() -> None:
        async for _ in agentscript.stream(program, {"name": "Ada"}):
            pass

    with pytest.raises(RuntimeError, match=r"inside `async with agentscript\.stream"):
        asyncio.run(main())
