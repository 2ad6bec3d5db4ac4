"""The outcome of an eval, `EvalReport`: the rows of every cell and their summaries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentscript.app.evals.cases import Case
from agentscript.app.evals.configurations import Configuration
from agentscript.app.evals.results import CellResult
from agentscript.app.evals.stats import (
    ConfigurationSummary,
    LearningCurve,
    PairedDifference,
    TagSummary,
    by_tag,
    learning_curve,
    paired_difference,
    summarise,
)

if TYPE_CHECKING:
    from agentscript.lang import ast


@dataclass(slots=True)
class EvalReport:
    program: str
    metric: str
    cases: list[Case]
    configurations: list[str]
    # Every cell that ran (or was resumed), in case order within each configuration.
    rows: list[CellResult]
    summaries: list[ConfigurationSummary]
    # Each configuration after the first against the first, over the cases both ran.
    differences: list[PairedDifference]
    learning: list[LearningCurve] = field(default_factory=list)
    # Per configuration and case tag (none when no case has a tag).
    tags: list[TagSummary] = field(default_factory=list)
    # Cells taken from the results file instead of being run again.
    resumed: int = 0
    # Why cells were left unrun (the eval's budget), or None.
    stopped: str | None = None
    judge_tokens: int = 0
    judge_cost: float | None = None
    seconds: float = 0.0
    # What the eval's models spent in all: calls, tokens in and out (judges included).
    spent: dict[str, float | int] = field(default_factory=dict)
    # The journal the runs are in (their traces), when they were journaled.
    journal: str | None = None

    @property
    def not_run(self) -> int:
        return len(self.cases) * len(self.configurations) - len(self.rows)

    def summary(self, configuration: str | None = None) -> ConfigurationSummary:
        """The summary of `configuration` (the first when None)."""
        for summary in self.summaries:
            if configuration is None or summary.configuration == configuration:
                return summary
        raise KeyError(configuration)

    def below(self, min_score: float) -> list[str]:
        """The configurations whose mean score is below `min_score`."""
        return [s.configuration for s in self.summaries if s.mean_score < min_score]

    def to_json(self) -> dict[str, Any]:
        return {
            "program": self.program,
            "metric": self.metric,
            "cases": len(self.cases),
            "configurations": self.configurations,
            "summary": [summary.to_json() for summary in self.summaries],
            "differences": [difference.to_json() for difference in self.differences],
            "learning": [curve.to_json() for curve in self.learning],
            "tags": [tag.to_json() for tag in self.tags],
            "resumed": self.resumed,
            "not_run": self.not_run,
            "stopped": self.stopped,
            "judge": {"tokens": self.judge_tokens, "cost": self.judge_cost},
            "seconds": round(self.seconds, 3),
            "spent": self.spent,
            "journal": self.journal,
        }


def build_report(
    *,
    program: ast.Program,
    metric: str,
    cases: list[Case],
    plan: Sequence[Configuration],
    rows: Mapping[tuple[str, str], CellResult],
    resumed: int,
    stopped: str | None,
    judge: bool,
    seconds: float,
    meter: dict[str, float | int],
    journal: str | None,
) -> EvalReport:
    labels = [configuration.label for configuration in plan]
    ordered = [
        rows[(case.id, label)] for label in labels for case in cases if (case.id, label) in rows
    ]
    by_configuration = {
        label: [row for row in ordered if row.configuration == label] for label in labels
    }
    summaries = [summarise(label, by_configuration[label]) for label in labels]
    differences: list[PairedDifference] = []
    if len(labels) > 1:
        baseline = {row.id: row.score for row in by_configuration[labels[0]]}
        for label in labels[1:]:
            scores = {row.id: row.score for row in by_configuration[label]}
            differences.append(paired_difference(label, labels[0], scores, baseline))
    learning = [
        learning_curve(
            configuration.label, configuration.learning, by_configuration[configuration.label]
        )
        for configuration in plan
        if configuration.learning is not None
    ]
    judge_costs = [row.judge_cost for row in ordered]
    return EvalReport(
        program=program.source_path or "<source>",
        metric=metric,
        cases=cases,
        configurations=labels,
        rows=ordered,
        summaries=summaries,
        differences=differences,
        learning=learning,
        tags=[summary for label in labels for summary in by_tag(label, by_configuration[label])],
        resumed=resumed,
        stopped=stopped,
        judge_tokens=sum(
            int(row.judge_usage.get("input_tokens", 0))
            + int(row.judge_usage.get("output_tokens", 0))
            for row in ordered
        ),
        judge_cost=(
            sum(cost for cost in judge_costs if cost is not None)
            if judge and judge_costs and all(cost is not None for cost in judge_costs)
            else None
        ),
        seconds=seconds,
        spent=meter,
        journal=journal,
    )
