"""The composition root: the one place that picks concrete providers for a run.

The CLI and the Python API both come here, so a program behaves the same from either. Lower
layers never choose providers themselves; they receive them through ExecutionOptions. Provider
modules are imported only when a run needs them, which keeps `agentscript check` starting fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TextIO

from agentscript.runtime.budgets import RunBudget, RunMeter
from agentscript.runtime.interpreter import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_CALL_DEPTH,
    ExecutionOptions,
)
from agentscript.runtime.ports import (
    Closeable,
    FileImports,
    GenerateRequest,
    InputProvider,
    LlmProvider,
    MemoryProvider,
    ToolProvider,
)
from agentscript.runtime.trace import TraceSink

if TYPE_CHECKING:
    from agentscript.learn.journal import JournalSink
    from agentscript.providers.telemetry.otel import OtelTraceSink
    from agentscript.providers.tools.approvals import ApprovalMode, AskUser
    from agentscript.providers.tools.base import SchemeTool

ModelChoice = Literal["real", "mock", "dry-run"]


@dataclass(slots=True)
class RunConfig:
    """How to run a program. Every field has a sensible default; the CLI fills it from flags."""

    model: ModelChoice | LlmProvider = "real"
    # With model="mock": answer generates from this script instead of shape defaults.
    responses: str | Path | None = None
    # Save every model exchange to this JSONL file / answer from such a file instead of a model.
    record: str | Path | None = None
    replay: str | Path | None = None
    tools: ToolProvider | None = None
    memory: MemoryProvider | None = None
    input_provider: InputProvider | None = None
    agent: str | None = None
    function: str | None = None
    trace_sinks: list[TraceSink] = field(default_factory=list)
    # Where `debug: true` generates print their prompts (stderr when None).
    debug_stream: TextIO | None = None
    on_dry_run_prompt: Callable[[GenerateRequest], None] | None = None
    max_call_depth: int = DEFAULT_MAX_CALL_DEPTH
    # Run budgets: exceeding one stops the run with BudgetExceeded naming it.
    max_tokens: int | None = None
    max_calls: int | None = None
    max_seconds: float | None = None
    # Where provider keys, base URLs and timeouts are read from (os.environ when None).
    environ: Mapping[str, str] | None = None
    # The directory host tools are confined to (default: the program's directory).
    workspace: str | Path | None = None
    # Answer every tool call with the mock tool instead of running host tools.
    mock_tools: bool = False
    # Approvals: "ask" (the default; refuses when there is no terminal), "auto" or "deny"; a
    # policy file (YAML or JSON); and who answers when a call asks (None: nobody can).
    approve: ApprovalMode | None = None
    approvals: str | Path | None = None
    ask_user: AskUser | None = None
    # Environment variables `env://` may read; None lets it read any name that does not look
    # like a secret.
    env_allow: list[str] | None = None
    # Answer memory calls from an in-process mock instead of the real backends.
    mock_memory: bool = False
    # The directory memory files must stay in (default: the workspace).
    memory_root: str | Path | None = None
    # The long-term memory database `memory://` tools open (default: $AGENTSCRIPT_MEMORY_DB,
    # else ~/.agentscript/memory.db).
    memory_db: str | Path | None = None
    # How many `parallel for` iterations run at once.
    concurrency: int = DEFAULT_CONCURRENCY
    # `use one of` choices by site id, e.g. {"main.as#Writer.draft[tone]": "formal"}.
    variants: dict[str, str] = field(default_factory=dict)
    # Journal the run (events, task graph, execution trace) in `<workspace>/.agentscript/runs.db`
    # or at `journal_path`. Dry runs are never journaled.
    journal: bool = True
    journal_path: str | Path | None = None
    # Send the run to an OpenTelemetry collector over OTLP/HTTP: True, False, or None to
    # follow the standard OTEL_* variables (on when an OTLP endpoint is set).
    otel: bool | None = None
    # After a journaled run ends ok or with an error, write its run memory and distil its
    # experiences into the long-term memory at `memory_db` (agentscript.learn.run_memory).
    # None (the default) learns only from runs that talked to a model: not from the mock, a
    # dry run or a replay, whose answers teach nothing about the world.
    learn: bool | None = None
    # Rewrite new experiences with a model: None (the rules' text), "program" (the program's
    # own model), a model URI, or a provider.
    learn_model: str | LlmProvider | None = None
    # Let providers that can stream (OpenAI, Anthropic, Ollama) hand the answer text to the
    # trace sinks as it arrives; the answer is validated as a whole either way.
    stream: bool = False
    # The prompt layout, "0.1.0" or "compact"; None lets the provider choose (compact for the
    # providers that enforce shapes natively, 0.1.0 for the mock and the dry run).
    prompt_layout: str | None = None


def build_llm(config: RunConfig, owned: list[Closeable]) -> LlmProvider:
    """The model provider for a run: replay, mock, dry-run or the real router, maybe recorded.
    Providers created here are appended to `owned`, to be closed when the run ends."""
    llm = _base_llm(config)
    if isinstance(llm, Closeable) and llm is not config.model:
        owned.append(llm)
    if config.prompt_layout is not None:
        from agentscript.providers.llm.layout import FixedLayout
        from agentscript.runtime.context import PromptLayout

        llm = FixedLayout(llm, PromptLayout(config.prompt_layout))
    if config.record is not None:
        from agentscript.providers.llm.recording import RecordingLlm

        environ = config.environ if config.environ is not None else os.environ
        secrets = [environ.get(name, "") for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")]
        recording = RecordingLlm(llm, config.record, secrets=[s for s in secrets if s])
        owned.append(recording)
        llm = recording
    return llm


def _base_llm(config: RunConfig) -> LlmProvider:
    if config.replay is not None:
        from agentscript.providers.llm.recording import ReplayLlm

        return ReplayLlm(config.replay)
    model = config.model
    if not isinstance(model, str):
        return model
    if model == "mock":
        from agentscript.providers.llm.mock import MockLlm, ScriptedLlm

        return ScriptedLlm.from_file(config.responses) if config.responses else MockLlm()
    if model == "dry-run":
        from agentscript.providers.llm.mock import DryRunLlm

        return DryRunLlm(config.on_dry_run_prompt or (lambda request: None))
    from agentscript.providers.llm.router import ModelRouter

    return ModelRouter(config.environ)


@dataclass(slots=True)
class RunSetup:
    """The options for one run, the providers it owns (closed by `close`), its workspace and,
    when journaled, the sink that records it."""

    options: ExecutionOptions
    owned: list[Closeable]
    workspace: Path
    journal: JournalSink | None = None

    def close(self) -> None:
        for provider in reversed(self.owned):
            provider.close()
        self.owned.clear()


def build_run(config: RunConfig, program_path: str | None = None) -> RunSetup:
    """Concrete providers for one run, chosen from `config`. Callers must `close()` the setup;
    providers passed in through `config` stay the caller's and are not closed."""
    owned: list[Closeable] = []
    budget = RunBudget(config.max_tokens, config.max_calls, config.max_seconds)
    workspace = workspace_root(config, program_path)
    program_dir = Path(program_path).parent if program_path is not None else None
    options = ExecutionOptions(
        llm=build_llm(config, owned),
        tools=build_tools(config, workspace, owned),
        memory=build_memory(config, workspace, program_dir, owned),
        input_provider=config.input_provider,
        agent_name=config.agent,
        function_name=config.function,
        max_call_depth=config.max_call_depth,
        debug_stream=config.debug_stream if config.debug_stream is not None else sys.stderr,
        trace_sinks=list(config.trace_sinks),
        meter=RunMeter(budget),
        concurrency=config.concurrency,
        variants=dict(config.variants),
        stream=config.stream,
        file_imports=_workspace_files(workspace),
    )
    journal = build_journal(config, workspace)
    if journal is not None:
        options.trace_sinks.append(journal)
    telemetry = build_telemetry(config, program_path, journal.run_id if journal else None)
    if telemetry is not None:
        options.trace_sinks.append(telemetry)
        owned.append(telemetry)
    return RunSetup(options, owned, workspace, journal)


def build_telemetry(
    config: RunConfig, program_path: str | None, run_id: str | None
) -> OtelTraceSink | None:
    """The sink that sends the run to an OpenTelemetry collector: when `otel` is on, or left
    to the standard OTEL_* variables (an OTLP endpoint set). Asked for explicitly without the
    `otel` extra installed, it is an error that says how to install it."""
    environ = config.environ if config.environ is not None else os.environ
    if config.otel is False:
        return None
    if config.otel is None:
        from agentscript.providers.telemetry.settings import telemetry_requested

        if not telemetry_requested(environ):
            return None
    from agentscript.providers.telemetry.settings import OtlpSettings
    from agentscript.runtime.errors import LoadError

    try:
        from agentscript.providers.telemetry.otel import OtelTraceSink
    except ImportError:
        if config.otel:
            raise LoadError(
                "OpenTelemetry export needs the otel extra: pip install 'agentscript[otel]'"
            ) from None
        return None
    return OtelTraceSink(OtlpSettings.from_environ(environ), run_id=run_id, program=program_path)


def _workspace_files(workspace: Path) -> FileImports:
    """`import file` reads through the workspace jail, like the file tools."""
    from agentscript.providers.tools.workspace import Workspace

    return Workspace(workspace)


def build_journal(config: RunConfig, workspace: Path) -> JournalSink | None:
    """The sink that journals this run, unless journaling is off or this is a dry run; it
    learns from the run when it ends unless `learn` is off."""
    if not config.journal or config.model == "dry-run":
        return None
    from agentscript.learn.journal import run_journal_path, shared_journal

    # The same rule as `agentscript runs`: an explicit workspace, else the workspace root
    # found from the program's folder.
    path = (
        Path(config.journal_path)
        if config.journal_path
        else run_journal_path(config.workspace, workspace)
    )
    sink = shared_journal(path).sink()
    if learns_from(config):
        from agentscript.learn.run_memory import learner_for

        sink.learner = learner_for(config, config.memory_db)
    return sink


def learns_from(config: RunConfig) -> bool:
    """Whether a run writes a run memory and experiences (see RunConfig.learn)."""
    if config.learn is not None:
        return config.learn
    return config.replay is None and not (isinstance(config.model, str) and config.model != "real")


def workspace_root(config: RunConfig, program_path: str | None) -> Path:
    """The directory tools are jailed to: as configured, else the program's, else the cwd."""
    if config.workspace is not None:
        return Path(config.workspace)
    if program_path is not None:
        return Path(program_path).parent
    return Path.cwd()


def build_memory(
    config: RunConfig, workspace: Path, program_dir: Path | None, owned: list[Closeable]
) -> MemoryProvider:
    """The memory backends (JSONL, SQLite, PostgreSQL) by URI; a dry run keeps everything in
    process, so walking a program never writes a record."""
    if config.memory is not None:
        return config.memory
    if config.mock_memory or config.model == "dry-run":
        from agentscript.providers.memory.mock import MockMemory

        return MockMemory()
    from agentscript.providers.memory.router import MemoryRouter

    root = Path(config.memory_root) if config.memory_root is not None else workspace
    router = MemoryRouter(root, program_dir)
    owned.append(router)
    return router


def build_tools(config: RunConfig, workspace: Path, owned: list[Closeable]) -> ToolProvider:
    """The host tools by URI scheme, behind the approval gate; in a dry run reads run for real
    and every other call is only reported, so walking a program changes nothing."""
    if config.tools is not None:
        return config.tools
    if config.mock_tools:
        from agentscript.providers.tools.mock import MockTools

        return MockTools()
    from agentscript.providers.tools.approvals import ApprovalGate, ApprovalPolicy
    from agentscript.providers.tools.env import EnvTools
    from agentscript.providers.tools.files import FileTools
    from agentscript.providers.tools.mcp_launch import McpConfigSnapshot, refuse_every_start
    from agentscript.providers.tools.registry import LazyTool, ToolRegistry
    from agentscript.providers.tools.shell import ShellTools
    from agentscript.providers.tools.workspace import Workspace

    environ = config.environ if config.environ is not None else os.environ
    jail = Workspace(workspace)
    policy = ApprovalPolicy.load(config.approvals) if config.approvals is not None else None
    # Read once, now: a configuration the run itself writes must not change what it may start.
    mcp_config = McpConfigSnapshot.read(jail.root)
    # Set below, before any tool is built (they are built on first use): the approval gate
    # allows MCP server starts; a dry run has none, and starts no server.
    gate: ApprovalGate | None = None

    def http_tools() -> SchemeTool:
        from agentscript.providers.tools.http import HttpTools

        return HttpTools()

    def mcp_tools() -> SchemeTool:
        from agentscript.providers.tools.mcp import McpTools

        approve = gate.approve_start if gate is not None else refuse_every_start
        return McpTools(jail.root, config=mcp_config, environ=environ, approve_start=approve)

    def memory_tools() -> SchemeTool:
        from agentscript.memory.adapter import MemoryTools

        granted = policy.memory_scopes if policy is not None else ()
        return MemoryTools.open(jail.root, config.memory_db, granted)

    http = LazyTool(http_tools)
    registry = ToolRegistry(
        {
            "sh": ShellTools(jail),
            "file": FileTools(jail),
            "env": EnvTools(environ, allow=config.env_allow),
            "http": http,
            "https": http,
            "mcp": LazyTool(mcp_tools),
            "memory": LazyTool(memory_tools),
        }
    )
    if config.model == "dry-run":
        from agentscript.providers.tools.dry_run import DryRunTools

        dry = DryRunTools(registry)
        owned.append(dry)
        return dry
    gate = ApprovalGate(registry, policy=policy, mode=config.approve, ask_user=config.ask_user)
    owned.append(gate)
    return gate
