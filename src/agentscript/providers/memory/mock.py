"""The mock memory provider (reference §4.2): keeps records in this process only."""

from __future__ import annotations

import threading
from typing import Any

from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import MemoryRequest


class MockMemory:
    """`add` returns an envelope with a counting id; `query` returns everything, newest first,
    ignoring filters (the original's behaviour, kept for offline examples)."""

    def __init__(self) -> None:
        self._records: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add(self, request: MemoryRequest) -> Any:
        if not isinstance(request.argument, dict):
            raise ExecutionError("memory.add expects an object record")
        with self._lock:
            envelope = {
                "id": str(len(self._records) + 1),
                "created_at": "mock",
                "updated_at": "mock",
                "record": request.argument,
            }
            self._records.append(envelope)
        return envelope

    def query(self, request: MemoryRequest) -> Any:
        if not isinstance(request.argument, dict):
            raise ExecutionError("memory.query expects an object query")
        with self._lock:
            return list(reversed(self._records))
