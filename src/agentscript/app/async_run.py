"""Agents from async Python: `arun`, and the events of a running program as they happen.

A run is synchronous code (the interpreter, the providers' HTTP calls); an asyncio
application must not wait on it in its event loop. So each run goes to a thread of its own,
and what it does comes back to the loop through `call_soon_threadsafe` into an asyncio queue:

    async with agentscript.stream("triage.as", {"ticket": "…"}) as run:
        async for event in run:
            match event:
                case agentscript.TextDelta(text=text): print(text, end="")
                case agentscript.PartialValue(value=value): show(value)
        result = run.result

Many runs can go at once in one process, each with its own budgets and journal entry.
Cancelling the task that awaits a run (or leaving the `async with` early) stops the run the
way Ctrl-C stops a run in a terminal: a tool call in flight is interrupted at once (the run's
`RunConfig.interrupt` event), otherwise the run stops at its next step; its journal entry ends
`interrupted`. A model request already sent is not taken back; the run stops when it returns or
at its next streamed piece.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from agentscript.runtime.partial_json import partial_json
from agentscript.runtime.trace import TraceEvent, TraceSink

if TYPE_CHECKING:
    from agentscript.app.configuration import RunConfig
    from agentscript.lang import ast
    from agentscript.runtime.interpreter import RunResult


@dataclass(frozen=True, slots=True)
class StepStarted:
    """A slow step begins: a generate's attempt, a tool call (`kind`, and what it is)."""

    kind: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StepDone:
    """A step of the trace has finished (the trace's own event)."""

    event: TraceEvent


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of a model's answer as it streams."""

    text: str


@dataclass(frozen=True, slots=True)
class PartialValue:
    """The answer so far, read as the declared shape's object (fields appear as they
    arrive; the finished generate's value is checked whole)."""

    value: Any


@dataclass(frozen=True, slots=True)
class Finished:
    """The run ended with a value: the last event."""

    result: RunResult


RunEvent = StepStarted | StepDone | TextDelta | PartialValue | Finished


class RunCancelled(KeyboardInterrupt):
    """Raised in a run's thread when its awaiting task is cancelled; a KeyboardInterrupt so
    the run stops the way Ctrl-C stops it (tools stopped, journal entry `interrupted`)."""


async def arun(
    program: ast.Program | str | Path, input: Any = None, config: RunConfig | None = None
) -> RunResult:
    """`agentscript.run` for asyncio: the run goes on in a thread, the loop stays free.
    Raises what `run` raises; cancelling the awaiting task stops the run."""
    async with RunStream(program, input, config, stream_text=False) as run:
        async for _ in run:
            pass
        return run.result


def stream(
    program: ast.Program | str | Path, input: Any = None, config: RunConfig | None = None
) -> RunStream:
    """The events of a run as it goes (answers streamed: `TextDelta` and `PartialValue`),
    the last one `Finished`; use with `async with`, then `async for`."""
    return RunStream(program, input, config, stream_text=True)


class RunStream:
    """One run in its own thread, its events on the loop's queue."""

    def __init__(
        self,
        program: ast.Program | str | Path,
        input: Any,
        config: RunConfig | None,
        stream_text: bool,
    ) -> None:
        from agentscript.app.configuration import RunConfig

        base = config or RunConfig()
        self._program = program
        self._input = input
        # One event stops both: the bridge at the run's next step, tool calls in flight now.
        self._cancel = base.interrupt if base.interrupt is not None else threading.Event()
        self._queue: asyncio.Queue[RunEvent | BaseException] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._result: RunResult | None = None
        self._done = False
        sink = _Bridge(self._post, self._cancel)
        self._config = dataclasses.replace(
            base,
            trace_sinks=[*base.trace_sinks, sink],
            stream=base.stream or stream_text,
            interrupt=self._cancel,
        )

    @property
    def result(self) -> RunResult:
        """The run's result, once `Finished` has come."""
        if self._result is None:
            raise RuntimeError("the run has not finished")
        return self._result

    async def __aenter__(self) -> RunStream:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._work, name="agentscript-run", daemon=True)
        self._thread.start()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._thread is None:
            return
        if not self._done:
            self._cancel.set()
        # The thread ends at the run's next step; wait for it without holding the loop.
        await asyncio.shield(asyncio.to_thread(self._thread.join))

    def __aiter__(self) -> RunStream:
        return self

    async def __anext__(self) -> RunEvent:
        if self._done:
            raise StopAsyncIteration
        if self._thread is None:
            raise RuntimeError(
                "the run has not started: iterate inside `async with agentscript.stream(...)`"
            )
        try:
            item = await self._queue.get()
        except asyncio.CancelledError:
            self._cancel.set()
            raise
        if isinstance(item, BaseException):
            self._done = True
            raise item
        if isinstance(item, Finished):
            self._done = True
            self._result = item.result
        return item

    def _work(self) -> None:
        from agentscript.app.run import run

        try:
            result = run(self._program, self._input, self._config)
        except BaseException as error:  # handed to the loop: raised where the events are read
            self._post(error)
            return
        self._post(Finished(result))

    def _post(self, item: RunEvent | BaseException) -> None:
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody is reading any more
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)


class _Bridge(TraceSink):
    """The trace sink in the run's thread: each event to the loop, and the cancel check at
    every step (raising RunCancelled there stops the run)."""

    def __init__(self, post: Callable[[RunEvent], None], cancel: threading.Event) -> None:
        self._post = post
        self._cancel = cancel
        # The answer streaming so far, per thread: `parallel for` iterations generate at once.
        self._answers = threading.local()

    def _check(self) -> None:
        if self._cancel.is_set():
            raise RunCancelled("the run was cancelled")

    def step_started(self, kind: str, data: dict[str, Any]) -> None:
        self._check()
        if kind == "generate":
            self._answers.text, self._answers.shown = "", None
        self._post(StepStarted(kind, dict(data)))

    def event(self, event: TraceEvent) -> None:
        self._post(StepDone(event))
        self._check()

    def text_delta(self, text: str) -> None:
        self._check()
        self._post(TextDelta(text))
        answer = getattr(self._answers, "text", "") + text
        self._answers.text = answer
        value = partial_json(answer)
        if isinstance(value, dict | list) and value != getattr(self._answers, "shown", None):
            self._answers.shown = value
            self._post(PartialValue(value))
