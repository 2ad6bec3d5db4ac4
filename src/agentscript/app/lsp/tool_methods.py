"""The methods a tool import offers, known without calling or starting anything.

For the built-in schemes they are fixed (`sh://` ignores the method name, so `run` is offered);
`memory://` lists the memory service's tools; an `mcp://` server's tools are only known once it
runs, so by default the editor offers the generic `call` and the tools that the server's entry in
`agentscript.mcp.json` names itself (other clients' `autoApprove` / `alwaysAllow` lists) without
starting it. Only when the user allows it (the server's `startMcpServers` initialization
option) is each server started once to list its tools, as `agentscript tools` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agentscript.providers.tools.mcp_config import server_key
from agentscript.providers.tools.mcp_launch import CONFIG_FILE
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.jsjson import parse as parse_json


@dataclass(frozen=True, slots=True)
class Method:
    name: str
    summary: str


_FILE = (
    Method("read", "Read a workspace file: `{ path }` → `{ path, content }`"),
    Method("list", "List a workspace folder: `{ path }` → entries"),
    Method("write", "Write a file (an undoable effect): `{ path, content }`"),
    Method("patch", "Replace text in a file (an undoable effect): `{ path, find, replace }`"),
    Method("undo", "Undo an earlier effect of this tool"),
)
_SHELL = (Method("run", "Run the command in-process over the workspace (the method name is free)"),)
_ENV = (Method("get", "Read an environment variable: `{ name }` → its value or none"),)
_HTTP = tuple(
    Method(verb, f"HTTP {verb.upper()} under the import's origin: `{{ url, headers?, body? }}`")
    for verb in ("get", "post", "put", "patch", "delete", "head", "options")
)
_MCP_CALL = Method("call", "Call a server tool by name: `{ tool, args }`")
# Keys other MCP clients use in a server entry to list tools by name.
_TOOL_LIST_KEYS = ("autoApprove", "alwaysAllow")

MEMORY_RESOURCE_METHODS = (
    Method("add", "Add one item to the memory resource"),
    Method("query", "Find items in the memory resource: `{ text, limit? }`"),
)


@dataclass
class ToolCatalog:
    """Tool methods for programs in `workspace` (where tools and `agentscript.mcp.json` are).

    `listed` keeps what started servers answered, by workspace and URI, across requests (the
    language server holds one dict), so a server is started at most once.
    """

    workspace: Path | None
    start_mcp_servers: bool = False
    listed: dict[tuple[str, str], tuple[Method, ...]] = field(default_factory=dict)

    def methods(self, uri: str) -> tuple[Method, ...]:
        if uri.split(":", 1)[0].lower() == "mcp" and self.start_mcp_servers:
            return (_MCP_CALL, *self._started_server_tools(uri))
        return tool_methods(uri, self.workspace)

    def import_uris(self, kind: str) -> list[tuple[str, str]]:
        """URIs an `import KIND N from "…"` may name, with what each is; for tools, the MCP
        servers of the config file too (read, not started)."""
        if kind != "tool":
            return list(_IMPORT_URIS.get(kind, ()))
        servers = _configured_servers(self.workspace)
        return [
            *_IMPORT_URIS["tool"],
            *((f"mcp://{key}", f"MCP server '{key}' of {CONFIG_FILE}") for key in servers),
        ]

    def describe_server(self, uri: str) -> str | None:
        return mcp_server_described(uri, self.workspace)

    def _started_server_tools(self, uri: str) -> tuple[Method, ...]:
        if self.workspace is None:
            return ()
        key = (str(self.workspace), uri)
        if key not in self.listed:
            self.listed[key] = _listed_by_server(self.workspace, uri)
        return self.listed[key]


# How long the editor waits for an MCP server to start and list its tools (unless the server's
# configuration sets its own startTimeout): a completion must not hang on a server that never
# answers.
LIST_START_SECONDS = 3.0


def _listed_by_server(workspace: Path, uri: str) -> tuple[Method, ...]:
    """Start the server, list its tools, stop it; nothing when it cannot start or answer."""
    from agentscript.providers.tools.mcp import list_server_tools
    from agentscript.runtime.errors import AgentScriptError

    try:
        tools = list_server_tools(workspace, uri, start_timeout=LIST_START_SECONDS)
    except AgentScriptError:
        return ()
    return tuple(
        Method(str(tool["name"]), str(tool.get("description") or "").split("\n", 1)[0])
        for tool in tools
    )


def tool_methods(uri: str, workspace: Path | None) -> tuple[Method, ...]:
    """The methods known without starting anything."""
    scheme = uri.split(":", 1)[0].lower()
    if scheme == "file":
        return _FILE
    if scheme == "sh":
        return _SHELL
    if scheme == "env":
        return _ENV
    if scheme in ("http", "https"):
        return _HTTP
    if scheme == "memory":
        return _memory_service_methods()
    if scheme == "mcp":
        return (_MCP_CALL, *_configured_mcp_tools(uri, workspace))
    if scheme == "python" and workspace is not None:
        return _python_functions(uri, workspace)
    return ()


def _python_functions(uri: str, workspace: Path) -> tuple[Method, ...]:
    """An allowed module's functions, read from its source (never imported)."""
    from agentscript.providers.tools.python_source import source_functions

    return tuple(
        Method(
            function.name,
            f"`{function.name}{function.signature}` [{function.risk}]"
            + (f" — {function.description.splitlines()[0]}" if function.description else ""),
        )
        for function in source_functions(uri, workspace)
    )


def _memory_service_methods() -> tuple[Method, ...]:
    from agentscript.memory.tools import TOOLS

    return tuple(Method(tool.method, tool.description.split(". ")[0]) for tool in TOOLS)


_IMPORT_URIS: dict[str, tuple[tuple[str, str], ...]] = {
    "tool": (
        ("sh://grep", "search file contents in the workspace"),
        ("sh://find", "find files in the workspace"),
        ("sh://sed", "print lines of a workspace file"),
        ("sh://read-range", "read a range of lines of a workspace file"),
        ("file://workspace", "read and write workspace files (undoable)"),
        ("env://process", "read environment variables (secrets refused)"),
        ("https://", "HTTP requests to one origin"),
        ("memory://", "the long-term memory service"),
        ("python:", "functions of a Python module allowed in pyproject.toml"),
    ),
    "llm": (
        ("openai://gpt-4.1-mini", "OpenAI or an OpenAI-compatible server"),
        ("anthropic://claude-sonnet-4-5", "Anthropic"),
        ("ollama://localhost:11434/llama3.2", "a local Ollama model"),
    ),
    "memory": (
        ("file://./.agentscript/memory.jsonl", "a JSONL file"),
        ("sqlite://./.agentscript/memory.db", "an SQLite database"),
        ("postgresql://", "a PostgreSQL database"),
    ),
}


def _config_servers(workspace: Path | None) -> dict[str, object] | None:
    """The raw `mcpServers` object of the workspace's config file; None when it is missing,
    unreadable or malformed (the editor completes less then; `check` and `run` say why)."""
    if workspace is None:
        return None
    try:
        raw = parse_json((workspace / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    servers = raw.get("mcpServers") if isinstance(raw, dict) else None
    return servers if isinstance(servers, dict) else None


def _configured_servers(workspace: Path | None) -> list[str]:
    return [key for key in _config_servers(workspace) or {} if isinstance(key, str)]


def _server_entry(uri: str, workspace: Path | None) -> tuple[str, object] | None:
    """The server's key and its raw entry in the config file (None when nothing is readable)."""
    servers = _config_servers(workspace)
    if servers is None:
        return None
    try:
        key = server_key(uri)
    except ExecutionError:
        return None
    return key, servers.get(key)


def _configured_mcp_tools(uri: str, workspace: Path | None) -> tuple[Method, ...]:
    """Tools named in the server's own config entry."""
    found = _server_entry(uri, workspace)
    if found is None or not isinstance(found[1], dict):
        return ()
    key, entry = found[0], found[1]
    names: list[str] = []
    for list_key in _TOOL_LIST_KEYS:
        listed = entry.get(list_key)
        if isinstance(listed, list):
            names.extend(name for name in listed if isinstance(name, str) and name not in names)
    return tuple(Method(name, f"Tool '{name}' of MCP server '{key}'") for name in names)


def mcp_server_described(uri: str, workspace: Path | None) -> str | None:
    """How the config file starts or reaches the server of an `mcp://` URI (for hover)."""
    found = _server_entry(uri, workspace)
    if found is None:
        return None
    key, entry = found
    if not isinstance(entry, dict):
        return f"no server '{key}' in {CONFIG_FILE}"
    if isinstance(entry.get("url"), str):
        return f"server '{key}' at {entry['url']} ({CONFIG_FILE})"
    args = entry.get("args")
    parts = [entry.get("command", "?"), *(args if isinstance(args, list) else [])]
    return f"server '{key}' runs `{' '.join(str(part) for part in parts)}` ({CONFIG_FILE})"
