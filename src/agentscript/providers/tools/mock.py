"""The mock tool provider (reference §4.2): records the call and answers with a summary."""

from __future__ import annotations

from typing import Any

from agentscript.runtime.ports import ToolCall


class MockTools:
    """Every call answers `{summary: "<Tool>.<method>", source: <uri>, args: [...]}`."""

    def call(self, request: ToolCall) -> Any:
        return {
            "summary": f"{request.tool_name}.{request.method}",
            "source": request.uri,
            "args": list(request.args),
        }
