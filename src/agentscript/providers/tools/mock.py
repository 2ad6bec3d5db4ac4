"""The mock tool provider (reference §4.2): records the call and answers with a summary; and
the newer releases' `--mock`, which answers every call so except those of `host://` tools."""

from __future__ import annotations

from typing import Any

from agentscript.providers.tools.tool_uris import scheme_of
from agentscript.runtime.ports import ToolCall, ToolProvider


class MockTools:
    """Every call answers `{summary: "<Tool>.<method>", source: <uri>, args: [...]}`."""

    def call(self, request: ToolCall) -> Any:
        return {
            "summary": f"{request.tool_name}.{request.method}",
            "source": request.uri,
            "args": list(request.args),
        }


class MockExceptHost:
    """`--mock` from the original's 0.1.19 on: a `host://` tool (the optimizer, the architect)
    is part of the toolchain a mock run tries out, so it runs through `host` (the approval gate
    in front of the host tools, which the run owns and closes); every other call gets the mock tool's answer and touches
    nothing."""

    def __init__(self, host: ToolProvider) -> None:
        self._host = host
        self._mock = MockTools()

    def call(self, request: ToolCall) -> Any:
        if scheme_of(request.uri) == "host":
            return self._host.call(request)
        return self._mock.call(request)
