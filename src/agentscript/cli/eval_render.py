"""The summary of an eval at the terminal: one rich table row per configuration, the paired
differences to the first configuration, the learning quarters, and what was left unrun."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from agentscript.app.evals.report_data import EvalReport


def print_summary(report: EvalReport, min_score: float | None = None) -> None:
    # Piped output (a CI log, docs) gets a wide table instead of the 80 columns of no terminal.
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 132)
    program = Path(report.program)
    shown = program.relative_to(Path.cwd()) if program.is_relative_to(Path.cwd()) else program
    table = Table(title=f"eval {shown} · {len(report.cases)} cases · {report.metric}")
    for column in ("configuration", "n", "score", "pass", "errors", "tokens", "cost", "p50", "p95"):
        table.add_column(column, justify="left" if column == "configuration" else "right")
    if report.differences:
        table.add_column("Δ vs first [95% CI]", justify="right")
    differences = {d.configuration: d for d in report.differences}
    for summary in report.summaries:
        low = min_score is not None and summary.mean_score < min_score
        cells = [
            summary.configuration,
            str(summary.n),
            f"[red]{summary.mean_score:.3f}[/red]" if low else f"{summary.mean_score:.3f}",
            f"{summary.pass_rate:.0%}",
            str(summary.errors),
            f"{summary.tokens:,}",
            format_cost(summary.cost),
            f"{summary.latency_p50:.2f}s",
            f"{summary.latency_p95:.2f}s",
        ]
        if report.differences:
            difference = differences.get(summary.configuration)
            cells.append(
                "baseline"
                if difference is None
                else "n/a"
                if math.isnan(difference.mean)
                else f"{difference.mean:+.3f} [{difference.low:+.3f}, {difference.high:+.3f}]"
            )
        table.add_row(*cells)
    console.print(table)
    if report.learning:
        learning = Table(title="learning: mean score of the first and the last quarter")
        for column in ("configuration", "cases per quarter", "first", "last", "change"):
            learning.add_column(column, justify="left" if column == "configuration" else "right")
        for curve in report.learning:
            learning.add_row(
                curve.configuration,
                str(curve.quarter),
                f"{curve.first:.3f}",
                f"{curve.last:.3f}",
                f"{curve.last - curve.first:+.3f}",
            )
        console.print(learning)
    if report.tags:
        tags = Table(title="by case tag")
        for column in ("configuration", "tag", "n", "score", "pass"):
            tags.add_column(column, justify="right" if column in ("n", "score", "pass") else "left")
        for tag in report.tags:
            tags.add_row(
                tag.configuration,
                tag.tag,
                str(tag.n),
                f"{tag.mean_score:.3f}",
                f"{tag.pass_rate:.0%}",
            )
        console.print(tags)
    notes: list[str] = []
    if report.judge_tokens or report.judge_cost is not None:
        notes.append(
            f"judge: {report.judge_tokens:,} tokens, cost {format_cost(report.judge_cost)}"
        )
    if report.resumed:
        notes.append(
            f"{report.resumed} cells taken from the results file (--fresh runs them again)"
        )
    if report.not_run:
        why = report.stopped or "interrupted"
        notes.append(f"{report.not_run} cells not run: {why}; run again to resume")
    if min_score is not None:
        below = report.below(min_score)
        notes.append(
            f"below --min-score {min_score:g}: {', '.join(below)}"
            if below
            else f"every configuration reached --min-score {min_score:g}"
        )
    for note in notes:
        console.print(note)


def format_cost(cost: float | None) -> str:
    if cost is None:
        return "n/a"
    return f"${cost:.4f}" if cost < 1 else f"${cost:,.2f}"
