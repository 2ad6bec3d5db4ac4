"""Limits every worker of a queue shares: requests and tokens per period per provider (the
limits LLM APIs impose), and model calls in flight per model or provider.

Each worker process sends its own requests, so a limit counted in one process would be
exceeded by the sum of them all. The counts live in the queue's own database instead (SQLite
file or PostgreSQL, beside DBOS's tables): a worker records each model call as it starts
(`agentscript_requests`) and its tokens when the answer comes, and before a call it looks, in
a transaction no other worker runs beside, whether the call fits every limit; when it does
not, the worker waits until the oldest counted call leaves the period and asks again. The limits
themselves are stored there too (`agentscript_limits`), so every worker applies the same ones:
a worker started with limit options replaces them, one started without keeps them.

Tokens are counted when an answer comes (nobody knows them before), so the calls in flight
together may pass a token limit by what they spend; requests and concurrency are never passed.
The number of runs in progress over all workers is DBOS's own (`global_concurrency` of the
queue), not counted here.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentscript.app.errors import AppError
from agentscript.app.queue.database import QueueDatabase
from agentscript.runtime.context import PromptLayout
from agentscript.runtime.errors import ModelOutputError
from agentscript.runtime.generate import prompt_layout_of
from agentscript.runtime.ports import GenerateRequest, GenerateResponse, LlmProvider
from agentscript.runtime.values import LlmBinding

REQUESTS = "requests"
TOKENS = "tokens"
CONCURRENCY = "concurrency"
# How long a worker keeps the limits it read before reading them again.
REFRESH_SECONDS = 2.0
# The longest single sleep of a waiting call: it asks again after this at the latest.
MAX_SLEEP_SECONDS = 1.0
# A call over a concurrency limit asks again after this.
CONCURRENCY_POLL_SECONDS = 0.05

_PERIODS = {"s": 1.0, "sec": 1.0, "min": 60.0, "m": 60.0, "h": 3600.0}
_RATE = re.compile(
    r"^(?P<subject>[^=]+)=(?P<amount>\d+)(?:/(?P<count>\d*\.?\d+)?(?P<unit>[a-z]+))?$"
)

_TABLES = (
    "CREATE TABLE IF NOT EXISTS agentscript_limits (kind TEXT NOT NULL, subject TEXT NOT NULL, "
    "amount INTEGER NOT NULL, period DOUBLE PRECISION NOT NULL, PRIMARY KEY (kind, subject))",
    "CREATE TABLE IF NOT EXISTS agentscript_requests (id {serial} PRIMARY KEY, "
    "worker TEXT NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL, "
    "started_at DOUBLE PRECISION NOT NULL, finished_at DOUBLE PRECISION, "
    "tokens INTEGER NOT NULL DEFAULT 0)",
    "CREATE INDEX IF NOT EXISTS agentscript_requests_started ON agentscript_requests (started_at)",
)


@dataclass(frozen=True, slots=True)
class Limit:
    """`amount` of `kind` for `subject` (a provider such as `openai`, or a model URI such as
    `openai://gpt-4o`) in every `period` seconds (a concurrency has no period)."""

    kind: str
    subject: str
    amount: int
    period: float = 0.0

    def applies(self, provider: str, model: str) -> bool:
        return self.subject in (provider, model)

    @property
    def column(self) -> str:
        return "model" if "://" in self.subject else "provider"

    def describe(self) -> str:
        if self.kind == CONCURRENCY:
            return f"{self.subject}: {self.amount} calls at once"
        return f"{self.subject}: {self.amount} {self.kind} per {self.period:g}s"


def parse_rate(kind: str, text: str) -> Limit:
    """`openai=500/min`, `openai=5/2s`, `openai=90000` (per minute): a clear error otherwise."""
    match = _RATE.match(text.strip())
    unit = match.group("unit") if match else None
    if match is None or (unit is not None and unit not in _PERIODS):
        raise AppError(
            f"--{kind} {text!r}: give PROVIDER=N or PROVIDER=N/PERIOD, the period as min, s, h "
            f"or a number of them (openai=500/min, openai=5/2s)"
        )
    count = float(match.group("count") or 1)
    period = count * _PERIODS[unit] if unit is not None else 60.0
    if period <= 0:
        raise AppError(f"--{kind} {text!r}: the period must be longer than 0")
    return Limit(kind, match.group("subject").strip(), int(match.group("amount")), period)


def parse_concurrency(text: str) -> Limit:
    """`openai://gpt-4o=4` or `openai=8`: calls in flight at once over all workers."""
    subject, _, amount = text.rpartition("=")
    if not subject or not amount.isdigit() or int(amount) < 1:
        raise AppError(
            f"--model-concurrency {text!r}: give MODEL=N or PROVIDER=N with N at least 1 "
            "(openai://gpt-4o=4, openai=8)"
        )
    return Limit(CONCURRENCY, subject.strip(), int(amount))


@dataclass(frozen=True, slots=True)
class Ticket:
    """A model call counted against the limits; None when no limit applies to it."""

    row: int | None


class SharedLimits:
    """The limits and their counters in the queue's database, for one worker process."""

    def __init__(self, database: QueueDatabase, worker: str) -> None:
        self._database = database
        self._worker = worker
        serial = "INTEGER" if database.sqlite else "BIGSERIAL"
        for statement in _TABLES:
            database.execute(statement.format(serial=serial))
        self._limits: list[Limit] = []
        self._read_at = float("-inf")
        self._lock = threading.Lock()

    def publish(self, limits: Sequence[Limit]) -> None:
        """Make `limits` the ones every worker applies (replacing those stored before)."""
        with self._database.exclusive():
            self._database.execute("DELETE FROM agentscript_limits")
            for limit in limits:
                self._database.execute(
                    "INSERT INTO agentscript_limits (kind, subject, amount, period) "
                    "VALUES (?, ?, ?, ?)",
                    (limit.kind, limit.subject, limit.amount, limit.period),
                )
        self._read_at = float("-inf")

    def current(self) -> list[Limit]:
        """The stored limits, read again every REFRESH_SECONDS (another worker may set new
        ones); finished calls too old to count for any limit are forgotten then."""
        with self._lock:
            now = time.monotonic()
            if now - self._read_at >= REFRESH_SECONDS:
                rows = self._database.execute(
                    "SELECT kind, subject, amount, period FROM agentscript_limits"
                )
                self._limits = [Limit(str(k), str(s), int(a), float(p)) for k, s, a, p in rows]
                self._read_at = now
                longest = max((limit.period for limit in self._limits), default=0.0)
                self._database.execute(
                    "DELETE FROM agentscript_requests WHERE finished_at < ?",
                    (time.time() - longest - 60,),
                )
            return self._limits

    def acquire(self, provider: str, model: str) -> Ticket | tuple[float, Limit]:
        """Count a call now, or say how long to wait (and for which limit) before asking
        again."""
        applicable = [limit for limit in self.current() if limit.applies(provider, model)]
        if not applicable:
            return Ticket(None)
        with self._database.exclusive():
            now = time.time()
            waits = [(self._wait(limit, now), limit) for limit in applicable]
            longest = max(waits, key=lambda pair: pair[0])
            if longest[0] > 0:
                return longest
            rows = self._database.execute(
                "INSERT INTO agentscript_requests (worker, provider, model, started_at) "
                "VALUES (?, ?, ?, ?) RETURNING id",
                (self._worker, provider, model, now),
            )
        return Ticket(int(rows[0][0]))

    def release(self, ticket: Ticket, tokens: int) -> None:
        if ticket.row is not None:
            self._database.execute(
                "UPDATE agentscript_requests SET finished_at = ?, tokens = ? WHERE id = ?",
                (time.time(), tokens, ticket.row),
            )

    def forget_worker(self, worker: str) -> None:
        """A dead worker's calls in flight end now: they no longer hold a concurrency slot."""
        self._database.execute(
            "UPDATE agentscript_requests SET finished_at = ? "
            "WHERE worker = ? AND finished_at IS NULL",
            (time.time(), worker),
        )

    def _wait(self, limit: Limit, now: float) -> float:
        """Seconds until a call fits `limit`, 0 when it fits now."""
        where = f"{limit.column} = ?"
        if limit.kind == CONCURRENCY:
            rows = self._database.execute(
                f"SELECT count(*) FROM agentscript_requests WHERE {where} AND finished_at IS NULL",
                (limit.subject,),
            )
            return CONCURRENCY_POLL_SECONDS if int(rows[0][0]) >= limit.amount else 0.0
        if limit.kind == REQUESTS:
            rows = self._database.execute(
                f"SELECT started_at FROM agentscript_requests WHERE {where} AND started_at > ? "
                "ORDER BY started_at DESC",
                (limit.subject, now - limit.period),
            )
            if len(rows) < limit.amount:
                return 0.0
            # The call that must leave the period for one more to fit.
            return float(rows[limit.amount - 1][0]) + limit.period - now
        rows = self._database.execute(
            f"SELECT finished_at, tokens FROM agentscript_requests WHERE {where} "
            "AND finished_at > ? ORDER BY finished_at DESC",
            (limit.subject, now - limit.period),
        )
        spent = 0
        for finished_at, tokens in rows:
            spent += int(tokens)
            if spent >= limit.amount:
                return float(finished_at) + limit.period - now
        return 0.0


# Told when a call starts to wait for a limit: (provider, the limit, seconds to wait).
OnWait = Callable[[str, Limit, float], None]


class LimitedModel:
    """An LlmProvider that asks the shared limits before every call of `inner`. A call that
    waited reports how long and for which limit (`llm_wait` in the run's trace), and `on_wait`
    hears of it as the wait begins (a worker prints it)."""

    def __init__(
        self,
        inner: LlmProvider,
        limits: SharedLimits,
        on_wait: OnWait | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._inner = inner
        self._limits = limits
        self._on_wait = on_wait
        self._sleep = sleep

    def prompt_layout(self, model: LlmBinding | None) -> PromptLayout:
        return prompt_layout_of(self._inner, model)

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        from agentscript.providers.llm.endpoints import parse_llm_uri

        model = request.model.uri if request.model is not None else ""
        provider = parse_llm_uri(model)[0] if model else ""
        ticket = self._ticket(request, provider, model)
        tokens = 0
        try:
            response = self._inner.generate(request)
            tokens = response.usage.total if response.usage else 0
            return response
        except ModelOutputError as error:
            tokens = error.usage.total if error.usage else 0
            raise
        finally:
            self._limits.release(ticket, tokens)

    def _ticket(self, request: GenerateRequest, provider: str, model: str) -> Ticket:
        started = time.monotonic()
        waited_for: Limit | None = None
        while True:
            answer = self._limits.acquire(provider, model)
            if isinstance(answer, Ticket):
                break
            seconds, limit = answer
            if waited_for is None and self._on_wait is not None:
                self._on_wait(provider, limit, seconds)
            waited_for = limit
            self._sleep(min(seconds, MAX_SLEEP_SECONDS))
        if waited_for is not None:
            request.report(
                "llm_wait",
                {
                    "provider": provider,
                    "limit": waited_for.describe(),
                    "wait_ms": round((time.monotonic() - started) * 1000),
                },
            )
        return answer

    def close(self) -> None:
        from agentscript.runtime.ports import is_closeable

        if is_closeable(self._inner):
            self._inner.close()
