"""Run budgets: hard limits on model calls, tokens and wall time for one run, and the meter.

The meter counts every model call and the tokens each one reported. A limit is checked before
each model call (calls, tokens, time), after each call (tokens) and at every loop iteration and
function call (time). Exceeding one raises BudgetExceeded naming the budget; it is never
repaired or retried, and the run's trace up to that point is kept on the error.

A tool call is bounded too: it receives a CallDeadline (when the run's time ends, and an event
set when the run is interrupted), caps every wait it makes by `seconds_left` and calls `check`
between steps, so neither `--max-seconds` nor Ctrl-C waits for a slow tool to finish.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.usage import Usage


class BudgetExceeded(ExecutionError):
    """A run budget was exhausted; `budget` is its name: "tokens", "calls" or "seconds"."""

    def __init__(self, budget: str, message: str) -> None:
        super().__init__(message)
        self.budget = budget


class Interrupted(ExecutionError):
    """The run was interrupted (Ctrl-C) while a tool was working; the tool stopped."""


def seconds_exceeded(limit: float) -> BudgetExceeded:
    return BudgetExceeded(
        "seconds", f"Run budget exceeded: more than {limit:g} seconds (--max-seconds)"
    )


@dataclass(frozen=True, slots=True)
class CallDeadline:
    """How long one tool call may take: until `at` (time.monotonic(); None: no run limit) and
    only while `stopped` is not set. `max_seconds` is the run budget, for the message."""

    at: float | None = None
    max_seconds: float | None = None
    stopped: threading.Event = field(default_factory=threading.Event)

    def seconds_left(self, cap: float) -> float:
        """`cap` seconds, or less when the run ends sooner; never negative."""
        if self.at is None:
            return cap
        return max(0.0, min(cap, self.at - time.monotonic()))

    def binds(self, cap: float) -> bool:
        """Whether the run's end, not `cap`, is what limits a wait starting now."""
        return self.at is not None and self.at - time.monotonic() < cap

    def check(self) -> None:
        """Raise Interrupted after Ctrl-C, BudgetExceeded once the run's time is up."""
        if self.stopped.is_set():
            raise Interrupted("Interrupted while the tool was running")
        if self.at is not None and time.monotonic() > self.at:
            raise self.exceeded()

    def exceeded(self) -> BudgetExceeded:
        return seconds_exceeded(self.max_seconds if self.max_seconds is not None else 0.0)


@dataclass(slots=True)
class RunBudget:
    """Limits for one run; None means unlimited."""

    max_tokens: int | None = None
    max_calls: int | None = None
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_tokens", "max_calls", "max_seconds"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be a positive number, got {value}")


@dataclass(slots=True)
class RunMeter:
    """Counts what a run spends and enforces its RunBudget. Safe to share between threads."""

    budget: RunBudget = field(default_factory=RunBudget)
    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    started: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def remaining_seconds(self) -> float | None:
        if self.budget.max_seconds is None:
            return None
        return max(0.0, self.budget.max_seconds - self.elapsed)

    def check_time(self) -> None:
        limit = self.budget.max_seconds
        if limit is not None and self.elapsed > limit:
            raise seconds_exceeded(limit)

    def call_deadline(self, stopped: threading.Event) -> CallDeadline:
        """The deadline of a tool call starting now: the run's end, and its interrupt."""
        limit = self.budget.max_seconds
        at = self.started + limit if limit is not None else None
        return CallDeadline(at, limit, stopped)

    def before_model_call(self) -> None:
        self.check_time()
        with self._lock:
            max_calls = self.budget.max_calls
            if max_calls is not None and self.calls >= max_calls:
                raise BudgetExceeded(
                    "calls", f"Run budget exceeded: {max_calls} model calls used (--max-calls)"
                )
            max_tokens = self.budget.max_tokens
            if max_tokens is not None and self.usage.total >= max_tokens:
                raise self._tokens_exceeded(max_tokens)
            self.calls += 1

    def not_a_model_call(self) -> None:
        """Take back the call `before_model_call` counted: it was answered from a recording."""
        with self._lock:
            self.calls -= 1

    def after_model_call(self, usage: Usage | None) -> None:
        with self._lock:
            self.usage.add(usage)
            max_tokens = self.budget.max_tokens
            if max_tokens is not None and self.usage.total > max_tokens:
                raise self._tokens_exceeded(max_tokens)

    def _tokens_exceeded(self, max_tokens: int) -> BudgetExceeded:
        return BudgetExceeded(
            "tokens",
            f"Run budget exceeded: {self.usage.total} of {max_tokens} tokens used (--max-tokens)",
        )

    def summary(self) -> dict[str, float | int]:
        return {
            "calls": self.calls,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "seconds": round(self.elapsed, 3),
        }
