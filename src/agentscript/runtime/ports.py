"""The interfaces the interpreter calls out through: models, tools, memory and interactive input.

Providers in `agentscript.providers` implement these; the interpreter never imports them. A
provider signals a failure by raising ExecutionError (or a subclass) with a clear message; the
interpreter adds the program location and the `Tool X.m (uri) failed:` style wrapping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeGuard, runtime_checkable

from agentscript.lang import ast
from agentscript.runtime.budgets import CallDeadline
from agentscript.runtime.context import BuiltContext, ContextItem
from agentscript.runtime.usage import Usage
from agentscript.runtime.values import LlmBinding

# Providers report observable steps (such as an HTTP retry) through this: (event kind, data).
EventCallback = Callable[[str, dict[str, Any]], object]


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
    # Seconds left in the run's time budget, so a provider can cap its own timeout.
    deadline_seconds: float | None = None
    on_event: EventCallback | None = None
    # A provider that streams hands each piece of the answer text here as it arrives (for a
    # live view); the answer is still validated as a whole when it is complete.
    on_text: Callable[[str], object] | None = None

    def report(self, kind: str, data: dict[str, Any]) -> None:
        if self.on_event is not None:
            self.on_event(kind, data)

    def stream(self, text: str) -> None:
        if self.on_text is not None:
            self.on_text(text)

    @property
    def wants_stream(self) -> bool:
        """Whether someone watches the answer arrive; providers stream only then."""
        return self.on_text is not None

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
    # False for an answer a resume (or a lenient replay) took from a recording: it cost
    # nothing now, so the run's budgets, which are for the live part, do not count it.
    budgeted: bool = True


class LlmProvider(Protocol):
    def generate(self, request: GenerateRequest) -> GenerateResponse:
        """Answer one attempt. Raise ModelOutputError when the answer is not usable JSON (the
        interpreter may then repair); raise ExecutionError for anything else (never repaired)."""
        ...


@dataclass(slots=True)
class ToolCall:
    """One call of a tool method, e.g. `File.write({...})` on `file://workspace`."""

    tool_name: str
    uri: str
    method: str
    args: list[Any]
    # Providers report observable steps (such as an approval) through this: (kind, data).
    on_event: EventCallback | None = None
    # A tool that hands out a secret (an allowed secret environment variable) registers it
    # here, so the trace and everything fed from it shows "[REDACTED]" instead.
    on_secret: Callable[[str], object] | None = None
    # The run's remaining time and its interrupt: a tool caps its waits by it and checks it
    # between steps (see CallDeadline).
    deadline: CallDeadline = field(default_factory=CallDeadline)
    # The risk the approval gate judged the call to carry (`read`, `effect`, `destructive`),
    # set by the gate so the trace can say it whether the call ran, failed or was refused.
    risk: str | None = None
    # A member read without a call (`Path.sep`): the `node:`/`npm:` tools read an export.
    property_read: bool = False

    def report(self, kind: str, data: dict[str, Any]) -> None:
        if self.on_event is not None:
            self.on_event(kind, data)

    def secret(self, value: str) -> None:
        if self.on_secret is not None:
            self.on_secret(value)

    @property
    def label(self) -> str:
        """`Tool.method`, as messages name the call."""
        return f"{self.tool_name}.{self.method}"


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


class FileImports(Protocol):
    """Where `import file` resources are read from. The composition root hands in the run's
    workspace jail, so a program cannot import `/etc/passwd`, `../secrets` or `/dev/zero`."""

    def read_file(self, path: Path, limit: int) -> bytes:
        """The bytes of the regular file at absolute `path`, at most `limit` of them; an
        ExecutionError saying why not (outside the confinement, missing, too large, special)."""
        ...


class InputProvider(Protocol):
    def read(self, name: str, path: str) -> Any:
        """Ask for a missing entry input field (`path` is like `input.question`)."""
        ...


# The kinds of exchange a journaled run keeps beside its trace events (see ExchangeLog).
MODEL_EXCHANGE = "model_exchange"
TOOL_STARTED = "tool_started"
TOOL_FINISHED = "tool_finished"
MEMORY_EXCHANGE = "memory_exchange"


class ExchangeLog(Protocol):
    """Where a run keeps what it exchanged with models, tools and memories as it happens (the
    run journal), so a later run can be answered from it: replay and resume. A `durable`
    exchange is on disk, with everything logged before it, when the call returns: a tool call
    with effects is logged as started before its effect, so a run killed in between is known
    to have left it open."""

    def exchange(self, kind: str, data: dict[str, Any], durable: bool = False) -> None: ...


@dataclass(slots=True)
class ToolExchange:
    """One journaled tool call: what was asked and, when it finished, its result or error and
    the events it reported (approvals), so a replay tells the same story."""

    uri: str
    method: str
    args: list[Any]
    finished: bool = False
    result: Any = None
    error: str | None = None
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # It handed out a secret (ToolCall.secret), kept only as "[REDACTED]".
    secret: bool = False


@dataclass(slots=True)
class Cassette:
    """What an earlier run exchanged, in the order it happened: model exchanges (recording
    entries, as `--record` writes them), tool calls and memory calls (`{"memory",
    "operation", "argument", "result"}`). `source` names it in messages. A recording made
    with `--record` holds no tool calls (`tools_recorded` is False): replaying it runs tools
    and memories live, as when it was made."""

    source: str
    model: list[dict[str, Any]] = field(default_factory=list)
    tools: list[ToolExchange] = field(default_factory=list)
    memory: list[dict[str, Any]] = field(default_factory=list)
    tools_recorded: bool = True


class RunJournal(Protocol):
    """What keeps a run's record after it returns (the run journal): its id, and a way to wait
    until the record is complete, returning whatever went wrong while writing it."""

    run_id: str

    def wait(self, timeout: float | None = None) -> list[str]: ...


@runtime_checkable
class Closeable(Protocol):
    """Providers holding processes or connections are closed when the run ends."""

    def close(self) -> None: ...


def is_closeable(provider: object) -> TypeGuard[Closeable]:
    """`isinstance(provider, Closeable)` without the cost of a runtime Protocol check (tens
    of microseconds each on Python 3.11, several per run)."""
    return callable(getattr(provider, "close", None))
