"""Host tools for a dry run: reads really run, so the prompts shown are the real ones; a call
that would change something does not run and answers `{ok: true, dryRun: true, effects: []}`.
No MCP server is started in a dry run (its tools answer like calls that would change something):
starting one is itself an action.
"""

from __future__ import annotations

from typing import Any

from agentscript.providers.tools.mcp_launch import StartRefused
from agentscript.providers.tools.registry import ToolRegistry
from agentscript.runtime.ports import ToolCall


class DryRunTools:
    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry

    def call(self, request: ToolCall) -> Any:
        if self.registry.risk(request) == "read":
            try:
                return self.registry.call(request)
            except StartRefused:
                pass
        return {"ok": True, "dryRun": True, "effects": []}

    def close(self) -> None:
        self.registry.close()
