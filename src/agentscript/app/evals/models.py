"""The model each cell of an eval talks to: the program's own or a `--model`, a mock, a
recording or a replay, always behind the eval's meter, which enforces the budgets of the whole
eval (every cell and every judge run share it) and prices each call.

Cassettes live in `DIR/<configuration>/<case id>.jsonl` (the judge's in `….judge.jsonl`), one
file per cell, so cells recorded at any concurrency replay in any order. An eval can also
replay the journaled runs of an earlier one, named by its results file (the runner does that:
such a replay answers tools too, and makes no model call to meter).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping, MutableSequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agentscript.runtime.bounded_input import USER_FILE_LIMIT, UnusableInput, read_regular_text
from agentscript.runtime.budgets import BudgetExceeded
from agentscript.runtime.context import PromptLayout
from agentscript.runtime.errors import LoadError, ModelOutputError
from agentscript.runtime.generate import prompt_layout_of
from agentscript.runtime.jsjson import parse
from agentscript.runtime.ports import GenerateRequest, GenerateResponse, LlmProvider
from agentscript.runtime.usage import Usage
from agentscript.runtime.values import LlmBinding


class EvalBudgetExceeded(BudgetExceeded):
    """The budget of the whole eval is spent: no further model call is made."""


class EvalMeter:
    """Counts the model calls and tokens of a whole eval against its budget. Thread-safe; made
    `shared`, also across the eval's worker processes forked after it (agentscript.app.evals.
    workers): the counts live in shared memory behind a process lock, so every model call of
    every worker is checked against the same budget, as every thread's is."""

    def __init__(
        self, max_tokens: int | None = None, max_calls: int | None = None, shared: bool = False
    ) -> None:
        self.max_tokens = max_tokens
        self.max_calls = max_calls
        self._started = time.monotonic()
        self._counts: MutableSequence[int]
        self._lock: AbstractContextManager[Any]
        self.exhausted: threading.Event | EventLike
        if shared:
            from agentscript.app.evals.workers import worker_context

            context = worker_context()
            # Model calls, input tokens, output tokens.
            self._counts = context.RawArray("q", 3)
            self._lock = context.Lock()
            self.exhausted = context.Event()
        else:
            self._counts = [0, 0, 0]
            self._lock = threading.Lock()
            self.exhausted = threading.Event()

    def before_call(self) -> None:
        with self._lock:
            calls, tokens = self._counts[0], self._counts[1] + self._counts[2]
            if self.max_calls is not None and calls >= self.max_calls:
                problem = EvalBudgetExceeded(
                    "calls",
                    f"Eval budget exceeded: {self.max_calls} model calls used (--max-calls)",
                )
            elif self.max_tokens is not None and tokens >= self.max_tokens:
                problem = self._tokens_exceeded(tokens)
            else:
                self._counts[0] = calls + 1
                return
        self.exhausted.set()
        raise problem

    def after_call(self, usage: Usage | None) -> None:
        if usage is None:
            return
        with self._lock:
            self._counts[1] += usage.input_tokens
            self._counts[2] += usage.output_tokens
            spent = self._counts[1] + self._counts[2]
        if self.max_tokens is not None and spent > self.max_tokens:
            # The call is done and paid for: its answer is used, the next call is refused.
            self.exhausted.set()

    def after_run(self, spent: Mapping[str, float | int]) -> None:
        """A whole run made elsewhere (a queue's worker): its calls and tokens, counted when
        it comes back."""
        with self._lock:
            self._counts[0] += int(spent.get("calls", 0))
            calls = self._counts[0]
        self.after_call(
            Usage(int(spent.get("input_tokens", 0)), int(spent.get("output_tokens", 0)))
        )
        if self.max_calls is not None and calls >= self.max_calls:
            self.exhausted.set()

    def _tokens_exceeded(self, tokens: int) -> EvalBudgetExceeded:
        return EvalBudgetExceeded(
            "tokens",
            f"Eval budget exceeded: {tokens} of {self.max_tokens} tokens used (--max-tokens)",
        )

    @property
    def summary(self) -> dict[str, float | int]:
        with self._lock:
            calls, input_tokens, output_tokens = self._counts[0], self._counts[1], self._counts[2]
        return {
            "calls": calls,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "seconds": round(time.monotonic() - self._started, 3),
        }


class EventLike(Protocol):
    """A threading.Event or a multiprocessing one."""

    def is_set(self) -> bool: ...

    def set(self) -> None: ...


class CellModel:
    """One cell's provider: the inner model, metered and priced. `cost` is None while any
    call's price is unknown (or the model is a mock). A `--model` reaches it already in the
    request (agentscript.app.model_choice rewrites the program's imports), and it lets the
    inner model choose the prompt layout, so a cell sends the prompt `agentscript run` sends."""

    def __init__(self, inner: LlmProvider, meter: EvalMeter, priced: bool) -> None:
        self._inner = inner
        self._meter = meter
        self._priced = priced
        self._lock = threading.Lock()
        self.cost: float | None = 0.0 if priced else None

    def prompt_layout(self, model: LlmBinding | None) -> PromptLayout:
        return prompt_layout_of(self._inner, model)

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        self._meter.before_call()
        try:
            response = self._inner.generate(request)
        except ModelOutputError as error:
            self._account(request, error.usage)
            raise
        self._account(request, response.usage)
        return response

    def _account(self, request: GenerateRequest, usage: Usage | None) -> None:
        self._meter.after_call(usage)
        if not self._priced:
            return
        from agentscript.providers.llm.prices import model_cost

        uri = request.model.uri if request.model else None
        tokens_in = usage.input_tokens if usage else 0
        tokens_out = usage.output_tokens if usage else 0
        price = model_cost(uri, tokens_in, tokens_out)
        with self._lock:
            self.cost = None if price is None or self.cost is None else self.cost + price


@dataclass(frozen=True, slots=True)
class ModelSource:
    """Where the eval's answers come from: "real" (the router), "mock" (shape defaults, or a
    scripted-answers file) — recorded to, or replayed from, a cassette folder."""

    kind: str = "real"
    responses: Path | None = None
    record: Path | None = None
    replay: Path | None = None

    def __post_init__(self) -> None:
        if self.record is not None and self.replay is not None:
            raise LoadError("Use either --record or --replay, not both")
        if self.replay is not None and not self.replay.exists():
            raise LoadError(
                f"Replay {self.replay} does not exist (a cassette folder, or the results "
                "file of an earlier eval)"
            )

    @property
    def replays_runs(self) -> bool:
        """Replaying the journaled runs named by an earlier eval's results file, not a
        cassette folder."""
        return self.replay is not None and not self.replay.is_dir()


def cassette(folder: Path, configuration_slug: str, case_id: str, judge: bool) -> Path:
    name = re.sub(r"[^A-Za-z0-9._=-]+", "_", case_id) or "case"
    return folder / configuration_slug / (name + (".judge.jsonl" if judge else ".jsonl"))


class MockScripts:
    """Scripted answers for an eval. The file is either one run's script (every case runs
    with a fresh copy of it) or `{"cases": {"<case id>": <script>, "*": <script>}}`, a script
    per case (`*` for the cases not listed). A script is what `run --mock FILE` takes."""

    def __init__(self, path: Path) -> None:
        try:
            data = parse(read_regular_text(path, USER_FILE_LIMIT, "Scripted responses"))
        except UnusableInput as problem:
            raise LoadError(str(problem)) from None
        except ValueError as problem:
            raise LoadError(f"Scripted responses {path} are not valid JSON: {problem}") from None
        self._path = path
        per_case = isinstance(data, dict) and set(data) == {"cases"}
        if per_case and not isinstance(data["cases"], Mapping):
            raise LoadError(f"Scripted responses {path}: 'cases' must map case ids to scripts")
        self._cases: Mapping[str, Any] | None = data["cases"] if per_case else None
        self._shared = None if per_case else data

    def for_case(self, case_id: str) -> LlmProvider:
        from agentscript.providers.llm.mock import ScriptedLlm

        if self._cases is None:
            return ScriptedLlm(self._shared, str(self._path))
        script = self._cases.get(case_id, self._cases.get("*"))
        if script is None:
            raise LoadError(
                f"Scripted responses {self._path} have no script for case {case_id!r} (add it "
                'under "cases", or a "*" script for every case not listed)'
            )
        return ScriptedLlm(script, f"{self._path} case {case_id}")
