"""How to run a program: the run configuration every entry point fills (the CLI from its flags).

Plain data, cheap to import: the providers it names are built by `composition`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TextIO

from agentscript.runtime.interpreter import DEFAULT_CONCURRENCY, DEFAULT_MAX_CALL_DEPTH
from agentscript.runtime.ports import (
    Cassette,
    GenerateRequest,
    InputProvider,
    LlmProvider,
    MemoryProvider,
    ToolProvider,
)
from agentscript.runtime.trace import TraceSink

if TYPE_CHECKING:
    from agentscript.providers.tools.approvals import ApprovalMode, AskUser
    from agentscript.providers.tools.replay import ReplayToolsMode

ModelChoice = Literal["real", "mock", "dry-run"]
# What the command line leaves to the release a program runs as (app/release_defaults.py).
ReleaseChoice = Literal["mock", "unchosen-model"]


@dataclass(slots=True)
class RunConfig:
    """How to run a program. Every field has a sensible default; the CLI fills it from flags."""

    model: ModelChoice | LlmProvider = "real"
    # `--model` values: `URI` replaces every `import llm` of the program, `NAME=URI` one of
    # them (agentscript.app.model_choice), without editing the program.
    models: list[str] = field(default_factory=list)
    # With model="mock": answer generates from this script instead of shape defaults.
    responses: str | Path | None = None
    # Save every model exchange to this JSONL file.
    record: str | Path | None = None
    # Answer model calls, tool calls and memory calls from an earlier run instead of making
    # them: a run in the journal (its id, an id prefix or `last`), a recording file, or a
    # Cassette. A recording made with `record` holds no tool calls: its tools run live.
    replay: str | Path | Cassette | None = None
    # With `replay`: "all" answers every tool call from the recording, "effects" lets reads
    # run live.
    replay_tools: ReplayToolsMode = "all"
    # With `replay`: the first call the recording cannot answer, and every one after it, goes
    # to the live model, tools and memories (tools behind approvals) instead of stopping the
    # run with a mismatch.
    replay_lenient: bool = False
    # With `replay` (a resume): a call with effects the recorded run started but never
    # finished runs again (still behind approvals) instead of being asked about or refused.
    rerun_unfinished: bool = False
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
    # The `host://optimizer` trials a run may make (the optimizer CLI mode's --max-trials).
    max_trials: int | None = None
    # Where provider keys, base URLs and timeouts are read from (os.environ when None).
    environ: Mapping[str, str] | None = None
    # The directory host tools are confined to (default: the program's directory).
    workspace: str | Path | None = None
    # Answer every tool call with the mock tool instead of running host tools; "except-host":
    # every call but those of `host://` tools, which run (the newer releases' --mock).
    mock_tools: bool | Literal["except-host"] = False
    # Reads run for real; a call that would change something only reports, as in a dry run
    # (an optimizer's trials: their prompts are the ones the program really builds).
    simulate_effects: bool = False
    # The original's release the program is run as (e.g. "0.1.22"); None: the one the
    # workspace's package.json declares, else 0.1.0 (app/compat_version.py).
    compat: str | None = None
    # What the command line left to that release, settled before anything is built
    # (app/release_defaults.py): "mock" for `--mock`, which from 0.1.19 on also mocks the tools
    # (`host://` tools still run) and memory; "unchosen-model" for a flag-form run that names
    # no model, answered by the mock in 0.1.0 and by the real model from 0.1.6 on. None: the
    # other fields mean just what they say.
    by_release: ReleaseChoice | None = None
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
    # Journal the run (events, task graph, execution trace, and what it exchanged with models,
    # tools and memories) in `<workspace>/.agentscript/runs.db` or at `journal_path`. Dry runs
    # and strict replays (`replay` without `replay_lenient`) are never journaled.
    journal: bool = True
    journal_path: str | Path | None = None
    # Send the run to an OpenTelemetry collector over OTLP/HTTP: True, False, or None to
    # follow the standard OTEL_* variables (on when an OTLP endpoint is set).
    otel: bool | None = None
    # After a journaled run ends ok or with an error, distil its experiences into the
    # long-term memory at `memory_db` (agentscript.learn.run_memory). None (the default)
    # learns only from runs that talked to a model: not from the mock, a dry run or a replay,
    # whose answers teach nothing about the world. The run memory (memory.yml auto_sink) is
    # written for every run that talked to a model even when this is False; True also writes
    # it for the mock and replays (see leaves_run_memory).
    learn: bool | None = None
    # Leave the run memory: None as `learn` says above; False never (an eval's arm without
    # learning, whose runs must not change the memory the other arm learns into); True always.
    run_memory: bool | None = None
    # Rewrite new experiences with a model: None (the rules' text), "program" (the program's
    # own model), a model URI, or a provider.
    learn_model: str | LlmProvider | None = None
    # Put around the real model (the router) when `model` is "real": a queue's worker asks
    # the limits every worker shares before each call. The run still talks to a live model,
    # so its answers are journaled before it goes on and it learns as any live run.
    wrap_real_model: Callable[[LlmProvider], LlmProvider] | None = None
    # The id the run is journaled under (default: a new one). A queue's worker names each
    # attempt of a job itself, so a worker that takes a dead one's job finds what it did.
    run_id: str | None = None
    # Let providers that can stream (OpenAI, Anthropic, Ollama) hand the answer text to the
    # trace sinks as it arrives; the answer is validated as a whole either way.
    stream: bool = False
    # The prompt layout, "0.1.0" or "compact"; None lets the provider choose (compact for the
    # providers that enforce shapes natively, 0.1.0 for the mock and the dry run).
    prompt_layout: str | None = None
    # Setting this event (from another thread) interrupts the run's tool calls in flight as
    # Ctrl-C does; `agentscript.arun` and `stream` set it when their task is cancelled.
    interrupt: threading.Event | None = None


def learns_from(config: RunConfig) -> bool:
    """Whether a run distils experiences (see RunConfig.learn)."""
    if config.learn is not None:
        return config.learn
    return _talks_to_a_live_model(config)


def leaves_run_memory(config: RunConfig) -> bool:
    """Whether a run leaves its run memory, memory.yml `auto_sink` permitting: every run that
    talked to a live model, learning or not (`learn=False`, `--no-learn`, stops the distilling
    of experiences, not the seed's auto_sink), and a mock or replayed run only when asked to
    learn; a dry run never (it is never journaled). `run_memory` overrides all of this."""
    if config.run_memory is not None:
        return config.run_memory
    return config.learn is True or _talks_to_a_live_model(config)


def _talks_to_a_live_model(config: RunConfig) -> bool:
    """Not the mock, a dry run or a replay, whose answers teach nothing about the world."""
    return config.replay is None and not (isinstance(config.model, str) and config.model != "real")
