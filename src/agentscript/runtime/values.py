"""Runtime values: JSON data plus opaque resource bindings, and the rules that apply to them.

Values are None, bool, int/float, str, list, dict, or a Binding. Truthiness, equality and the
JSON-safe form used by prompts, traces and output follow reference §3.2 exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from agentscript.runtime.jsjson import format_number, stringify


@dataclass(frozen=True, slots=True)
class ToolBinding:
    name: str
    uri: str

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.name, "uri": self.uri}


@dataclass(frozen=True, slots=True)
class LlmBinding:
    name: str
    uri: str

    def to_json(self) -> dict[str, Any]:
        return {"llm": self.name, "uri": self.uri}


@dataclass(frozen=True, slots=True)
class MemoryBinding:
    name: str
    uri: str

    def to_json(self) -> dict[str, Any]:
        return {"memory": self.name, "uri": self.uri}


@dataclass(frozen=True, slots=True)
class AgentBinding:
    name: str

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.name}


@dataclass(frozen=True, slots=True)
class FunctionBinding:
    agent_name: str
    name: str

    def to_json(self) -> dict[str, Any]:
        return {"function": self.name, "agent": self.agent_name}


Binding: TypeAlias = ToolBinding | LlmBinding | MemoryBinding | AgentBinding | FunctionBinding
BINDING_TYPES = (ToolBinding, LlmBinding, MemoryBinding, AgentBinding, FunctionBinding)

CIRCULAR = "[Circular]"


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def truthy(value: Any) -> bool:
    """none → false; numbers ≠ 0 (NaN is truthy); non-empty strings and lists; objects and
    bindings are always true, even `{}`."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str | list):
        return len(value) > 0
    return True


def sanitize(value: Any) -> Any:
    """A deep, JSON-safe copy: bindings become their JSON form, cycles become "[Circular]"."""
    return _sanitize(value, set())


def _sanitize(value: Any, ancestors: set[int]) -> Any:
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list):
        marker = id(value)
        if marker in ancestors:
            return CIRCULAR
        ancestors.add(marker)
        copied = [_sanitize(item, ancestors) for item in value]
        ancestors.discard(marker)
        return copied
    if isinstance(value, dict):
        marker = id(value)
        if marker in ancestors:
            return CIRCULAR
        ancestors.add(marker)
        result = {key: _sanitize(item, ancestors) for key, item in value.items()}
        ancestors.discard(marker)
        return result
    if isinstance(value, BINDING_TYPES):
        return value.to_json()
    raise TypeError(f"not an AgentScript value: {type(value).__name__}")


def equals(left: Any, right: Any) -> bool:
    """`==`: the JSON texts of both sides are equal (deep, key-order sensitive, 1 == 1.0)."""
    if left is right and left is None:
        return True
    return stringify(sanitize(left)) == stringify(sanitize(right))


def render_text(value: Any) -> str:
    """Prompt text of a value: a string as it is, anything else as pretty JSON."""
    if isinstance(value, str):
        return value
    return stringify(sanitize(value), 2)


def concat_text(value: Any) -> str:
    """How `+` turns an operand into text when the other side is a string (later form)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if is_number(value):
        return format_number(value)
    return ""


_EXACT = 2**53


def normalise_number(value: float) -> float:
    """Numbers behave as doubles (as in the original): integral values stay ints while they are
    exact in a double, and anything larger becomes a float."""
    if isinstance(value, int):
        return value if -_EXACT < value < _EXACT else float(value)
    if value.is_integer() and -_EXACT < value < _EXACT:
        return int(value)
    return value


def type_name(value: Any) -> str:
    """A short name of the value's type for error messages."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "boolean"
    if is_number(value):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
