"""Shared helpers for the language tests: a recording model, a program builder and a runner.

Tests reach these through fixtures. Every helper runs offline and deterministically: models,
tools and memory are the mock providers or the recording model below, never the network.
"""

from __future__ import annotations

import io
import signal
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.lang import ast
from agentscript.lang.checker import check_program
from agentscript.providers.llm.mock import MockLlm
from agentscript.providers.memory.mock import MockMemory
from agentscript.providers.tools.mock import MockTools
from agentscript.providers.tools.workspace import Workspace
from agentscript.runtime.interpreter import ExecutionOptions, RunResult, execute
from agentscript.runtime.ports import (
    GenerateRequest,
    GenerateResponse,
    InputProvider,
    LlmProvider,
    MemoryProvider,
    ToolProvider,
)
from agentscript.runtime.trace import TraceSink

# Markers for tests that need a part of the machine outside Python (Chromium, Node.js, …),
# and the local real model's fixtures.
pytest_plugins = ["system_parts", "real_model_support"]

FIXTURES = Path(__file__).parent / "fixtures"


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as a terminal sends it, whoever started the suite. A suite started in the
    background of a non-interactive shell (`make test &`, nohup) inherits SIGINT ignored, and
    every process a test starts would inherit that too, so the tests that interrupt a run
    with SIGINT would see it ignored. A handler here makes the children's SIGINT the default
    again: an exec resets handled signals, never ignored ones."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# The agent header most tests share: one llm import and the three configuration lines.
AGENT_HEADER = """import llm Model from "openai://gpt-4.1-mini"
import tool Search from "mcp://tools/search"

agent A {
  model Model
  role "Researcher"
  description "Finds facts."
"""


class RecordingLlm:
    """A model that records every request and answers from a queue.

    An answer that is an exception is raised instead of returned; once the queue is empty the
    mock model's shape defaults answer.
    """

    def __init__(self, answers: Iterable[Any] = ()) -> None:
        self.answers: list[Any] = list(answers)
        self.requests: list[GenerateRequest] = []
        self._fallback = MockLlm()

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        self.requests.append(request)
        if not self.answers:
            return self._fallback.generate(request)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return GenerateResponse(value=answer)

    @property
    def instructions(self) -> list[Any]:
        return [request.instruction for request in self.requests]


class RecordingSink(TraceSink):
    """Keeps what a trace sink is told, in order, as (callback, kind, data) triples."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def agent_started(self, call: agentscript.TraceEvent) -> None:
        self.calls.append(("agent_started", call.kind, dict(call.data)))

    def event(self, event: agentscript.TraceEvent) -> None:
        self.calls.append(("event", event.kind, dict(event.data)))

    def step_started(self, kind: str, data: dict[str, Any]) -> None:
        self.calls.append(("step_started", kind, dict(data)))


class ScriptedInput:
    """An interactive input provider answering from a dict and remembering what was asked."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, str]] = []

    def read(self, name: str, path: str) -> Any:
        self.asked.append((name, path))
        return self.answers[name]


def agent_program(body: str, *, params: str = "", functions: str = "", imports: str = "") -> str:
    """A one-agent program around a main func `body`, with a model, a role and a description."""
    return imports + AGENT_HEADER + f"  main func({params}) {{\n{body}\n  }}\n" + functions + "}\n"


def run_program(
    source: str | ast.Program,
    input_value: Any = None,
    *,
    llm: LlmProvider | None = None,
    tools: ToolProvider | None = None,
    memory: MemoryProvider | None = None,
    input_provider: InputProvider | None = None,
    path: str | Path | None = None,
    agent: str | None = None,
    function: str | None = None,
    sinks: list[TraceSink] | None = None,
    debug_stream: io.StringIO | None = None,
    check: bool = True,
) -> RunResult:
    """Load (unless given a Program), optionally assert the checker is silent, then execute."""
    program = source if isinstance(source, ast.Program) else agentscript.load_source(source, path)
    if check:
        assert [d.format() for d in check_program(program)] == []
    options = ExecutionOptions(
        llm=llm or MockLlm(),
        tools=tools or MockTools(),
        memory=memory or MockMemory(),
        input_provider=input_provider,
        agent_name=agent,
        function_name=function,
        debug_stream=debug_stream,
        trace_sinks=list(sinks or []),
        # `import file` reads inside the program's directory, as in a run of its own.
        file_imports=Workspace(Path(program.source_path).parent) if program.source_path else None,
    )
    return execute(program, {} if input_value is None else input_value, options)


def position_of(source: str, needle: str, occurrence: int = 1) -> str:
    """`line:column` (1-based) of the `occurrence`-th appearance of `needle` in `source`.

    A `^` in `needle` marks the exact character meant: `"a: ^}"` is the brace after `a: `.
    """
    marker = max(needle.find("^"), 0)
    text = needle.replace("^", "", 1)
    offset = -1
    for _ in range(occurrence):
        offset = source.index(text, offset + 1)
    offset += marker
    line = source.count("\n", 0, offset) + 1
    column = offset - (source.rfind("\n", 0, offset) + 1) + 1
    return f"{line}:{column}"


@pytest.fixture(autouse=True)
def private_memory_database(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test gets its own long-term memory database: runs learn into the memory service
    by default, and no test may ever write to the user's ~/.agentscript/memory.db."""
    path = tmp_path_factory.mktemp("memory-db") / "memory.db"
    monkeypatch.setenv("AGENTSCRIPT_MEMORY_DB", str(path))
    return path


CHECKOUT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def checkout_journal_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the whole session, so those runs share one journal (a process keeps
    each journal it opened, as the checkout's single journal was before)."""
    return tmp_path_factory.mktemp("journal-root")


@pytest.fixture(autouse=True)
def journal_outside_the_checkout(
    checkout_journal_root: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Runs started from the checkout (programs loaded from source, or its examples) would
    journal at its root, as `agentscript run` does for a user in a git checkout; tests write
    only to temporary folders, so a journal the rule puts in the checkout goes to one. And a
    journal someone left above the tests' temporary folders (a `/tmp/.agentscript` of a run
    started in /tmp) is not a test's: a run started in a temporary folder keeps to it."""
    from agentscript.learn import journal

    found_by_the_rule = journal.find_workspace_root
    elsewhere = checkout_journal_root
    temporary = tmp_path_factory.getbasetemp().resolve()

    def outside_the_checkout(start: str | Path) -> Path:
        root = found_by_the_rule(start)
        if root == CHECKOUT or CHECKOUT in root.parents:
            return elsewhere
        if temporary.is_relative_to(root) and Path(start).resolve().is_relative_to(temporary):
            return Path(start).resolve()
        return root

    monkeypatch.setattr(journal, "find_workspace_root", outside_the_checkout)


@pytest.fixture
def make_llm() -> Callable[..., RecordingLlm]:
    """`make_llm(answer, …)`: a RecordingLlm answering with the given values in order."""

    def make(*answers: Any) -> RecordingLlm:
        return RecordingLlm(answers)

    return make


@pytest.fixture
def run() -> Callable[..., RunResult]:
    return run_program


@pytest.fixture
def program() -> Callable[..., str]:
    return agent_program


@pytest.fixture
def at() -> Callable[..., str]:
    return position_of


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()


@pytest.fixture
def scripted_input() -> Callable[[dict[str, Any]], ScriptedInput]:
    return ScriptedInput
