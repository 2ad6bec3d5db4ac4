"""Which MCP servers `mcp://` URIs name: the `agentscript.mcp.json` file at the workspace root.

The format is the Claude-style one users already have for other MCP clients:

    {"mcpServers": {
        "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                   "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}},
        "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer $TOKEN"}}
    }}

A server with `command` runs as a child process over stdio, one with `url` is reached over
Streamable HTTP; `"transport": "stdio" | "http"` (or Claude Code's `"type"`) says so explicitly.
`"timeout"` bounds each tool call and `"startTimeout"` the server's start, in seconds.
`"tools": {"<tool>": {"readOnlyHint": true}}` rates a server's tools with MCP's annotation
names; the approval gate decides from these, before the server runs, and a tool not rated here
is destructive (what MCP assumes of an unannotated tool). The server's own annotations are
never consulted by the gate: they arrive only after the server has started.
Keys other clients add (`disabled`, `autoApprove`, …) are ignored so one file can serve them
all. `$VAR` and `${VAR}` in the command, args, env and header values are expanded when the server
starts (`${AGENTSCRIPT_PYTHON}` is the Python running AgentScript), so a
missing variable only matters for a server the program actually uses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeAlias
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentscript.providers.tools.base import Risk
from agentscript.providers.tools.mcp_launch import CONFIG_FILE, McpConfigSnapshot, ServerLaunch
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.jsjson import parse

# Seconds a tool call may take unless the server's entry sets `timeout`.
DEFAULT_CALL_TIMEOUT = 60.0

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
# Spellings of the two transports; Claude Code writes "type" and other clients these names.
_TRANSPORTS: dict[str, Literal["stdio", "http"]] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamableHttp": "http",
}


class ToolRating(BaseModel):
    """How risky one server tool is, in the words of MCP's tool annotations."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    read_only_hint: bool | None = Field(default=None, alias="readOnlyHint")
    destructive_hint: bool | None = Field(default=None, alias="destructiveHint")

    @property
    def risk(self) -> Risk:
        return risk_from_hints(self.read_only_hint, self.destructive_hint)


class _ServerEntry(BaseModel):
    """What both transports share. Unknown keys belong to other clients and are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    # The risk of each tool, decided here rather than by the server (see the module doc).
    tools: dict[str, ToolRating] = Field(default_factory=dict)

    # Seconds one tool call may take before it fails.
    timeout: float = Field(default=DEFAULT_CALL_TIMEOUT, gt=0)
    # Seconds the server may take to start and list its tools; None: the client's default.
    # A server fetched on first use (`npx -y …`, `uvx …`) may need more than the default.
    start_timeout: float | None = Field(default=None, gt=0, alias="startTimeout")


class StdioServer(_ServerEntry):
    """A server run as a child process that speaks MCP over its stdin and stdout."""

    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    # Relative to the workspace root, which is also the default.
    cwd: str | None = None


class HttpServer(_ServerEntry):
    """A server reached over MCP Streamable HTTP."""

    url: str
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"expected an http:// or https:// URL, got {url!r}")
        return url


ServerConfig: TypeAlias = StdioServer | HttpServer


class _ConfigFile(BaseModel):
    model_config = ConfigDict(extra="ignore")

    servers: dict[str, dict[str, Any]] = Field(alias="mcpServers")


def server_key(uri: str) -> str:
    """The server an `mcp://` URI names: host and path, `mcp://tools/search` → `tools/search`."""
    parts = urlsplit(uri)
    key = (parts.netloc + parts.path).strip("/")
    if not key:
        raise ExecutionError(f"MCP tool URI '{uri}' names no server (expected mcp://<server>)")
    return key


def risk_from_hints(read_only: bool | None, destructive: bool | None) -> Risk:
    """MCP's reading of tool annotations: read-only → read; not destructive → effect; anything
    else (no annotation included) → destructive."""
    if read_only is True:
        return "read"
    if destructive is False:
        return "effect"
    return "destructive"


def configured_risk(config: ServerConfig, tool: str) -> Risk:
    """The risk of calling `tool`, from the configuration alone."""
    rating = config.tools.get(tool)
    return rating.risk if rating is not None else "destructive"


def launch_of(key: str, config: ServerConfig) -> ServerLaunch:
    """What starting the server would launch, as configured (unexpanded)."""
    if isinstance(config, HttpServer):
        return ServerLaunch(key, "http", url=config.url)
    return ServerLaunch(
        key,
        "stdio",
        command=(config.command, *config.args),
        env=tuple(sorted(config.env.items())),
        cwd=config.cwd,
    )


def load_servers(snapshot: McpConfigSnapshot) -> dict[str, ServerConfig] | None:
    """Every server of the configuration read at run start, or None when there was no file.

    A malformed file is an error naming the file and the problem, even if the broken entry is
    not the one asked for: a config file is fixed once, not discovered one server at a time.
    """
    path, text = snapshot.path, snapshot.text
    if snapshot.problem is not None:
        raise ExecutionError(snapshot.problem)
    if text is None:
        return None
    try:
        raw = parse(text)
    except json.JSONDecodeError as problem:
        raise ExecutionError(
            f"{path} is not valid JSON: {problem.msg} at line {problem.lineno} "
            f"column {problem.colno}"
        ) from None
    except ValueError as problem:
        raise ExecutionError(f"{path} is not valid JSON: {problem}") from None
    try:
        entries = _ConfigFile.model_validate(raw).servers
    except ValidationError as problem:
        raise ExecutionError(
            f'{path} must be an object with "mcpServers": {{"<name>": {{…}}}} '
            f"({_describe(problem)})"
        ) from None
    return {key: _server(path, key, entry) for key, entry in entries.items()}


def _server(path: Path, key: str, entry: dict[str, Any]) -> ServerConfig:
    transport = _transport(path, key, entry)
    model: type[ServerConfig] = StdioServer if transport == "stdio" else HttpServer
    try:
        return model.model_validate(entry)
    except ValidationError as problem:
        raise ExecutionError(
            f"{path}: MCP server '{key}' ({transport}) is invalid: {_describe(problem)}"
        ) from None


def _transport(path: Path, key: str, entry: dict[str, Any]) -> Literal["stdio", "http"]:
    """The transport an entry asks for explicitly, or the one its `command` / `url` implies."""
    explicit = entry.get("transport", entry.get("type"))
    if explicit is not None:
        transport = _TRANSPORTS.get(explicit) if isinstance(explicit, str) else None
        if transport is None:
            raise ExecutionError(
                f"{path}: MCP server '{key}' has unsupported transport {json.dumps(explicit)} "
                '(use "stdio" or "http")'
            )
        return transport
    if "command" in entry:
        return "stdio"
    if "url" in entry:
        return "http"
    raise ExecutionError(
        f'{path}: MCP server \'{key}\' needs "command" (a stdio server) or "url" '
        "(a Streamable HTTP server)"
    )


def _describe(problem: ValidationError) -> str:
    """Pydantic's errors as `field: message` pairs, without its links and input echoes."""
    parts = []
    for error in problem.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in error["loc"])
        parts.append(f"{where}: {error['msg']}" if where else error["msg"])
    return "; ".join(parts)


def expand(value: str, environ: Mapping[str, str], key: str, where: str) -> str:
    """`value` with `$VAR` / `${VAR}` replaced from `environ`; a missing variable is an error
    naming it, the server and the setting that uses it (`env.GITHUB_TOKEN`)."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        found = environ.get(name)
        if found is None:
            raise ExecutionError(
                f"MCP server '{key}': environment variable {name} is not set "
                f"(used in {where} of {CONFIG_FILE})"
            )
        return found

    return _VARIABLE.sub(replace, value)
