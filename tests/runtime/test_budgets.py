"""Run budgets on model calls, tokens and wall time, independent of any provider."""

from __future__ import annotations

import time

import pytest

import agentscript
from agentscript.app.configuration import RunConfig
from agentscript.runtime.budgets import BudgetExceeded, RunBudget, RunMeter
from agentscript.runtime.ports import GenerateRequest, GenerateResponse
from agentscript.runtime.usage import Usage

LOOP = """
import llm M from "openai://m"
agent A {
  model M
  role "r"
  description "d"
  main func() {
    n = 0
    repeat * 5 {
      r = generate({ input: "step" }) -> { ok boolean }
      n += 1
    }
    return n
  }
}
"""


class SlowCountingModel:
    """Answers after a pause and reports a fixed usage, so budgets have something to count."""

    def __init__(self, pause: float = 0.0, tokens: int = 10) -> None:
        self.pause = pause
        self.tokens = tokens
        self.calls = 0

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        self.calls += 1
        time.sleep(self.pause)
        return GenerateResponse(value={"ok": True}, usage=Usage(self.tokens, self.tokens))


def run_loop(model: SlowCountingModel, **budget: float) -> agentscript.RunResult:
    return agentscript.run(agentscript.load_source(LOOP), {}, RunConfig(model=model, **budget))


def test_calls_budget_names_itself_and_keeps_the_trace_so_far() -> None:
    model = SlowCountingModel()
    with pytest.raises(BudgetExceeded) as caught:
        run_loop(model, max_calls=3)
    assert caught.value.budget == "calls"
    assert model.calls == 3
    assert [e["kind"] for e in caught.value.trace or []].count("generate") == 4  # 3 ok + 1 failed
    assert caught.value.trace is not None and caught.value.trace[-1]["data"]["ok"] is False


def test_tokens_budget_stops_once_exceeded() -> None:
    model = SlowCountingModel(tokens=10)
    with pytest.raises(BudgetExceeded) as caught:
        run_loop(model, max_tokens=50)
    assert caught.value.budget == "tokens"
    assert model.calls == 3
    assert "60 of 50 tokens used" in str(caught.value)


def test_seconds_budget_stops_a_slow_run() -> None:
    model = SlowCountingModel(pause=0.2)
    with pytest.raises(BudgetExceeded) as caught:
        run_loop(model, max_seconds=0.3)
    assert caught.value.budget == "seconds"
    assert model.calls < 5


def test_a_run_within_budget_reports_what_it_spent() -> None:
    result = run_loop(SlowCountingModel(tokens=4), max_calls=5, max_tokens=1000, max_seconds=60)
    assert result.value == 5
    assert result.usage["calls"] == 5
    assert result.usage["input_tokens"] == 20
    assert result.usage["output_tokens"] == 20


def test_budgets_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_calls must be a positive number"):
        RunBudget(max_calls=0)


def test_meter_refuses_a_call_when_no_tokens_are_left() -> None:
    meter = RunMeter(RunBudget(max_tokens=10))
    meter.before_model_call()
    meter.after_model_call(Usage(5, 5))
    with pytest.raises(BudgetExceeded, match="10 of 10 tokens used"):
        meter.before_model_call()


class BrokenModel:
    """A provider with a bug of its own: it raises a plain Python exception."""

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        raise KeyError("choices")


def test_a_provider_bug_becomes_a_located_error_with_the_trace() -> None:
    with pytest.raises(agentscript.ExecutionError) as caught:
        agentscript.run(agentscript.load_source(LOOP), {}, RunConfig(model=BrokenModel()))
    assert str(caught.value).startswith("LLM provider failed: 'choices' at 10:")
    assert caught.value.trace is not None
