"""Metrics: how an answer is scored against a case's expected value, in [0, 1].

Built in: `exact` (equal after JSON normalisation), `contains` (the text contains the expected
text, or each of a list of them), `regex` (the expected pattern matches the text), `number`
(within a relative tolerance), `json` (every expected field equal, extra fields allowed). A
judge is an AgentScript program (see `judge.py`); a Python callable works as a metric too.
`--field` picks a part of the value before any metric sees it.
"""

from __future__ import annotations

import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agentscript.app.evals.cases import Case
from agentscript.runtime.errors import AgentScriptError

BUILTIN_METRICS = ("exact", "contains", "regex", "number", "json")


class MetricError(AgentScriptError):
    """A metric that cannot be used as given (a bad pattern, a bad field path, …)."""


@dataclass(frozen=True, slots=True)
class Score:
    """A metric's verdict. A judge's score also names the judge's own run and what it spent."""

    score: float
    reason: str = ""
    run_id: str | None = None
    usage: dict[str, float | int] = field(default_factory=dict)


# Runs a judge program on one input and returns its value, run id and usage; the runner builds
# it for each cell, so the judge answers with the cell's model choice and budgets.
JudgeRun = Callable[[Any], tuple[Any, str | None, dict[str, float | int]]]


@runtime_checkable
class Metric(Protocol):
    name: str

    def score(self, case: Case, value: Any, judge_run: JudgeRun) -> Score: ...

    def validate(self, cases: list[Case]) -> None:
        """Refuse, before anything runs, expected values this metric cannot use."""


def as_text(value: Any) -> str:
    """A value as text: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def normalise(value: Any) -> Any:
    """JSON normalisation: whole floats become ints, strings are trimmed, and a string holding
    a JSON object or list is parsed, so `"{\\"a\\": 1}"` equals `{"a": 1.0}`."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in "[{":
            try:
                return normalise(json.loads(text))
            except json.JSONDecodeError:
                return text
        return text
    if isinstance(value, dict):
        return {str(key): normalise(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [normalise(item) for item in value]
    return value


def _canonical(value: Any) -> str:
    return json.dumps(normalise(value), sort_keys=True, ensure_ascii=False)


class _Builtin(ABC):
    name = "builtin"

    def validate(self, cases: list[Case]) -> None:
        return None

    def score(self, case: Case, value: Any, judge_run: JudgeRun) -> Score:
        return self.compare(case.expected, value)

    @abstractmethod
    def compare(self, expected: Any, value: Any) -> Score:
        """The score of `value` against `expected`."""


class ExactMetric(_Builtin):
    name = "exact"

    def compare(self, expected: Any, value: Any) -> Score:
        # Compared as canonical JSON text, so true is not 1 (as it would be in Python).
        if _canonical(expected) == _canonical(value):
            return Score(1.0, "equal")
        return Score(0.0, f"expected {as_text(expected)}, got {as_text(value)}")


class ContainsMetric(_Builtin):
    """The fraction of the expected texts (one, or a list) found in the value's text."""

    name = "contains"

    def compare(self, expected: Any, value: Any) -> Score:
        wanted = [
            as_text(item) for item in (expected if isinstance(expected, list) else [expected])
        ]
        text = as_text(value)
        missing = [item for item in wanted if item not in text]
        if not wanted:
            return Score(1.0, "nothing expected")
        score = 1.0 - len(missing) / len(wanted)
        reason = "contains every expected text" if not missing else f"missing {missing!r}"
        return Score(score, reason)


class RegexMetric(_Builtin):
    name = "regex"

    def validate(self, cases: list[Case]) -> None:
        for case in cases:
            if not isinstance(case.expected, str):
                raise MetricError(f"Case {case.id}: --metric regex needs a pattern as expected")
            try:
                re.compile(case.expected)
            except re.error as problem:
                raise MetricError(
                    f"Case {case.id}: invalid pattern {case.expected!r}: {problem}"
                ) from None

    def compare(self, expected: Any, value: Any) -> Score:
        if re.search(str(expected), as_text(value)):
            return Score(1.0, f"matches {expected}")
        return Score(0.0, f"{as_text(value)!r} does not match {expected}")


class NumberMetric(_Builtin):
    """1 when |value − expected| ≤ tolerance × |expected| (≤ tolerance when expected is 0)."""

    name = "number"

    def __init__(self, tolerance: float = 1e-9) -> None:
        if not tolerance >= 0:
            raise MetricError(f"--tolerance must be a number ≥ 0, got {tolerance}")
        self.tolerance = tolerance

    def validate(self, cases: list[Case]) -> None:
        for case in cases:
            if _number(case.expected) is None:
                raise MetricError(
                    f"Case {case.id}: --metric number needs a number as expected, "
                    f"got {as_text(case.expected)}"
                )

    def compare(self, expected: Any, value: Any) -> Score:
        wanted = _number(expected)
        got = _number(value)
        if wanted is None or got is None:
            return Score(0.0, f"not a number: {as_text(value)}")
        allowed = self.tolerance * abs(wanted) if wanted else self.tolerance
        if abs(got - wanted) <= allowed:
            return Score(1.0, f"{got:g} is within {self.tolerance:g} of {wanted:g}")
        return Score(0.0, f"{got:g} is not within {self.tolerance:g} of {wanted:g}")


class JsonMetric(_Builtin):
    """The fraction of the expected leaf fields the value has with equal values; lists must
    have the same length and are compared item by item. Extra fields are allowed."""

    name = "json"

    def compare(self, expected: Any, value: Any) -> Score:
        mismatches: list[str] = []
        total = _subset(normalise(expected), normalise(value), "", mismatches)
        if total == 0:
            return Score(1.0, "nothing expected")
        score = 1.0 - len(mismatches) / total
        if not mismatches:
            return Score(score, "every expected field equal")
        shown = ", ".join(mismatches[:5]) + (" …" if len(mismatches) > 5 else "")
        return Score(score, f"differs at {shown}")


def _subset(expected: Any, value: Any, path: str, mismatches: list[str]) -> int:
    """Count the expected leaves under `path`, appending each that `value` gets wrong."""
    if isinstance(expected, dict):
        total = 0
        for key, item in expected.items():
            inner = value.get(key) if isinstance(value, dict) else None
            if isinstance(value, dict) and key not in value:
                leaves = max(1, _subset(item, None, f"{path}.{key}", []))
                mismatches.extend([f"{path}.{key}".lstrip(".") + " (missing)"] * leaves)
                total += leaves
            else:
                total += _subset(item, inner, f"{path}.{key}", mismatches)
        return total
    if isinstance(expected, list):
        if not isinstance(value, list) or len(value) != len(expected):
            mismatches.append((path.lstrip(".") or "value") + " (list length)")
            return 1
        return sum(
            _subset(item, other, f"{path}[{index}]", mismatches)
            for index, (item, other) in enumerate(zip(expected, value, strict=True))
        )
    if _canonical(expected) != _canonical(value):
        mismatches.append(path.lstrip(".") or "value")
    return 1


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


class CallableMetric:
    """A Python function `(case, value) -> float | bool | Score` used as a metric."""

    def __init__(self, function: Callable[[Case, Any], float | bool | Score]) -> None:
        self.function = function
        self.name = getattr(function, "__name__", "custom")

    def validate(self, cases: list[Case]) -> None:
        return None

    def score(self, case: Case, value: Any, judge_run: JudgeRun) -> Score:
        result = self.function(case, value)
        if isinstance(result, Score):
            return result
        if isinstance(result, bool | int | float):
            return Score(float(result))
        raise MetricError(
            f"Metric {self.name} returned {type(result).__name__}; return a number or a Score"
        )


def builtin_metric(name: str, tolerance: float | None = None) -> Metric:
    """The built-in metric called `name` (MetricError for any other name)."""
    if name == "exact":
        return ExactMetric()
    if name == "contains":
        return ContainsMetric()
    if name == "regex":
        return RegexMetric()
    if name == "number":
        return NumberMetric(1e-9 if tolerance is None else tolerance)
    if name == "json":
        return JsonMetric()
    raise MetricError(
        f"Unknown metric {name!r}: use {', '.join(BUILTIN_METRICS)} or a judge program (.as)"
    )


# ---------------------------------------------------------------- field paths

_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


@dataclass(frozen=True, slots=True)
class FieldPath:
    """A path into a value, such as `label` or `items[0].name`."""

    text: str
    steps: tuple[str | int, ...]

    @classmethod
    def parse(cls, text: str) -> FieldPath:
        steps: list[str | int] = []
        position = 0
        while position < len(text):
            if steps and text[position] == ".":
                position += 1
            match = _SEGMENT.match(text, position)
            if match is None:
                raise MetricError(
                    f"Invalid --field {text!r} at character {position + 1} "
                    "(write a path like label or items[0].name)"
                )
            name, index = match.groups()
            steps.append(int(index) if index is not None else name)
            position = match.end()
        if not steps:
            raise MetricError("--field needs a path like label or items[0].name")
        return cls(text, tuple(steps))

    def pick(self, value: Any) -> Any:
        """The part of `value` at this path; MetricError naming the first step not there."""
        current = value
        for step in self.steps:
            if isinstance(step, int):
                if not isinstance(current, list) or step >= len(current):
                    raise MetricError(f"the value has no [{step}] for --field {self.text}")
                current = current[step]
            else:
                if not isinstance(current, dict) or step not in current:
                    raise MetricError(f"the value has no field {step!r} for --field {self.text}")
                current = current[step]
        return current
