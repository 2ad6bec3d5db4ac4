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

Risk comes from the tool's annotations in `tools/list`, read with the MCP spec's defaults:
read-only → "read"; not destructive → "effect"; anything else → "destructive". Annotations are
the server's own claims; they can lower the gate only for servers the user chose to configure.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from mcp.types import CallToolResult, TextContent, Tool

from agentscript.providers.tools.base import Risk
from agentscript.providers.tools.mcp_client import DEFAULT_START_TIMEOUT, McpConnections
from agentscript.providers.tools.mcp_config import server_key
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall
from agentscript.runtime.values import sanitize


class McpTools:
    """The SchemeTool for `mcp://`. Servers start on first use and stay up until `close()`,
    which the run calls at its end (or use the object as a context manager).

    `workspace` holds `agentscript.mcp.json` and is where stdio servers run; `environ` is where
    `$VAR` in that file is looked up (the process environment by default); `start_timeout`
    bounds the start of servers whose entry sets no `startTimeout`.
    """

    def __init__(
        self,
        workspace: Path,
        *,
        environ: Mapping[str, str] | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
    ) -> None:
        self._servers = McpConnections(workspace, environ, start_timeout)

    def risk(self, request: ToolCall) -> Risk:
        """From the named tool's annotations; reading them may start the server."""
        name, _ = _target(request)
        return risk_of(self._tool(server_key(request.uri), name))

    def call(self, request: ToolCall) -> Any:
        key = server_key(request.uri)
        name, arguments = _target(request)
        self._tool(key, name)
        return normalise(self._servers.call_tool(key, name, sanitize(arguments), request.deadline))

    def list_tools(self, uri: str) -> list[dict[str, Any]]:
        """What the server of `uri` offers, for `agentscript tools`: each tool's name,
        description, input schema, annotations and the risk they imply."""
        return [describe_tool(tool) for tool in self._servers.tools(server_key(uri)).values()]

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

    def _tool(self, key: str, name: str) -> Tool:
        tools = self._servers.tools(key)
        tool = tools.get(name)
        if tool is None:
            known = ", ".join(tools) or "none"
            raise ExecutionError(f"MCP server '{key}' has no tool '{name}'. Its tools: {known}")
        return tool


def list_server_tools(
    workspace: Path, uri: str, *, environ: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """The tools of the server `uri` names, without running a program: starts the server,
    lists its tools and stops it again."""
    with McpTools(workspace, environ=environ) as tools:
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


def risk_of(tool: Tool) -> Risk:
    """The risk a tool's annotations claim; without annotations MCP assumes the worst."""
    hints = tool.annotations
    if hints is not None and hints.read_only_hint is True:
        return "read"
    if hints is not None and hints.destructive_hint is False:
        return "effect"
    return "destructive"


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


def describe_tool(tool: Tool) -> dict[str, Any]:
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
        "risk": risk_of(tool),
    }
