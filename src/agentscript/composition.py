"""The composition root: the one place that picks concrete providers for a run.

The CLI and the Python API both come here, so a program behaves the same from either. Lower
layers never choose providers themselves; they receive them through ExecutionOptions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TextIO

from agentscript.providers.llm.mock import DryRunLlm, MockLlm, ScriptedLlm
from agentscript.providers.memory.mock import MockMemory
from agentscript.providers.tools.mock import MockTools
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.interpreter import DEFAULT_MAX_CALL_DEPTH, ExecutionOptions
from agentscript.runtime.ports import (
    GenerateRequest,
    GenerateResponse,
    InputProvider,
    LlmProvider,
    MemoryProvider,
    ToolProvider,
)
from agentscript.runtime.trace import TraceSink

ModelChoice = Literal["real", "mock", "dry-run"]


@dataclass(slots=True)
class RunConfig:
    """How to run a program. Every field has a sensible default; the CLI fills it from flags."""

    model: ModelChoice | LlmProvider = "real"
    # With model="mock": answer generates from this script instead of shape defaults.
    responses: str | Path | None = None
    tools: ToolProvider | None = None
    memory: MemoryProvider | None = None
    input_provider: InputProvider | None = None
    agent: str | None = None
    function: str | None = None
    trace_sinks: list[TraceSink] = field(default_factory=list)
    debug_stream: TextIO | None = None
    on_dry_run_prompt: Callable[[GenerateRequest], None] | None = None
    max_call_depth: int = DEFAULT_MAX_CALL_DEPTH


class _UnavailableLlm:
    """Stands in for real model providers until they are built (issue 2)."""

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        uri = request.model.uri if request.model else "(no model)"
        raise ExecutionError(
            f"Real LLM providers are not available yet (model {uri}); run with --mock"
        )


def build_llm(config: RunConfig) -> LlmProvider:
    model = config.model
    if not isinstance(model, str):
        return model
    if model == "mock":
        return ScriptedLlm.from_file(config.responses) if config.responses else MockLlm()
    if model == "dry-run":
        return DryRunLlm(config.on_dry_run_prompt or (lambda request: None))
    return _UnavailableLlm()


def build_execution_options(config: RunConfig) -> ExecutionOptions:
    """Concrete providers for one run, chosen from `config`."""
    return ExecutionOptions(
        llm=build_llm(config),
        tools=config.tools or MockTools(),
        memory=config.memory or MockMemory(),
        input_provider=config.input_provider,
        agent_name=config.agent,
        function_name=config.function,
        max_call_depth=config.max_call_depth,
        debug_stream=config.debug_stream,
        trace_sinks=list(config.trace_sinks),
    )
