"""The interfaces the interpreter calls out through: models, tools, memory and interactive input.

Providers in `agentscript.providers` implement these; the interpreter never imports them. A
provider signals a failure by raising ExecutionError (or a subclass) with a clear message; the
interpreter adds the program location and the `Tool X.m (uri) failed:` style wrapping.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agentscript.lang import ast
from agentscript.runtime.context import BuiltContext, ContextItem
from agentscript.runtime.values import LlmBinding


@dataclass(slots=True)
class Usage:
    """Tokens a model call consumed, as the provider reported them."""

    input_tokens: int = 0
    output_tokens: int = 0

    def to_json(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


@dataclass(slots=True)
class GenerateRequest:
    """Everything a model provider needs for one attempt of one `generate`."""

    agent_name: str
    function_name: str
    model: LlmBinding | None
    identity: dict[str, str]
    instruction: Any
    return_shape: ast.ShapeObjectExpr | None
    schema: dict[str, Any] | None
    context: list[ContextItem]
    built: BuiltContext
    attempt: int = 1
    max_output_tokens: int | None = None
    temperature: float | None = None
    think: bool | str | None = None
    strict: bool | None = None

    @property
    def call_key(self) -> str:
        """`Agent.function`, the key scripted answers are looked up by."""
        return f"{self.agent_name}.{self.function_name}"


@dataclass(slots=True)
class GenerateResponse:
    """The model's answer: parsed JSON for a shaped generate, text for a free-form one."""

    value: Any
    raw_text: str | None = None
    usage: Usage | None = None
    provider: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


class LlmProvider(Protocol):
    def generate(self, request: GenerateRequest) -> GenerateResponse:
        """Answer one attempt. Raise ModelOutputError when the answer is not usable JSON (the
        interpreter may then repair); raise ExecutionError for anything else (never repaired)."""
        ...


@dataclass(slots=True)
class ToolCall:
    tool_name: str
    uri: str
    method: str
    args: list[Any]


class ToolProvider(Protocol):
    def call(self, request: ToolCall) -> Any:
        """Run one tool method and return its JSON result."""
        ...


@dataclass(slots=True)
class MemoryRequest:
    memory_name: str
    uri: str
    operation: str  # "add" or "query"
    argument: Any


class MemoryProvider(Protocol):
    def add(self, request: MemoryRequest) -> Any: ...

    def query(self, request: MemoryRequest) -> Any: ...


class InputProvider(Protocol):
    def read(self, name: str, path: str) -> Any:
        """Ask for a missing entry input field (`path` is like `input.question`)."""
        ...


@runtime_checkable
class Closeable(Protocol):
    """Providers holding processes or connections are closed when the run ends."""

    def close(self) -> None: ...
