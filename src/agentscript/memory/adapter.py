"""`memory://` tools: the long-term memory service for programs.

    import tool Memory from "memory://workspace"    # the run's workspace, routed by memory.yml
    import tool Memory from "memory://global"       # only the global scope

    found = Memory.recall({ query: "how do we deploy?", limit: 3 })
    use Memory.digest({ max_bytes: 1500 })           # the digest text, as prompt context

The methods are the tools of `tools.py` under their short names (remember, recall, update,
forget, stats, check, browse, history, digest, checkpoint, experiences), with the same
arguments, checks and results, except that `digest` returns the digest's text (so `use` shows
the text itself) and `experiences` returns compact text for `use` (one line per lesson with
its confidence and run count, within the `budget` the program sets; see experience_text). A
refusal of the service raises ExecutionError with its message, which the run reports with the
program location.

Scopes: a program reaches its own workspace's memory and the global scope, nothing else. An
explicit `scope` argument may name `global` or this run's workspace; any other workspace must be
granted by the user (`memory_scopes:` in the approval policy), because a program (or the model
writing its arguments) must not read or archive another project's memories. The CLI and the MCP
server take any `scope`: their caller is the user or the user's agent host.

Risk, for the approval gate: reads (recall, stats, check, browse, history, digest,
experiences) are `read`; remember, update, forget and checkpoint are `effect` (nothing is
lost: old versions stay as history); forget with `purge` is `destructive`. `checkpoint` is for
a program that compacts a conversation of its own, as a host does (compaction_sink.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentscript.memory.entries import GLOBAL_SCOPE
from agentscript.memory.errors import MemoryServiceError
from agentscript.memory.scopes import parse_scope
from agentscript.memory.service import MemoryService
from agentscript.memory.tools import TOOLS, ToolDefinition, call_tool
from agentscript.providers.tools.base import Risk
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall
from agentscript.runtime.values import sanitize

# The scope word of each accepted URI: None lets memory.yml route, "global" pins the scope.
SCOPES: dict[str, str | None] = {"workspace": None, "global": GLOBAL_SCOPE}
# Program method → tool: `stats` for memory_stats, `recall` for recall.
METHODS: dict[str, ToolDefinition] = {tool.method: tool for tool in TOOLS}


class MemoryTools:
    """The SchemeTool for `memory://`, over one open MemoryService, which `close()` closes.
    `granted_scopes` are the workspaces besides its own a program may name in `scope`."""

    def __init__(self, service: MemoryService, granted_scopes: Iterable[str] = ()) -> None:
        self.service = service
        try:
            granted = {parse_scope(scope) for scope in granted_scopes}
        except MemoryServiceError as error:
            raise ExecutionError(f"memory_scopes in the approval policy: {error.message}") from None
        own = {service.workspace} if service.workspace is not None else set()
        self._allowed = frozenset({GLOBAL_SCOPE, *own, *granted})

    def risk(self, request: ToolCall) -> Risk:
        tool = _tool(request)
        if tool.read_only:
            return "read"
        if tool.destructive and _arguments(request).get("purge") is True:
            return "destructive"
        return "effect"

    def call(self, request: ToolCall) -> Any:
        tool = _tool(request)
        pinned = _scope(request)
        arguments = sanitize(_arguments(request))
        if pinned is not None:
            given = arguments.get("scope")
            if given is not None and given != pinned:
                raise ExecutionError(
                    f"{request.uri} reads and writes only the {pinned} scope, not {given!r}: "
                    "leave scope out, or import memory://workspace"
                )
            arguments["scope"] = pinned
        else:
            self._check_scope(request, arguments.get("scope"))
        result = call_tool(self.service, tool.name, arguments)
        error = result.get("error")
        if isinstance(error, dict):
            raise ExecutionError(str(error["message"]))
        if tool.name == "memory_digest":
            return result["text"]
        if tool.name == "memory_experiences":
            return result["text"]
        return result

    def _check_scope(self, request: ToolCall, given: Any) -> None:
        """Refuse a `scope` argument naming a workspace this run was not given."""
        if given is None:
            return
        try:
            scope = parse_scope(given)
        except MemoryServiceError as error:
            raise ExecutionError(error.message) from None
        if scope not in self._allowed:
            own = self.service.workspace or "none"
            raise ExecutionError(
                f"{request.uri} may use only this run's workspace ({own}) and global, not "
                f"{given!r}: another workspace's memory needs a grant (memory_scopes in the "
                "approval policy)"
            )

    def close(self) -> None:
        self.service.close()


def _tool(request: ToolCall) -> ToolDefinition:
    _scope(request)  # a wrong URI is the first thing to report
    tool = METHODS.get(request.method)
    if tool is None:
        raise ExecutionError(
            f"Unsupported memory method '{request.method}'. Supported: {', '.join(METHODS)}"
        )
    return tool


def _scope(request: ToolCall) -> str | None:
    """The scope the URI pins (None for `memory://workspace`); other URIs are refused."""
    _, separator, rest = request.uri.partition("://")
    name = rest.rstrip("/")
    if not separator or name not in SCOPES:
        raise ExecutionError(
            f"Unsupported memory URI '{request.uri}': use memory://workspace or memory://global"
        )
    return SCOPES[name]


def _arguments(request: ToolCall) -> dict[str, Any]:
    """The one optional object argument every method takes (`Memory.stats()` needs none)."""
    if not request.args:
        return {}
    if len(request.args) != 1 or not isinstance(request.args[0], dict):
        raise ExecutionError(f"{request.label} expects one json object argument")
    argument: dict[str, Any] = request.args[0]
    return argument
