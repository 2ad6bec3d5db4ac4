"""`mcp://` tools: the tools of MCP servers configured in `agentscript.mcp.json`.

`import tool Search from "mcp://tools/search"` names the server `tools/search` (host + path).
A program calls a server tool either generically, `Search.call({tool: "web_search", args:
{q: "x"}})`, or directly, `Search.web_search({q: "x"})`. Either way the answer is normalised so
programs need not know MCP's content types:

    {ok: not isError, text: <text blocks joined by "\\n">, content: [<content blocks as JSON>],
     structured: <structured content or null>, isError: <bool>}

A tool that reports isError answers normally with `ok: false`: that is the tool's answer (bad
input, nothing found), which a program may handle. Protocol errors, transport failures,
timeouts and a server that went away raise ExecutionError.

Risk comes from the configuration, never from the server: `"tools": {"peek": {"readOnlyHint":
true}}` in the server's entry, read with MCP's defaults (read-only → "read"; not destructive →
"effect"; a tool the entry does not rate → "destructive"). Deciding it never starts a server.
A server starts only when the `approve_start` port allows its launch (the approval gate in a
run); the default approves nothing. The annotations a server claims in `tools/list` are shown
by `agentscript tools`, as its claims.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from mcp.types import CallToolResult, TextContent, Tool

from agentscript.providers.tools.base import Risk
from agentscript.providers.tools.mcp_client import (
    DEFAULT_START_TIMEOUT,
    ApproveLaunch,
    McpConnections,
)
from agentscript.providers.tools.mcp_config import (
    configured_risk,
    launch_of,
    risk_from_hints,
    server_key,
)
from agentscript.providers.tools.mcp_launch import (
    McpConfigSnapshot,
    ServerLaunch,
    StartApprover,
    refuse_every_start,
)
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall
from agentscript.runtime.values import sanitize


class McpTools:
    """The SchemeTool for `mcp://`. Servers start on first use and stay up until `close()`,
    which the run calls at its end (or use the object as a context manager).

    `workspace` holds `agentscript.mcp.json` and is where stdio servers run; `config` is that
    file as read at run start (read now when not given); `environ` is where `$VAR` in that file
    is looked up (the process environment by default); `start_timeout` bounds the start of
    servers whose entry sets no `startTimeout`; `approve_start` is asked before any server
    starts.
    """

    def __init__(
        self,
        workspace: Path,
        *,
        config: McpConfigSnapshot | None = None,
        environ: Mapping[str, str] | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        approve_start: StartApprover = refuse_every_start,
    ) -> None:
        self._servers = McpConnections(workspace, environ, start_timeout, config)
        self._approve_start = approve_start

    def risk(self, request: ToolCall) -> Risk:
        """From the server's configuration; no server is started to decide it."""
        name, _ = _target(request)
        return configured_risk(self._servers.server(server_key(request.uri)), name)

    def launch(self, uri: str) -> ServerLaunch:
        """What using `uri` would start, as configured."""
        key = server_key(uri)
        return launch_of(key, self._servers.server(key))

    def configured_risks(self, uri: str) -> dict[str, Risk]:
        """The tools the configuration rates, with their risk; any other tool is destructive."""
        return {
            name: rating.risk
            for name, rating in self._servers.server(server_key(uri)).tools.items()
        }

    def call(self, request: ToolCall) -> Any:
        key = server_key(request.uri)
        name, arguments = _target(request)

        def approve(launch: ServerLaunch) -> None:
            self._approve_start(request, launch)

        self._tool(key, name, approve)
        return normalise(
            self._servers.call_tool(key, name, sanitize(arguments), approve, request.deadline)
        )

    def list_tools(self, uri: str) -> list[dict[str, Any]]:
        """What the server of `uri` offers, for `agentscript tools`: each tool's name,
        description, input schema, the annotations the server claims, and the risk the
        configuration gives it. Starts the server if `approve_start` allows it."""
        key = server_key(uri)
        config = self._servers.server(key)
        # The start is asked for as if a tool `list` of the server were called.
        asking = ToolCall(key, uri, "list", [])

        def approve(launch: ServerLaunch) -> None:
            self._approve_start(asking, launch)

        return [
            describe_tool(tool, configured_risk(config, tool.name))
            for tool in self._servers.tools(key, approve).values()
        ]

    def close(self) -> None:
        self._servers.close()

    def __enter__(self) -> McpTools:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _tool(self, key: str, name: str, approve: ApproveLaunch) -> Tool:
        tools = self._servers.tools(key, approve)
        tool = tools.get(name)
        if tool is None:
            known = ", ".join(tools) or "none"
            raise ExecutionError(f"MCP server '{key}' has no tool '{name}'. Its tools: {known}")
        return tool


def approve_every_start(request: ToolCall, launch: ServerLaunch) -> None:
    """For `agentscript tools` without `--dry`: the person asked to see what the servers
    offer, which takes starting them."""


def list_server_tools(
    workspace: Path,
    uri: str,
    *,
    environ: Mapping[str, str] | None = None,
    start_timeout: float = DEFAULT_START_TIMEOUT,
) -> list[dict[str, Any]]:
    """The tools of the server `uri` names, without running a program: starts the server,
    lists its tools and stops it again. `start_timeout` bounds the start of a server whose
    configuration sets none."""
    with McpTools(
        workspace, environ=environ, approve_start=approve_every_start, start_timeout=start_timeout
    ) as tools:
        return tools.list_tools(uri)


def _target(request: ToolCall) -> tuple[str, dict[str, Any]]:
    """The server tool a call names and its arguments, from either call form."""
    label = f"MCP {request.label}"
    if request.method == "call":
        if len(request.args) != 1 or not isinstance(request.args[0], dict):
            raise ExecutionError(f"{label} expects one object argument {{tool, args?}}")
        spec: dict[str, Any] = request.args[0]
        name = spec.get("tool")
        if not isinstance(name, str) or name == "":
            raise ExecutionError(f"{label} tool is required")
        arguments = spec.get("args")
        if arguments is None:
            return name, {}
        if not isinstance(arguments, dict):
            raise ExecutionError(f"{label} args must be an object")
        return name, arguments
    if len(request.args) > 1:
        raise ExecutionError(f"{label} expects zero or one argument")
    if not request.args:
        return request.method, {}
    argument = request.args[0]
    if not isinstance(argument, dict):
        raise ExecutionError(f"{label} expects an object argument")
    return request.method, argument


def claimed_risk(tool: Tool) -> Risk:
    """The risk a tool's own annotations claim; without annotations MCP assumes the worst."""
    hints = tool.annotations
    if hints is None:
        return "destructive"
    return risk_from_hints(hints.read_only_hint, hints.destructive_hint)


def normalise(result: CallToolResult) -> dict[str, Any]:
    """A tool result as plain JSON, the same shape whatever content the server sent."""
    return {
        "ok": not result.is_error,
        "text": "\n".join(block.text for block in result.content if isinstance(block, TextContent)),
        "content": [
            block.model_dump(mode="json", by_alias=True, exclude_none=True)
            for block in result.content
        ],
        "structured": result.structured_content,
        "isError": result.is_error,
    }


def describe_tool(tool: Tool, risk: Risk) -> dict[str, Any]:
    """A tool as `agentscript tools` lists it: `risk` is what the gate uses (from the
    configuration), `claimedRisk` what the server's annotations would make it."""
    annotations = tool.annotations
    return {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "annotations": (
            annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
            if annotations is not None
            else None
        ),
        "risk": risk,
        "claimedRisk": claimed_risk(tool),
    }
