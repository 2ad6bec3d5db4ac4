"""An AgentScript program as the metric (LLM as judge).

The judge's main function takes `{input, expected, value}` and returns `{score: number,
reason: string}` with the score in [0, 1]. It runs like any program — journaled, within the
eval's budgets, answering with the cell's model choice (or `--judge-model`) — so a judge's
calls are audited like the agent's own.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from agentscript.app.evals.cases import Case
from agentscript.app.evals.metrics import JudgeRun, MetricError, Score, as_text
from agentscript.lang import ast


class JudgeMetric:
    def __init__(self, program: ast.Program) -> None:
        self.program = program
        self.name = Path(program.source_path).name if program.source_path else "judge"

    @classmethod
    def load(cls, path: str | Path) -> JudgeMetric:
        import agentscript

        program = agentscript.load(path)
        errors = [d for d in agentscript.check(program) if d.severity == "error"]
        if errors:
            raise MetricError(f"Judge {path}: {errors[0].format()}")
        return cls(program)

    def validate(self, cases: list[Case]) -> None:
        return None

    def score(self, case: Case, value: Any, judge_run: JudgeRun) -> Score:
        verdict, run_id, usage = judge_run(
            {"input": case.input, "expected": case.expected, "value": value}
        )
        if not isinstance(verdict, dict):
            raise MetricError(
                f"Judge {self.name} returned {as_text(verdict)}; it must return "
                "{score: number, reason: string}"
            )
        score = verdict.get("score")
        if (
            isinstance(score, bool)
            or not isinstance(score, int | float)
            or not math.isfinite(score)
        ):
            raise MetricError(f"Judge {self.name} returned score {as_text(score)}: not a number")
        if not 0 <= score <= 1:
            raise MetricError(f"Judge {self.name} returned score {score:g}: it must be in [0, 1]")
        reason = verdict.get("reason")
        return Score(float(score), as_text(reason) if reason is not None else "", run_id, usage)
