"""The builders of a run: the one place that picks concrete providers for it.

Every entry point (the CLI, the Python API, autonomous windows, reflection) comes here through
the use-case modules of `agentscript.app`, so a program behaves the same from each. Lower
layers never choose providers themselves; they receive them through ExecutionOptions (the
runtime) or a port (learning). Provider modules are imported only when a run needs them, which
keeps `agentscript check` starting fast.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentscript.app.configuration import RunConfig, learns_from, leaves_run_memory
from agentscript.runtime.budgets import RunBudget, RunMeter
from agentscript.runtime.interpreter import ExecutionOptions
from agentscript.runtime.ports import (
    Closeable,
    FileImports,
    LlmProvider,
    MemoryProvider,
    ToolProvider,
)
from agentscript.runtime.secrets import SecretSet

if TYPE_CHECKING:
    from agentscript.learn.journal import JournalSink
    from agentscript.providers.telemetry.otel import OtelTraceSink
    from agentscript.providers.tools.base import SchemeTool


def run_secrets(config: RunConfig) -> SecretSet:
    """The redaction set a run starts with: the provider keys and base-URL passwords it may
    send, and the password of the memory database it may open (see runtime/secrets.py)."""
    from agentscript.providers.llm.endpoints import endpoint_secrets
    from agentscript.runtime.uris import uri_password

    environ = config.environ if config.environ is not None else os.environ
    memory_db = config.memory_db or environ.get("AGENTSCRIPT_MEMORY_DB")
    return SecretSet([*endpoint_secrets(environ), uri_password(str(memory_db or ""))])


def build_llm(
    config: RunConfig, owned: list[Closeable], secrets: SecretSet | None = None
) -> LlmProvider:
    """The model provider for a run: replay, mock, dry-run or the real router, maybe recorded.
    Providers created here are appended to `owned`, to be closed when the run ends; a
    recording is scrubbed with `secrets` (the run's redaction set)."""
    llm = _base_llm(config)
    if isinstance(llm, Closeable) and llm is not config.model:
        owned.append(llm)
    if config.prompt_layout is not None:
        from agentscript.providers.llm.layout import FixedLayout
        from agentscript.runtime.context import PromptLayout

        llm = FixedLayout(llm, PromptLayout(config.prompt_layout))
    if config.record is not None:
        from agentscript.providers.llm.recording import RecordingLlm

        recording = RecordingLlm(
            llm, config.record, secrets if secrets is not None else run_secrets(config)
        )
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
    secrets = run_secrets(config)
    options = ExecutionOptions(
        llm=build_llm(config, owned, secrets),
        tools=build_tools(config, workspace, owned, secrets),
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
        secrets=secrets,
    )
    journal = build_journal(config, workspace)
    if journal is not None:
        journal.secrets = secrets
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
    """The sink that journals this run, unless journaling is off or this is a dry run. When
    the run learns or leaves a run memory, it queues the run for learning when it ends
    (agentscript.app.learning), or learns from it before the process exits when that needs a
    provider object."""
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
    if learns_from(config) or leaves_run_memory(config):
        from agentscript.app.learning import learner_for, learning_request

        request = learning_request(config)
        if request is not None:
            sink.learning_request = request
        else:
            sink.learner = learner_for(config)
    return sink


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


def build_tools(
    config: RunConfig, workspace: Path, owned: list[Closeable], secrets: SecretSet | None = None
) -> ToolProvider:
    """The host tools by URI scheme, behind the approval gate; in a dry run reads run for real
    and every other call is only reported, so walking a program changes nothing. The memory
    service refuses to store any of `secrets` (the run's redaction set)."""
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
        from agentscript.app.memory_service import memory_tools

        granted = policy.memory_scopes if policy is not None else ()
        return memory_tools(jail.root, config.memory_db, environ, granted, secrets)

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
