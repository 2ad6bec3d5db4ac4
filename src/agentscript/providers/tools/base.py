"""What every host tool shares: the scheme-tool interface, risk levels and argument checks.

A scheme tool serves every import whose URI has its scheme (`sh`, `file`, `env`, `http(s)`,
`mcp`). It says how risky a call is before running it, so the approval gate can decide, and it
checks arguments with the original's messages (reference §4.3) so errors read alike.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.jsjson import stringify
from agentscript.runtime.ports import ToolCall
from agentscript.runtime.values import is_number, sanitize

# read: observes only. effect: changes something that can be undone or is local.
# destructive: changes something outside our control or that cannot be undone.
Risk = Literal["read", "effect", "destructive"]

DEFAULT_MAX = 100


class SchemeTool(Protocol):
    """The tools of one URI scheme."""

    def risk(self, request: ToolCall) -> Risk:
        """How risky this call is; decided before it runs, from the URI, method and args."""
        ...

    def call(self, request: ToolCall) -> Any:
        """Run the call and return its JSON result; raise ExecutionError with a clear message."""
        ...


def object_argument(request: ToolCall, label: str) -> dict[str, Any]:
    """The single JSON object argument most tool methods take."""
    if len(request.args) != 1 or not isinstance(request.args[0], dict):
        raise ExecutionError(f"{label} expects one json object argument")
    argument: dict[str, Any] = request.args[0]
    return argument


def required_string(arguments: dict[str, Any], key: str, label: str) -> str:
    value = arguments.get(key)
    if not isinstance(value, str) or value == "":
        raise ExecutionError(f"{label}.{key} is required")
    return value


def optional_string(arguments: dict[str, Any], key: str) -> str | None:
    value = arguments.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ExecutionError(f"Expected a string, got {stringify(sanitize(value))}")
    return value


def positive_integer(arguments: dict[str, Any], key: str, default: int = DEFAULT_MAX) -> int:
    value = arguments.get(key)
    if value is None:
        return default
    if not is_number(value) or value <= 0 or not float(value).is_integer():
        raise ExecutionError(f"Expected a positive integer, got {stringify(sanitize(value))}")
    return int(value)
