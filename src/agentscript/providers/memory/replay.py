"""Memory calls kept in the run journal, and answered from it: replay and resume.

`JournaledMemory` logs each finished `add` and `query`, with the next journal write (a memory
is no side effect the user must approve, and one lost to a kill is done again). `ReplayMemory`
answers them from such a log, matched by memory, operation and argument in journaled order,
without touching the store; what the log cannot answer is a mismatch, or, when the replay may
go live (lenient replay, resume), a call to the live memory. Arguments are compared as the
journal keeps them, scrubbed with the run's redaction set (`scrub`).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from agentscript.runtime.errors import ReplayMismatch
from agentscript.runtime.jsjson import stringify
from agentscript.runtime.ports import MEMORY_EXCHANGE, ExchangeLog, MemoryProvider
from agentscript.runtime.ports import MemoryRequest as Request
from agentscript.runtime.values import sanitize


def memory_call(request: Request, result: Any) -> dict[str, Any]:
    """A memory call as the journal and a cassette keep it."""
    return {
        "memory": request.memory_name,
        "operation": request.operation,
        "argument": sanitize(request.argument),
        "result": sanitize(result),
    }


class JournaledMemory:
    """A MemoryProvider that logs every call it passes on once it has its answer."""

    def __init__(self, inner: MemoryProvider, log: ExchangeLog) -> None:
        self._inner = inner
        self._log = log

    def add(self, request: Request) -> Any:
        result = self._inner.add(request)
        self._log.exchange(MEMORY_EXCHANGE, memory_call(request, result))
        return result

    def query(self, request: Request) -> Any:
        result = self._inner.query(request)
        self._log.exchange(MEMORY_EXCHANGE, memory_call(request, result))
        return result


class ReplayMemory:
    """A MemoryProvider answering from journaled memory calls (see the module doc)."""

    def __init__(
        self,
        calls: list[dict[str, Any]],
        live: MemoryProvider,
        source: str,
        go_live: bool,
        scrub: Callable[[Any], Any] = lambda value: value,
    ) -> None:
        self._live = live
        self._scrub = scrub
        self._source = source
        self._go_live = go_live
        self._lock = threading.Lock()
        self._queues: dict[str, deque[dict[str, Any]]] = {}
        for call in calls:
            key = _key(call.get("memory"), call.get("operation"), call.get("argument"))
            self._queues.setdefault(key, deque()).append(call)

    def add(self, request: Request) -> Any:
        return self._answer(request, self._live.add)

    def query(self, request: Request) -> Any:
        return self._answer(request, self._live.query)

    def _answer(self, request: Request, live: Callable[[Request], Any]) -> Any:
        argument = self._scrub(sanitize(request.argument))
        key = _key(request.memory_name, request.operation, argument)
        with self._lock:
            queue = self._queues.get(key)
            call = queue.popleft() if queue else None
        if call is not None:
            return call.get("result")
        if self._go_live:
            return live(request)
        shown = stringify(argument)
        raise ReplayMismatch(
            f"Replay of {self._source} does not match at memory call "
            f"{request.memory_name}.{request.operation}",
            [f"argument not recorded: {shown if len(shown) <= 100 else shown[:97] + '...'}"],
        )


def _key(memory: Any, operation: Any, argument: Any) -> str:
    return stringify([memory, operation, argument])
