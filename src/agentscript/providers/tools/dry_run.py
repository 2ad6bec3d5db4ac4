"""Host tools for a dry run: reads really run, so the prompts shown are the real ones; a call
that would change something does not run and answers `{ok: true, dryRun: true, effects: []}`.
No MCP server is started in a dry run (its tools answer like calls that would change something):
starting one is itself an action. A `node:`/`npm:` call runs no Node: its import is checked
against agentscript.npm.json and it answers null, as in the original.
"""

from __future__ import annotations

from typing import Any

from agentscript.providers.tools.mcp_launch import StartRefused
from agentscript.providers.tools.npm_allow import NpmRegistry
from agentscript.providers.tools.registry import ToolRegistry
from agentscript.providers.tools.tool_uris import scheme_of
from agentscript.runtime.ports import ToolCall


class DryRunTools:
    def __init__(self, registry: ToolRegistry, modules: NpmRegistry | None = None) -> None:
        self.registry = registry
        self.modules = modules

    def call(self, request: ToolCall) -> Any:
        if self.modules is not None and scheme_of(request.uri) in ("node", "npm"):
            self.modules.check(request.uri)
            return None
        if self.registry.risk(request) == "read":
            try:
                return self.registry.call(request)
            except StartRefused:
                pass
        return {"ok": True, "dryRun": True, "effects": []}

    def close(self) -> None:
        self.registry.close()
