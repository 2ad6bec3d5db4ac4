"""The autonomy use cases: run a program unattended in a window, and summarise the ledger.

The window itself (tasks, budget, outcomes, ledger) is agentscript.learn.autonomy; this module
gives it a runner wired here: every task runs through `app.run` with the approval gate in
`autonomous` mode (reads only, nobody asked), the window's token budget and one model shared
by all the window's tasks.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscript.app.configuration import RunConfig
from agentscript.learn.autonomy import WindowReport, needs_you, run_window
from agentscript.learn.autonomy_ledger import AutonomySummary, Clock, Ledger, WindowKind

if TYPE_CHECKING:
    from agentscript.lang import ast
    from agentscript.runtime.interpreter import RunResult
    from agentscript.runtime.ports import Closeable
    from agentscript.runtime.trace import TraceSink

# RunConfig fields an autonomous run sets itself: they keep it read-only, bounded and in its
# workspace (the one its ledger and profiles are in), so a caller may not override them.
RESERVED_FIELDS = frozenset(
    {"approve", "ask_user", "tools", "mock_tools", "max_tokens", "workspace"}
)


def run_autonomous(
    path: str | Path,
    kind: WindowKind,
    *,
    workspace: str | Path,
    budget_tokens: int | None = None,
    window: int = 1,
    config_overrides: Mapping[str, Any] | None = None,
    input_value: Mapping[str, Any] | None = None,
    clock: Clock = time.time,
    ledger: Ledger | None = None,
) -> WindowReport:
    """Run the program at `path` unattended, up to `window` times, and record every run
    (agentscript.learn.autonomy.run_window says how a window goes).

    `config_overrides` sets other RunConfig fields (the model, the journal, ...), never the
    ones in RESERVED_FIELDS; only a bad argument raises (ValueError; TypeError for a field
    RunConfig does not have)."""
    overrides = dict(config_overrides or {})
    reserved = sorted(RESERVED_FIELDS & overrides.keys())
    if reserved:
        raise ValueError(f"Autonomous runs set {', '.join(reserved)} themselves")
    root = Path(workspace)
    config = RunConfig(**overrides, workspace=root, approve="autonomous", ask_user=None)
    return run_window(
        path,
        kind,
        ConfiguredWindowRunner(config),
        workspace=root,
        agent=config.agent,
        journal_file=config.journal_path,
        budget_tokens=budget_tokens,
        window=window,
        input_value=input_value,
        clock=clock,
        ledger=ledger,
    )


class ConfiguredWindowRunner:
    """The window's runner (agentscript.learn.ports.WindowRunner) over one RunConfig."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.owned: list[Closeable] = []

    def prepare(self) -> None:
        """One model for the whole window: a scripted mock goes on with its script from task
        to task instead of starting over, and a real router keeps its connections. A dry run
        keeps its model choice, which also decides its tools."""
        if self.config.model == "dry-run":
            return
        from agentscript.app.composition import build_llm

        llm = build_llm(self.config, self.owned)
        self.config = replace(self.config, model=llm, responses=None, record=None, replay=None)

    def run(
        self, program: ast.Program, input_value: Any, *, max_tokens: int | None, watch: TraceSink
    ) -> RunResult:
        from agentscript.app.run import run

        config = replace(
            self.config, max_tokens=max_tokens, trace_sinks=[*self.config.trace_sinks, watch]
        )
        return run(program, input_value, config)

    def close(self) -> None:
        for provider in reversed(self.owned):
            provider.close()
        self.owned.clear()


@dataclass(frozen=True, slots=True)
class AutonomyOverview:
    """What `autonomy summary` shows: the ledger's summary and what waits for the user."""

    summary: AutonomySummary
    needs_you: list[str]

    def to_json(self) -> dict[str, Any]:
        return {**self.summary.to_json(), "needs_you": list(self.needs_you)}


def autonomy_overview(workspace: str | Path, days: float) -> AutonomyOverview:
    """The last `days` of the workspace's ledger and the desires that wait for the user."""
    summary = Ledger.for_workspace(workspace).summary(days)
    return AutonomyOverview(summary, needs_you(workspace, time.time()))
