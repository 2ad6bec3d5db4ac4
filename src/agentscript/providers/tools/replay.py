"""Tool calls kept in the run journal, and answered from it: replay and resume.

`JournaledTools` wraps the tool provider of a journaled run and logs each call it passes on:
started, then finished with its result or error and the events it reported (approvals). A
call with effects is written durably both times, each in a small write of its own: a run
killed during the effect is known to have left the call open, and one killed just after it
is known to have finished it. A read is logged without waiting for the disk: lost to a kill,
it only runs again.

`ReplayTools` answers calls from such a log without performing them: matched by URI, method
and arguments, in journaled order for identical calls. What the log cannot answer is a
mismatch, or, when the replay may go live (lenient replay, resume), a call to the live
provider behind its approval gate. Calls are compared as the journal keeps them: the URI
without its password and the arguments scrubbed with the run's redaction set (`scrub`). A
read whose result is a secret it handed out (an allowed `env://` variable) is read again: the
journal keeps only "[REDACTED]" in its place, and the run needs the secret itself. A call that started but never finished is never repeated
blindly: a read runs again; anything else runs again only on the user's word, asked at the
terminal (whatever the approval mode) or given beforehand with `rerun_unfinished`.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

from agentscript.providers.tools.approvals import ApprovalGate
from agentscript.providers.tools.base import Risk
from agentscript.runtime.errors import ExecutionError, ReplayMismatch
from agentscript.runtime.jsjson import stringify
from agentscript.runtime.ports import (
    TOOL_FINISHED,
    TOOL_STARTED,
    ExchangeLog,
    ToolCall,
    ToolExchange,
    ToolProvider,
)
from agentscript.runtime.secrets import SecretSet
from agentscript.runtime.uris import scrub_uri
from agentscript.runtime.values import sanitize

# "all": every journaled call is answered from the journal; "effects": reads run live.
ReplayToolsMode = Literal["all", "effects"]
RiskOf = Callable[[ToolCall], Risk]


def risk_of(tools: ToolProvider) -> RiskOf:
    """How risky a call is, as the approval gate in front of the host tools judges it; a
    provider that cannot say (one handed in, the mock) has every call count as an effect."""
    if isinstance(tools, ApprovalGate):
        return tools.registry.risk
    return lambda request: "effect"


class OutcomeUnknown(ExecutionError):
    """A call the journal saw start but never finish, not run again: it may have happened.
    Journaled as unknown again, so resuming the run that stopped here asks about it again."""


class JournaledTools:
    """A ToolProvider that logs every call it passes on (see the module doc)."""

    def __init__(self, inner: ToolProvider, log: ExchangeLog, risk: RiskOf) -> None:
        self._inner = inner
        self._log = log
        self._risk = risk
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def call(self, request: ToolCall) -> Any:
        with self._lock:
            call_id = next(self._ids)
        started = {
            "call": call_id,
            "tool": request.tool_name,
            "uri": scrub_uri(request.uri),
            "method": request.method,
            "args": sanitize(request.args),
        }
        durable = self._has_effects(request)
        self._log.exchange(TOOL_STARTED, started, durable=durable)
        events: list[list[Any]] = []
        secrets: list[str] = []

        def relay(kind: str, data: dict[str, Any]) -> None:
            events.append([kind, sanitize(data)])
            request.report(kind, data)

        def hand_out(secret: str) -> None:
            secrets.append(secret)
            request.secret(secret)

        forwarded = replace(request, on_event=relay, on_secret=hand_out)
        try:
            result = self._inner.call(forwarded)
        except OutcomeUnknown:
            self._log.exchange(TOOL_FINISHED, {"call": call_id, "unknown": True}, durable=durable)
            raise
        except Exception as problem:
            message = problem.bare_message if isinstance(problem, ExecutionError) else None
            finished = {"call": call_id, "error": message or str(problem), "events": events}
            self._log.exchange(TOOL_FINISHED, finished, durable=durable)
            raise
        finally:
            request.risk = forwarded.risk  # as the approval gate judged it, for the trace
        finished = {"call": call_id, "result": sanitize(result), "events": events}
        if secrets and SecretSet(secrets).found_in(result):
            finished["secret"] = True  # the journal keeps it redacted: a replay reads it again
        self._log.exchange(TOOL_FINISHED, finished, durable=durable)
        return result

    def _has_effects(self, request: ToolCall) -> bool:
        """Anything but a plain read; a call whose scheme is unknown fails in the call itself,
        with its own message."""
        try:
            return self._risk(request) != "read"
        except ExecutionError:
            return True


class ReplayTools:
    """A ToolProvider answering from journaled tool calls (see the module doc). `live` is the
    real provider (behind its approval gate); `risk` says which calls are reads."""

    def __init__(
        self,
        exchanges: list[ToolExchange],
        live: ToolProvider,
        risk: RiskOf,
        source: str,
        mode: ReplayToolsMode = "all",
        go_live: bool = False,
        rerun_unfinished: bool = False,
        scrub: Callable[[Any], Any] = lambda value: value,
    ) -> None:
        self._live = live
        self._scrub = scrub
        self._risk = risk
        self._source = source
        self._mode = mode
        self._go_live = go_live
        self._rerun_unfinished = rerun_unfinished
        self._lock = threading.Lock()
        self._pending: list[ToolExchange] = list(exchanges)
        self._queues: dict[str, deque[ToolExchange]] = {}
        for exchange in exchanges:
            key = _key(exchange.uri, exchange.method, exchange.args)
            self._queues.setdefault(key, deque()).append(exchange)

    def call(self, request: ToolCall) -> Any:
        if self._mode == "effects" and self._is_read(request):
            return self._live.call(request)
        args = self._scrub(sanitize(request.args))
        with self._lock:
            queue = self._queues.get(_key(scrub_uri(request.uri), request.method, args))
            exchange = queue.popleft() if queue else None
            if exchange is not None:
                self._pending.remove(exchange)
            expected = self._pending[0] if self._pending else None
        if exchange is None:
            if self._go_live:
                return self._live.call(request)
            raise _mismatch(self._source, request, args, expected)
        if isinstance(self._live, ApprovalGate):
            request.risk = self._live.registry.risk(request)  # as the gate would judge it
        if not exchange.finished:
            return self._unfinished(request)
        if exchange.secret and self._is_read(request):
            return self._live.call(request)
        for kind, data in exchange.events:
            request.report(kind, data)
        if exchange.error is not None:
            raise ExecutionError(exchange.error)
        return exchange.result

    def _is_read(self, request: ToolCall) -> bool:
        try:
            return self._risk(request) == "read"
        except ExecutionError:
            return False

    def _unfinished(self, request: ToolCall) -> Any:
        """A call whose outcome the journal does not know: it may or may not have happened."""
        if self._is_read(request) or self._rerun_unfinished:
            return self._live.call(request)
        reason = (
            f"it started in {self._source} but never finished, so whether its effect "
            "happened is unknown"
        )
        if isinstance(self._live, ApprovalGate) and self._live.ask_again(request, reason):
            return self._live.registry.call(request)
        raise OutcomeUnknown(
            f"{request.label} ({request.uri}) {reason}; check it, then resume with "
            "--rerun-unfinished to run it again"
        )


def _key(uri: str, method: str, args: Any) -> str:
    return stringify([uri, method, args])


def _mismatch(
    source: str, request: ToolCall, args: Any, expected: ToolExchange | None
) -> ReplayMismatch:
    uri = scrub_uri(request.uri)
    head = f"Replay of {source} does not match at tool call {request.label} ({uri})"
    if expected is None:
        return ReplayMismatch(head + ": the recorded run made no more tool calls", [])
    detail = [f"expected next: {expected.method} on {expected.uri}"]
    if expected.uri != uri:
        detail.append(f"uri: {expected.uri} -> {uri}")
    if expected.method != request.method:
        detail.append(f"method: {expected.method} -> {request.method}")
    if expected.args != args:
        detail.append(f"args: {_short(expected.args)} -> {_short(args)}")
    detail.append("(--replay-lenient runs this call and the rest live, behind approvals)")
    return ReplayMismatch(head, detail)


def _short(value: Any, limit: int = 100) -> str:
    text = stringify(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
