"""Metrics, field paths, cases and the paired bootstrap."""

from __future__ import annotations

import pytest

from agentscript.app.evals.cases import Case, CaseError, cases_from
from agentscript.app.evals.metrics import FieldPath, MetricError, builtin_metric
from agentscript.app.evals.stats import paired_difference, percentile
from agentscript.providers.llm.prices import model_cost


def score(metric: str, expected: object, value: object, tolerance: float | None = None) -> float:
    return builtin_metric(metric, tolerance).compare(expected, value).score  # type: ignore[attr-defined,no-any-return]


@pytest.mark.parametrize(
    ("metric", "expected", "value", "wanted"),
    [
        ("exact", {"a": 1, "b": [1, 2]}, {"b": [1.0, 2], "a": 1.0}, 1.0),
        ("exact", {"a": 1}, '{"a": 1}', 1.0),
        ("exact", "billing", " billing\n", 1.0),
        ("exact", "billing", "Billing", 0.0),
        ("exact", 1, True, 0.0),
        ("contains", "Paris", "The capital is Paris.", 1.0),
        ("contains", ["Paris", "France"], "Paris, Texas", 0.5),
        ("regex", r"^\d{3}-\d{4}$", "555-1234", 1.0),
        ("regex", r"^\d{3}$", "5555", 0.0),
        ("number", 100, 100.0, 1.0),
        ("number", 100, "100", 1.0),
        ("number", 100, "a hundred", 0.0),
        ("json", {"name": "Ada", "tags": ["x"]}, {"name": "Ada", "tags": ["x"], "age": 36}, 1.0),
        ("json", {"name": "Ada", "born": 1815}, {"name": "Ada"}, 0.5),
        ("json", {"items": [{"n": 1}, {"n": 2}]}, {"items": [{"n": 1}]}, 0.0),
    ],
)
def test_builtin_metrics(metric: str, expected: object, value: object, wanted: float) -> None:
    assert score(metric, expected, value) == wanted


def test_number_tolerance_is_relative() -> None:
    assert score("number", 200, 209, tolerance=0.05) == 1.0
    assert score("number", 200, 211, tolerance=0.05) == 0.0
    assert score("number", 0, 0.01, tolerance=0.05) == 1.0
    with pytest.raises(MetricError, match="needs a number as expected"):
        builtin_metric("number").validate([Case("a", {}, "many")])


def test_a_bad_pattern_is_refused_before_the_eval_runs() -> None:
    with pytest.raises(MetricError, match=r"Case a: invalid pattern '\('"):
        builtin_metric("regex").validate([Case("a", {}, "(")])


def test_field_paths() -> None:
    value = {"items": [{"name": "x"}, {"name": "y"}], "label": "bug"}
    assert FieldPath.parse("label").pick(value) == "bug"
    assert FieldPath.parse("items[1].name").pick(value) == "y"
    with pytest.raises(MetricError, match=r"no \[5\] for --field items\[5\]"):
        FieldPath.parse("items[5]").pick(value)
    with pytest.raises(MetricError, match="no field 'size'"):
        FieldPath.parse("size").pick(value)
    with pytest.raises(MetricError, match="at character 3"):
        FieldPath.parse("a..b")


def test_case_ids_are_stable_digests_unless_given() -> None:
    first = cases_from(
        [{"input": {"q": 1}, "expected": 2}, {"id": "mine", "input": {}, "expected": None}]
    )
    again = cases_from(
        [{"id": "other", "input": {}, "expected": 0}, {"input": {"q": 1}, "expected": 2}]
    )
    assert first[0].id == again[1].id and first[0].id.startswith("case-")
    assert first[1].id == "mine"
    with pytest.raises(CaseError, match="duplicate case id 'mine'"):
        cases_from([{"id": "mine", "input": {}, "expected": 1}] * 2)
    with pytest.raises(CaseError, match="unknown field 'expect'"):
        cases_from([{"input": {}, "expect": 1}])


def test_paired_bootstrap_interval() -> None:
    cases = [f"c{i}" for i in range(30)]
    baseline = dict.fromkeys(cases, 0.0)
    better = {case: 1.0 if i % 3 else 0.0 for i, case in enumerate(cases)}
    clear = paired_difference("b", "a", better, baseline)
    assert clear.mean == pytest.approx(20 / 30) and 0 < clear.low < clear.mean < clear.high <= 1
    noisy = {case: (1.0 if i % 2 else -1.0) for i, case in enumerate(cases)}
    noise = paired_difference(
        "b", "a", {c: 0.5 + v / 2 for c, v in noisy.items()}, dict.fromkeys(cases, 0.5)
    )
    assert noise.low < 0 < noise.high
    # The same results always give the same interval.
    assert paired_difference("b", "a", better, baseline) == clear
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5


def test_prices_from_genai_prices_offline() -> None:
    assert model_cost("openai://gpt-4.1-mini", 1_000_000, 0) == pytest.approx(0.4)
    assert model_cost("anthropic://claude-sonnet-4-5", 0, 1_000_000) == pytest.approx(15)
    assert model_cost("ollama://llama3.1", 1000, 1000) is None
    assert model_cost("openai://no-such-model", 1000, 1000) is None
    assert model_cost(None, 1, 1) is None


def test_a_difference_over_no_shared_case_is_null_in_json() -> None:
    empty = paired_difference("b", "a", {"x": 1.0}, {"y": 0.0})
    assert empty.n == 0
    assert empty.to_json() == {
        "configuration": "b", "baseline": "a", "n": 0, "mean": None, "low": None, "high": None
    }  # fmt: skip
