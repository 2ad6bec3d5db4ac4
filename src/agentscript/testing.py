"""Helpers for testing agents in your own test suite (the pytest plugin's fixtures use them).

report = agentscript.evaluate("triage.as", "cases.jsonl",
                              agentscript.EvalConfig(replay="cassettes"), metric="exact")
assert_score(report, 0.9)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentscript.app.evals.report_data import EvalReport


def assert_score(
    report: EvalReport,
    min_score: float,
    configuration: str | None = None,
    allow_errors: bool = False,
) -> None:
    """Fail unless every configuration (or the one named) has a mean score of at least
    `min_score` and, unless `allow_errors`, no cell failed to run; the message lists the
    worst cells so the failure explains itself."""
    chosen = [
        s for s in report.summaries if configuration is None or s.configuration == configuration
    ]
    if not chosen:
        raise AssertionError(
            f"No configuration {configuration!r} in the eval ({', '.join(report.configurations)})"
        )
    problems: list[str] = []
    if report.not_run:
        problems.append(f"{report.not_run} cells did not run ({report.stopped or 'interrupted'})")
    for summary in chosen:
        if summary.mean_score < min_score:
            problems.append(
                f"{summary.configuration}: mean score {summary.mean_score:.3f} < {min_score:g}"
            )
        if summary.errors and not allow_errors:
            problems.append(f"{summary.configuration}: {summary.errors} cells failed to run")
    if not problems:
        return
    names = {s.configuration for s in chosen}
    worst = sorted(
        (row for row in report.rows if row.configuration in names and not row.passed),
        key=lambda row: row.score,
    )[:5]
    details = [
        f"  {row.id} [{row.configuration}] score {row.score:.2f}: {row.error or row.reason}"
        for row in worst
    ]
    raise AssertionError("\n".join(["Eval below its bar:", *problems, *details]))
