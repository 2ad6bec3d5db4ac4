"""Summaries of eval results: per configuration, paired differences with bootstrap intervals,
and the first and last quarter of a learning run.

The paired difference of configuration B to A is taken over the cases both ran: the mean of
score_B − score_A, with a 95 % percentile interval from resampling those cases with
replacement (a fixed seed, so the same results always give the same interval). An interval
that excludes 0 is the evidence of a difference.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from agentscript.app.evals.results import CellResult

BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20260101


@dataclass(frozen=True, slots=True)
class ConfigurationSummary:
    configuration: str
    n: int
    mean_score: float
    pass_rate: float
    errors: int
    tokens: int
    # None when the price of any call is unknown (mocks, local models, models genai-prices
    # does not list).
    cost: float | None
    latency_p50: float
    latency_p95: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class PairedDifference:
    configuration: str
    baseline: str
    n: int
    # NaN when the two configurations share no case.
    mean: float
    low: float
    high: float

    def to_json(self) -> dict[str, Any]:
        """As JSON, where there is no NaN: a difference over no case is null."""
        return {
            key: None if isinstance(value, float) and math.isnan(value) else value
            for key, value in asdict(self).items()
        }


@dataclass(frozen=True, slots=True)
class TagSummary:
    """How a configuration did on the cases with one tag."""

    configuration: str
    tag: str
    n: int
    mean_score: float
    pass_rate: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def by_tag(configuration: str, rows: Sequence[CellResult]) -> list[TagSummary]:
    """One summary per tag the rows carry, tags in name order."""
    tags = sorted({tag for row in rows for tag in row.tags})
    summaries = []
    for tag in tags:
        tagged = [row for row in rows if tag in row.tags]
        summaries.append(
            TagSummary(
                configuration,
                tag,
                len(tagged),
                _mean([row.score for row in tagged]),
                _mean([1.0 if row.passed else 0.0 for row in tagged]),
            )
        )
    return summaries


@dataclass(frozen=True, slots=True)
class LearningCurve:
    """The mean score over the first and the last quarter of the cases, in case order."""

    configuration: str
    learning: str
    quarter: int
    first: float
    last: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def summarise(configuration: str, rows: Sequence[CellResult]) -> ConfigurationSummary:
    latencies = sorted(float(row.usage.get("seconds", 0.0)) for row in rows)
    costs = [row.cost for row in rows if row.cost is not None]
    return ConfigurationSummary(
        configuration=configuration,
        n=len(rows),
        mean_score=_mean([row.score for row in rows]),
        pass_rate=_mean([1.0 if row.passed else 0.0 for row in rows]),
        errors=sum(1 for row in rows if row.error is not None),
        tokens=sum(row.tokens for row in rows),
        cost=sum(costs) if rows and len(costs) == len(rows) else None,
        latency_p50=percentile(latencies, 0.50),
        latency_p95=percentile(latencies, 0.95),
    )


def paired_difference(
    configuration: str,
    baseline: str,
    scores: dict[str, float],
    baseline_scores: dict[str, float],
    samples: int = BOOTSTRAP_SAMPLES,
) -> PairedDifference:
    """Mean of scores − baseline_scores over the case ids both have, with a bootstrap 95 % CI."""
    shared = [case for case in baseline_scores if case in scores]
    differences = [scores[case] - baseline_scores[case] for case in shared]
    if not differences:
        return PairedDifference(configuration, baseline, 0, math.nan, math.nan, math.nan)
    generator = random.Random(BOOTSTRAP_SEED)
    size = len(differences)
    means = sorted(sum(generator.choices(differences, k=size)) / size for _ in range(samples))
    return PairedDifference(
        configuration,
        baseline,
        size,
        _mean(differences),
        percentile(means, 0.025),
        percentile(means, 0.975),
    )


def learning_curve(configuration: str, learning: str, rows: Sequence[CellResult]) -> LearningCurve:
    """`rows` in case order; a quarter is at least one case."""
    quarter = max(1, len(rows) // 4)
    scores = [row.score for row in rows]
    return LearningCurve(
        configuration, learning, quarter, _mean(scores[:quarter]), _mean(scores[-quarter:])
    )


def percentile(ordered: Sequence[float], fraction: float) -> float:
    """Linear interpolation between closest ranks of an ordered sequence (0 when empty)."""
    if not ordered:
        return 0.0
    position = (len(ordered) - 1) * fraction
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
