"""`host://NAME` tools: tools the host itself provides, named by the URI's host.

- `host://optimizer` (the original also names it `host://agentscript`): the optimizer's
  primitives (app/optimize/primitives.py);
- `host://architect`: AgentSpec validation and compilation, and source analysis
  (app/architect/tool.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentscript.providers.tools.base import Risk, SchemeTool
from agentscript.providers.tools.tool_uris import HOST_TOOLS, host_tool_of
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall


class HostTools:
    """Dispatches a `host://` call to the tool its URI names, each built on first use."""

    def __init__(self, factories: Mapping[str, Callable[[], SchemeTool]]) -> None:
        self._factories = dict(factories)
        self._built: dict[str, SchemeTool] = {}

    def risk(self, request: ToolCall) -> Risk:
        return self._tool(request).risk(request)

    def call(self, request: ToolCall) -> Any:
        return self._tool(request).call(request)

    def _tool(self, request: ToolCall) -> SchemeTool:
        asked = host_tool_of(request.uri)
        name = HOST_TOOLS.get(asked, asked)
        if name not in self._factories:
            known = ", ".join(f"host://{known}" for known in sorted(HOST_TOOLS))
            raise ExecutionError(f"No host tool {request.uri!r} (host tools: {known})")
        if name not in self._built:
            self._built[name] = self._factories[name]()
        return self._built[name]
