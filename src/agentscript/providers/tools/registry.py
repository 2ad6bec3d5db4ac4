"""The host tool provider: dispatches each call to the tool of its URI scheme.

An unknown scheme is an error naming it and the supported ones. Approvals wrap the registry
(see approvals.py), so every scheme is gated the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from agentscript.providers.tools.base import Risk, SchemeTool
from agentscript.providers.tools.tool_uris import scheme_of
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall, is_closeable


class ToolRegistry:
    """A ToolProvider over scheme tools, e.g. {"sh": ShellTools(...), "file": FileTools(...)}."""

    def __init__(self, tools: Mapping[str, SchemeTool]) -> None:
        self._tools = dict(tools)

    def tool_for(self, request: ToolCall) -> SchemeTool:
        scheme = scheme_of(request.uri)
        tool = self._tools.get(scheme)
        if tool is None:
            supported = ", ".join(sorted(self._tools))
            raise ExecutionError(f"Unsupported tool URI scheme '{scheme}'. Supported: {supported}")
        return tool

    def risk(self, request: ToolCall) -> Risk:
        return self.tool_for(request).risk(request)

    def call(self, request: ToolCall) -> Any:
        return self.tool_for(request).call(request)

    def close(self) -> None:
        """Close each distinct tool once (`http` and `https` share one)."""
        closed: set[int] = set()
        for tool in self._tools.values():
            if is_closeable(tool) and id(tool) not in closed:
                closed.add(id(tool))
                tool.close()


class LazyTool:
    """A scheme tool built on first use, so runs that never call it never pay for it (the MCP
    SDK, for one, is slow to import)."""

    def __init__(self, factory: Callable[[], SchemeTool]) -> None:
        self._factory = factory
        self._tool: SchemeTool | None = None
        self._lock = threading.Lock()

    def _get(self) -> SchemeTool:
        with self._lock:
            if self._tool is None:
                self._tool = self._factory()
            return self._tool

    def risk(self, request: ToolCall) -> Risk:
        return self._get().risk(request)

    def call(self, request: ToolCall) -> Any:
        return self._get().call(request)

    def close(self) -> None:
        with self._lock:
            tool, self._tool = self._tool, None
        close = getattr(tool, "close", None)
        if callable(close):
            close()
