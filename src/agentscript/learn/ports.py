"""What learning needs from the layer above it, as protocols the application layer implements.

`learn/` never imports `app`, `api` or `cli`: where it runs a program (the rewrite of a new
experience, the tasks of an autonomous window) it is handed a runner that the composition root
(agentscript.app) built, so every run is wired in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agentscript.lang import ast
    from agentscript.runtime.interpreter import RunResult
    from agentscript.runtime.ports import LlmProvider
    from agentscript.runtime.trace import TraceSink


class SandboxedRunner(Protocol):
    """Runs a small program that touches nothing: no journal, no learning, mock tools and
    memory, at most `max_calls` model calls. `llm` None asks the real model router with
    `environ`. Returns the run's value; a failed run raises AgentScriptError."""

    def __call__(
        self,
        program: ast.Program,
        input_value: Any,
        *,
        llm: LlmProvider | None,
        environ: Mapping[str, str] | None,
        max_calls: int,
    ) -> Any: ...


class WindowRunner(Protocol):
    """Runs the tasks of one autonomous window, read-only, with the window's configuration."""

    def prepare(self) -> None:
        """Build what every task shares (one model for the whole window); raises
        AgentScriptError or OSError when that cannot be done."""
        ...

    def run(
        self, program: ast.Program, input_value: Any, *, max_tokens: int | None, watch: TraceSink
    ) -> RunResult:
        """One task on at most `max_tokens` (None: no limit), its events also sent to `watch`."""
        ...

    def close(self) -> None:
        """Close what `prepare` built."""
        ...
