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
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscript.app.configuration import RunConfig, learns_from, leaves_run_memory
from agentscript.runtime.budgets import RunBudget, RunMeter
from agentscript.runtime.interpreter import ExecutionOptions
from agentscript.runtime.ports import (
    Cassette,
    Closeable,
    FileImports,
    LlmProvider,
    MemoryProvider,
    ToolProvider,
    is_closeable,
)
from agentscript.runtime.secrets import SecretSet

if TYPE_CHECKING:
    from agentscript.learn.journal import JournalSink
    from agentscript.providers.telemetry.otel import OtelTraceSink
    from agentscript.providers.tools.base import SchemeTool
    from agentscript.providers.tools.workspace import Workspace


def run_secrets(config: RunConfig) -> SecretSet:
    """The redaction set a run starts with: the provider keys and base-URL passwords it may
    send, and the password of the memory database it may open (see runtime/secrets.py)."""
    from agentscript.providers.llm.endpoints import endpoint_secrets
    from agentscript.runtime.uris import uri_secrets

    environ = config.environ if config.environ is not None else os.environ
    memory_db = config.memory_db or environ.get("AGENTSCRIPT_MEMORY_DB")
    return SecretSet([*endpoint_secrets(environ), *uri_secrets(str(memory_db or ""))])


def build_llm(
    config: RunConfig,
    owned: list[Closeable],
    secrets: SecretSet | None = None,
    cassette: Cassette | None = None,
) -> LlmProvider:
    """The model provider for a run: mock, dry-run or the real router, or answers from the
    `cassette` of a replay (falling through to one of those when the replay is lenient),
    maybe recorded. Providers created here are appended to `owned`, to be closed when the run
    ends; a recording is scrubbed with `secrets` (the run's redaction set)."""
    if cassette is None and config.replay is not None:
        cassette = replay_cassette(config, workspace_root(config, None))
    llm: LlmProvider
    if cassette is None or config.replay_lenient:
        llm = _base_llm(config)
        if llm is not config.model and is_closeable(llm):
            owned.append(llm)
    if cassette is not None:
        from agentscript.providers.llm.recording import ReplayLlm

        llm = ReplayLlm(cassette, llm if config.replay_lenient else None, secrets)
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

    router = ModelRouter(config.environ)
    return router if config.wrap_real_model is None else config.wrap_real_model(router)


class ScratchFolder:
    """A temporary folder a run owns, removed when the run closes."""

    def __init__(self, prefix: str) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix=prefix)
        self.path = Path(self._folder.name)

    def close(self) -> None:
        self._folder.cleanup()


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
    providers passed in through `config` stay the caller's and are not closed. A replay
    answers from its cassette; a journaled run keeps its exchanges in its journal."""
    owned: list[Closeable] = []
    budget = RunBudget(config.max_tokens, config.max_calls, config.max_seconds)
    workspace = workspace_root(config, program_path)
    program_dir = Path(program_path).parent if program_path is not None else None
    secrets = run_secrets(config)
    cassette = replay_cassette(config, workspace) if config.replay is not None else None
    journal = build_journal(config, workspace)
    llm = build_llm(config, owned, secrets, cassette)
    tools = build_tools(config, workspace, owned, secrets)
    memory = build_memory(config, workspace, program_dir, owned)
    if cassette is not None or journal is not None:
        llm, tools, memory = _replayed_and_journaled(
            config, cassette, journal, secrets, (llm, tools, memory)
        )
    options = ExecutionOptions(
        llm=llm,
        tools=tools,
        memory=memory,
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
        extra_fields_allowed=_runs_as_newer(config, workspace),
        stopped=config.interrupt if config.interrupt is not None else threading.Event(),
    )
    if journal is not None:
        journal.secrets = secrets
        options.trace_sinks.append(journal)
    telemetry = build_telemetry(config, program_path, journal.run_id if journal else None)
    if telemetry is not None:
        options.trace_sinks.append(telemetry)
        owned.append(telemetry)
    return RunSetup(options, owned, workspace, journal)


def replay_cassette(config: RunConfig, workspace: Path) -> Cassette:
    """What `config.replay` names: a Cassette, a recording file, or a run in the journal."""
    from agentscript.app.replay import cassette_for

    assert config.replay is not None
    return cassette_for(config.replay, journal_location(config, workspace))


def _replayed_and_journaled(
    config: RunConfig,
    cassette: Cassette | None,
    journal: JournalSink | None,
    secrets: SecretSet,
    providers: tuple[LlmProvider, ToolProvider, MemoryProvider],
) -> tuple[LlmProvider, ToolProvider, MemoryProvider]:
    """Tools and memories answered from the cassette (when it holds them), then every
    exchange kept in the journal: a replay or a resume of this run finds them there."""
    from agentscript.providers.tools.replay import risk_of

    llm, tools, memory = providers
    risk = risk_of(tools)
    if cassette is not None and cassette.tools_recorded:
        from agentscript.providers.memory.replay import ReplayMemory
        from agentscript.providers.tools.replay import ReplayTools

        tools = ReplayTools(
            cassette.tools,
            tools,
            risk,
            cassette.source,
            mode=config.replay_tools,
            go_live=config.replay_lenient,
            rerun_unfinished=config.rerun_unfinished,
            scrub=secrets.scrub,
        )
        memory = ReplayMemory(
            cassette.memory, memory, cassette.source, config.replay_lenient, secrets.scrub
        )
    if journal is not None:
        from agentscript.providers.llm.recording import RecordingLlm
        from agentscript.providers.memory.replay import JournaledMemory
        from agentscript.providers.tools.replay import JournaledTools

        # A real model's answer is on disk before the run goes on: after a kill it is not
        # asked (and paid for) again. The mock answers again for free.
        durable = config.model == "real" and (cassette is None or config.replay_lenient)
        llm = RecordingLlm(llm, journal, durable=durable)
        tools = JournaledTools(tools, journal, risk)
        memory = JournaledMemory(memory, journal)
    return llm, tools, memory


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
    """The sink that journals this run, unless journaling is off, or this is a dry run or a
    strict replay (see `replays_only`). When the run learns or leaves a run memory, it queues
    the run for learning when it ends (agentscript.app.learning), or learns from it before the
    process exits when that needs a provider object."""
    if not config.journal or config.model == "dry-run" or replays_only(config):
        return None
    from agentscript.learn.journal import shared_journal

    sink = shared_journal(journal_location(config, workspace)).sink(config.run_id)
    if learns_from(config) or leaves_run_memory(config):
        from agentscript.app.learning import learner_for, learning_request

        request = learning_request(config)
        if request is not None:
            sink.learning_request = request
        else:
            sink.learner = learner_for(config)
    return sink


def replays_only(config: RunConfig) -> bool:
    """A replay that cannot go live does nothing new: like a dry run it is not journaled, so
    `last` still names the run it replayed."""
    return config.replay is not None and not config.replay_lenient


def journal_location(config: RunConfig, workspace: Path) -> Path:
    """Where the run journals, by the same rule as `agentscript runs`: `journal_path`, else
    an explicit workspace, else the workspace root found from `workspace` (the program's)."""
    if config.journal_path:
        return Path(config.journal_path)
    from agentscript.learn.journal import run_journal_path

    return run_journal_path(config.workspace, workspace)


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


def optimizer_tool(config: RunConfig, jail: Workspace) -> SchemeTool:
    """`host://optimizer` for a run: its trials answer with the run's model choice (the real
    one, the mock or its script) and the mock tools, and journal nothing."""
    from agentscript.app.optimize.primitives import OptimizerTool

    def run_trial(
        target: Path, value: Any, picks: dict[str, str], agent: str | None, function: str | None
    ) -> Any:
        from agentscript.app.run import run

        trial = RunConfig(
            model=config.model,
            responses=config.responses,
            environ=config.environ,
            mock_tools=True,
            journal=False,
            learn=False,
            variants=picks,
            agent=agent,
            function=function,
        )
        return run(target, value, trial)

    return OptimizerTool(jail, run_trial, config.max_trials)


def _runs_as_newer(config: RunConfig, workspace: Path) -> bool:
    """Whether the program runs as a release of the original after 0.1.0 (compat_version)."""
    from agentscript.app.compat_version import runs_as_newer

    return runs_as_newer(config.compat, workspace)


def build_tools(
    config: RunConfig, workspace: Path, owned: list[Closeable], secrets: SecretSet | None = None
) -> ToolProvider:
    """The host tools by URI scheme, behind the approval gate; in a dry run (and with
    `simulate_effects`) reads run for real and every other call is only reported, so walking
    a program changes nothing. The memory
    service refuses to store any of `secrets` (the run's redaction set)."""
    if config.tools is not None:
        return config.tools
    if config.mock_tools is True:
        from agentscript.providers.tools.mock import MockTools

        return MockTools()
    from agentscript.providers.tools.approvals import ApprovalGate, ApprovalPolicy
    from agentscript.providers.tools.env import EnvTools
    from agentscript.providers.tools.files import FileTools
    from agentscript.providers.tools.mcp_launch import McpConfigSnapshot, refuse_every_start
    from agentscript.providers.tools.npm_allow import NpmRegistry
    from agentscript.providers.tools.python_allow import AllowList
    from agentscript.providers.tools.registry import LazyTool, ToolRegistry
    from agentscript.providers.tools.shell import ShellTools
    from agentscript.providers.tools.workspace import Workspace

    environ = config.environ if config.environ is not None else os.environ
    jail = Workspace(workspace)
    policy = ApprovalPolicy.load(config.approvals) if config.approvals is not None else None
    # Read once, now: a configuration the run itself writes must not change what it may start.
    mcp_config = McpConfigSnapshot.read(jail.root)
    python_allow = AllowList.read(jail.root)
    npm_allow = NpmRegistry.read(jail.root)
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
        database = config.memory_db
        if database is None and config.model == "mock":
            # A mock run tries a program out: what it remembers goes to a scratch memory that
            # starts empty and is removed with the run, never into the user's (--memory-db
            # names a real one on purpose).
            scratch = ScratchFolder("agentscript-mock-memory-")
            owned.insert(0, scratch)  # closed last, after the service that uses it
            database = scratch.path / "memory.db"
        return memory_tools(jail.root, database, environ, granted, secrets)

    def host_tools() -> SchemeTool:
        from agentscript.app.architect.tool import ArchitectTool
        from agentscript.app.host_tools import HostTools

        return HostTools(
            {"optimizer": lambda: optimizer_tool(config, jail), "architect": ArchitectTool}
        )

    def python_tools() -> SchemeTool:
        from agentscript.providers.tools.python import PythonTools

        return PythonTools(jail.root, allow=python_allow)

    def node_tools() -> SchemeTool:
        from agentscript.providers.tools.node import NodeTools

        return NodeTools(jail.root, allow=npm_allow)

    http = LazyTool(http_tools)
    node = LazyTool(node_tools)
    file_tools: SchemeTool = FileTools(jail)
    env_tools: SchemeTool = EnvTools(environ, allow=config.env_allow)
    if _runs_as_newer(config, jail.root):
        from agentscript.providers.tools.result_shapes import NewerResultShapes

        file_tools = NewerResultShapes("file", file_tools)
        env_tools = NewerResultShapes("env", env_tools)
    registry = ToolRegistry(
        {
            "sh": ShellTools(jail),
            "file": file_tools,
            "env": env_tools,
            "http": http,
            "https": http,
            "mcp": LazyTool(mcp_tools),
            "memory": LazyTool(memory_tools),
            "host": LazyTool(host_tools),
            "python": LazyTool(python_tools),
            "node": node,
            "npm": node,
        }
    )
    if config.model == "dry-run" or config.simulate_effects:
        from agentscript.providers.tools.dry_run import DryRunTools

        dry = DryRunTools(registry, npm_allow)
        owned.append(dry)
        return dry
    gate = ApprovalGate(registry, policy=policy, mode=config.approve, ask_user=config.ask_user)
    owned.append(gate)
    if config.mock_tools == "except-host":
        from agentscript.providers.tools.mock import MockExceptHost

        return MockExceptHost(gate)
    return gate
