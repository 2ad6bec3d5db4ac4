"""HTTP for model providers: one pooled client, JSON in and out (or a stream of lines),
retries, clear errors.

429 and 5xx answers are retried at most three times with exponential backoff, honouring
`retry-after` / `retry-after-ms`; each retry is reported so the trace shows it. Everything else
(network failures, 401/403, 404, timeouts, malformed bodies) fails at once with a message that
names the provider and the status. Secrets are scrubbed from every message.

Timeouts suit slow models: the timeout bounds each wait for the server (the whole answer when
it comes at once; each piece of a streamed answer, the first included), so a streamed answer
lives as long as pieces keep coming. A `deadline` (the run's `--max-seconds`) bounds the whole
request. A timeout names the setting that changes it; a deadline names `--max-seconds`.
"""

from __future__ import annotations

import email.utils
import html
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from agentscript.providers.llm.endpoints import TIMEOUT_VARIABLE
from agentscript.providers.llm.json_text import snippet
from agentscript.providers.tls import shared_ssl_context
from agentscript.runtime.budgets import BudgetExceeded
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.jsjson import parse

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 529})
MAX_RETRIES = 3
BASE_BACKOFF_SECONDS = 0.5
MAX_WAIT_SECONDS = 60.0
# Model answers are text; a body larger than this is not a model answer.
MAX_RESPONSE_BYTES = 32 * 1024 * 1024

_TITLE = re.compile(r"<title>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_TAGS = re.compile(r"<[^>]+>")

Answer = TypeVar("Answer")
ReportRetry = Callable[[dict[str, Any]], None]


@dataclass(slots=True)
class HttpTransport:
    """POSTs JSON for one provider. The httpx client is created on first use and reused."""

    provider: str
    sleep: Callable[[float], None] = time.sleep
    secrets: list[str] = field(default_factory=list)
    # How often a 429/5xx answer is retried; a caller that must not wait (a recall) says 0.
    max_retries: int = MAX_RETRIES
    # One httpx client per thread that sends (`parallel for` iterations, eval cells): a
    # shared client's connection pool serialises its threads on one lock (at 32 concurrent
    # requests a profile showed half the threads' time waiting there). A thread's client is
    # closed when the thread is gone, and `close` closes those still open. (The CA
    # certificates are loaded once per process: agentscript.providers.tls.)
    _clients: set[httpx.Client] = field(default_factory=set, repr=False)
    _local: threading.local = field(default_factory=threading.local, repr=False)
    _client_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def client(self) -> httpx.Client:
        """This thread's client, made on its first request."""
        client: httpx.Client | None = getattr(self._local, "client", None)
        if client is None or client.is_closed:
            client = httpx.Client(follow_redirects=False, verify=shared_ssl_context())
            with self._client_lock:
                self._clients.add(client)
            self._local.client = client
            weakref.finalize(threading.current_thread(), self._retire, client)
        return client

    def _retire(self, client: httpx.Client) -> None:
        with self._client_lock:
            self._clients.discard(client)
        client.close()

    def close(self) -> None:
        with self._client_lock:
            clients, self._clients = self._clients, set()
        for client in clients:
            client.close()

    def post_json(
        self,
        url: str,
        headers: dict[str, str],
        body: dict[str, Any],
        timeout_ms: int,
        report_retry: ReportRetry | None = None,
        deadline: float | None = None,
    ) -> Any:
        """The decoded JSON body of a 2xx answer, after retrying 429/5xx. `deadline` is a
        `time.monotonic()` moment the whole request must end by."""
        retries = 0
        while True:
            response = self._send(url, headers, body, Wait(timeout_ms, deadline))
            if 200 <= response.status_code < 300:
                return self._decode(response)
            retries += 1
            self.sleep(self._retry_wait(response, retries, report_retry))

    def post_stream(
        self,
        url: str,
        headers: dict[str, str],
        body: dict[str, Any],
        timeout_ms: int,
        read: Callable[[Iterator[str]], Answer],
        report_retry: ReportRetry | None = None,
        deadline: float | None = None,
    ) -> Answer:
        """POST and hand the lines of a 2xx streaming answer (SSE or NDJSON) to `read` as
        they arrive; 429/5xx are retried as for `post_json`, before anything was read. The
        answer may take as long as it likes while lines keep coming, up to `deadline`."""
        retries = 0
        while True:
            wait = Wait(timeout_ms, deadline)
            with self._open_stream(url, headers, body, wait) as response:
                if 200 <= response.status_code < 300:
                    return read(self._lines(response, url, wait))
                response.read()
                pause = self._retry_wait(response, retries + 1, report_retry)
            retries += 1
            self.sleep(pause)

    def _retry_wait(
        self, response: httpx.Response, retry: int, report_retry: ReportRetry | None
    ) -> float:
        """Seconds to wait before retry number `retry` of a failed answer, or the error."""
        if response.status_code not in RETRY_STATUSES or retry > self.max_retries:
            raise ExecutionError(
                f"LLM provider '{self.provider}' request failed ({response.status_code}): "
                f"{self.describe_error(response)}"
            )
        wait = retry_delay(response, retry)
        if report_retry is not None:
            report_retry(
                {
                    "provider": self.provider,
                    "status": response.status_code,
                    "retry": retry,
                    "wait_ms": round(wait * 1000),
                    "error": self.describe_error(response),
                }
            )
        return wait

    @contextmanager
    def _open_stream(
        self, url: str, headers: dict[str, str], body: dict[str, Any], wait: Wait
    ) -> Iterator[httpx.Response]:
        with (
            self._failures(url, wait),
            self.client().stream(
                "POST",
                url,
                headers={"content-type": "application/json", **headers},
                json=body,
                timeout=wait.seconds(),
            ) as response,
        ):
            yield response

    def _lines(self, response: httpx.Response, url: str, wait: Wait) -> Iterator[str]:
        """The answer's lines, capped at MAX_RESPONSE_BYTES in all and ended at the deadline."""
        received = 0
        wait.streaming = True
        with self._failures(url, wait):
            for line in response.iter_lines():
                if wait.past_deadline():
                    raise wait.deadline_error(self.provider, url)
                received += len(line) + 1
                if received > MAX_RESPONSE_BYTES:
                    raise ExecutionError(
                        f"LLM provider '{self.provider}' response is larger than "
                        f"{MAX_RESPONSE_BYTES} bytes"
                    )
                yield line

    @contextmanager
    def _failures(self, url: str, wait: Wait) -> Iterator[None]:
        """httpx errors as the one-line messages every provider error has."""
        try:
            yield
        except httpx.TimeoutException:
            if wait.past_deadline():
                raise wait.deadline_error(self.provider, url) from None
            raise ExecutionError(wait.timeout_message(self.provider, url)) from None
        except httpx.HTTPError as problem:
            raise ExecutionError(
                f"LLM provider '{self.provider}' request failed: "
                f"{self.scrub(str(problem) or type(problem).__name__)} ({url})"
            ) from None

    def _send(
        self, url: str, headers: dict[str, str], body: dict[str, Any], wait: Wait
    ) -> httpx.Response:
        with self._failures(url, wait):
            return self.client().post(
                url,
                headers={"content-type": "application/json", **headers},
                json=body,
                timeout=wait.seconds(),
            )
        raise AssertionError("unreachable: _failures re-raises")

    def _decode(self, response: httpx.Response) -> Any:
        if len(response.content) > MAX_RESPONSE_BYTES:
            raise ExecutionError(
                f"LLM provider '{self.provider}' response is larger than {MAX_RESPONSE_BYTES} bytes"
            )
        text = response.text
        try:
            return parse(text)
        except ValueError:
            raise ExecutionError(
                f"LLM provider '{self.provider}' returned invalid JSON response "
                f"({response.status_code}): {self.scrub(snippet(_readable(text)))}"
            ) from None

    def describe_error(self, response: httpx.Response) -> str:
        """The provider's own error message when the body has one, else a short snippet."""
        text = response.text
        message = None
        try:
            payload = parse(text)
        except ValueError:
            payload = None
        if isinstance(payload, dict):
            error = payload.get("error")
            if isinstance(error, dict):
                message = error.get("message") or error.get("type")
            elif isinstance(error, str):
                message = error
            elif isinstance(payload.get("message"), str):
                message = payload["message"]
        if not isinstance(message, str) or not message:
            message = _readable(text) or response.reason_phrase or "empty response body"
        return self.scrub(snippet(message))

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            if secret:
                text = text.replace(secret, "[REDACTED]")
        return text


@dataclass(slots=True)
class Wait:
    """How long one request may wait: `timeout_ms` for each wait on the server, within the
    `deadline` (a `time.monotonic()` moment, the run's `--max-seconds`) for all of it."""

    timeout_ms: int
    deadline: float | None = None
    # Set once a streamed answer has begun: a timeout then means the stream went quiet.
    streaming: bool = False

    def seconds(self) -> float:
        """The timeout of each wait: `timeout_ms`, or less when the deadline comes sooner."""
        timeout = self.timeout_ms / 1000
        if self.deadline is None:
            return timeout
        return max(0.001, min(timeout, self.deadline - time.monotonic()))

    def past_deadline(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline - 0.001

    def deadline_error(self, provider: str, url: str) -> BudgetExceeded:
        return BudgetExceeded(
            "seconds",
            f"Run budget exceeded: the run's time limit (--max-seconds) ran out while LLM "
            f"provider '{provider}' was still answering: {url}",
        )

    def timeout_message(self, provider: str, url: str) -> str:
        what = (
            f"sent nothing for {self.timeout_ms}ms in the middle of its answer"
            if self.streaming
            else f"request timed out after {self.timeout_ms}ms"
        )
        return (
            f"LLM provider '{provider}' {what}: {url} (a slow or warming-up model may need "
            f"longer: set {TIMEOUT_VARIABLE}, in milliseconds, or --timeout SECONDS)"
        )


def retry_delay(response: httpx.Response, retry: int) -> float:
    """Seconds to wait before retry number `retry`: the server's word, else exponential."""
    header_ms = response.headers.get("retry-after-ms")
    if header_ms:
        try:
            return min(MAX_WAIT_SECONDS, max(0.0, float(header_ms) / 1000))
        except ValueError:
            pass
    header = response.headers.get("retry-after")
    if header:
        try:
            return min(MAX_WAIT_SECONDS, max(0.0, float(header)))
        except ValueError:
            try:
                moment = email.utils.parsedate_to_datetime(header)
            except (TypeError, ValueError):
                moment = None
            if moment is not None:
                return min(MAX_WAIT_SECONDS, max(0.0, moment.timestamp() - time.time()))
    return float(min(MAX_WAIT_SECONDS, BASE_BACKOFF_SECONDS * 2 ** (retry - 1)))


def _readable(text: str) -> str:
    """HTML error pages (proxies, gateways) are reduced to their title or their text."""
    stripped = text.strip()
    if not stripped.startswith("<"):
        return stripped
    title = _TITLE.search(stripped)
    if title:
        return "HTML error page: " + html.unescape(title.group(1).strip())
    return html.unescape(_TAGS.sub(" ", stripped))
