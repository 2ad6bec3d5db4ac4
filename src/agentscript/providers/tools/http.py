"""HTTP tools: `import tool Api from "https://api.example.com"`, then `Api.get({url: "/users/1"})`.

The method name is the HTTP verb. A call can only reach the origin it was imported from: its URL
and every redirect must stay there, so a program cannot be steered to another host. The tool sends
only what the program gives it (no stored cookies, no .netrc or proxy settings from the
environment) and reads at most 1 MiB of an answer, decompressed while it streams, so neither a
huge response nor a gzip bomb can exhaust memory. A call's `timeout` is capped at
MAX_TIMEOUT_MS and never outlasts the run's `--max-seconds`; Ctrl-C stops it between chunks.
"""

from __future__ import annotations

import codecs
import http.cookiejar
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

import httpx

from agentscript.providers.tls import shared_ssl_context
from agentscript.providers.tools.base import (
    Risk,
    object_argument,
    positive_integer,
    required_string,
)
from agentscript.providers.tools.content_decoding import (
    ACCEPT_ENCODING,
    BodyTooLarge,
    UnsupportedEncoding,
    decoded_chunks,
)
from agentscript.runtime.budgets import CallDeadline, Interrupted
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.jsjson import parse, stringify
from agentscript.runtime.ports import ToolCall
from agentscript.runtime.values import sanitize

DEFAULT_TIMEOUT_MS = 10_000
# The longest `timeout` a call may ask for; a longer one is cut to it.
MAX_TIMEOUT_MS = 120_000
MAX_BODY_BYTES = 1024 * 1024
MAX_REDIRECTS = 5
# Verbs that only observe; every other verb may change something on the server.
READ_VERBS = frozenset({"GET", "HEAD", "OPTIONS"})
# fetch, which the original used, refuses these: a tunnel or a trace is not an API call.
FORBIDDEN_VERBS = frozenset({"CONNECT", "TRACE", "TRACK"})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Headers that describe a body; they go with the body when a redirect turns a request into a GET.
BODY_HEADERS = frozenset(
    {"content-type", "content-length", "content-encoding", "content-language", "content-location"}
)


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One request as it goes on the wire; a redirect produces the next one."""

    verb: str
    url: httpx.URL
    headers: tuple[tuple[str, str], ...]
    body: bytes | None

    @property
    def label(self) -> str:
        """`HTTP GET <url>`, how every message names the request (without URL credentials)."""
        return f"HTTP {self.verb} {shown(self.url)}"

    def redirected(self, status: int, target: httpx.URL) -> HttpRequest:
        """The request a redirect asks for. As in browsers and fetch, 303 (except after HEAD)
        and 301/302 after a POST become a GET without body; 307/308 repeat the request as is."""
        becomes_get = (status == 303 and self.verb != "HEAD") or (
            status in (301, 302) and self.verb == "POST"
        )
        if not becomes_get:
            return replace(self, url=target)
        headers = tuple(
            (name, value) for name, value in self.headers if name.lower() not in BODY_HEADERS
        )
        return HttpRequest("GET", target, headers, None)


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    """One response: a redirect to follow (`location` set, body not read) or the final answer."""

    status: int
    location: str | None = None
    charset: str | None = None
    content: bytes = b""


class HttpTools:
    """The `http` and `https` schemes. Holds one pooled client; `close()` releases it."""

    def __init__(self) -> None:
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def risk(self, request: ToolCall) -> Risk:
        return "read" if request.method.upper() in READ_VERBS else "effect"

    def call(self, request: ToolCall) -> dict[str, Any]:
        verb = request.method.upper()
        arguments = object_argument(request, f"Http.{request.method}")
        base = parse_url(request.uri)
        url = resolve(base, required_string(arguments, "url", "Http"))
        if url.password:
            request.secret(url.password)  # a password a program put in a URL is a secret
        import_origin = origin(base)
        if origin(url) != import_origin:
            raise ExecutionError(
                f"HTTP tool URL origin '{origin(url)}' does not match import origin "
                f"'{import_origin}'"
            )
        timeout_ms = min(positive_integer(arguments, "timeout", DEFAULT_TIMEOUT_MS), MAX_TIMEOUT_MS)
        if verb in FORBIDDEN_VERBS:
            raise ExecutionError(f"HTTP method '{verb}' is not allowed")
        outgoing = HttpRequest(verb, url, header_pairs(arguments), body_bytes(arguments))
        answer = self._exchange(outgoing, import_origin, timeout_ms, request.deadline)
        text = decode(answer.content, answer.charset)
        return {
            "ok": 200 <= answer.status < 300,
            "status": answer.status,
            "body": text,
            "json": json_or_null(text),
        }

    def close(self) -> None:
        """Close the pooled connections. Safe to call twice (both schemes share one instance)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                # A cookie policy that accepts nothing: a Set-Cookie answering one call must not
                # become a credential sent with later calls that were never given it.
                no_cookies = http.cookiejar.CookieJar(
                    policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[])
                )
                self._client = httpx.Client(
                    follow_redirects=False,
                    trust_env=False,
                    cookies=no_cookies,
                    verify=shared_ssl_context(trust_env=False),
                )
            return self._client

    def _exchange(
        self, request: HttpRequest, allowed_origin: str, timeout_ms: int, run: CallDeadline
    ) -> HttpAnswer:
        """Send the request and follow redirects within `allowed_origin`, all under one deadline
        of `timeout_ms` (as the original's abort timer covered the whole fetch), or the run's
        end when that comes first."""
        seconds = timeout_ms / 1000
        deadline = _Deadline(
            time.monotonic() + run.seconds_left(seconds), timeout_ms, run, run.binds(seconds)
        )
        first = request
        for _ in range(MAX_REDIRECTS + 1):
            answer = self._send(request, deadline)
            if answer.location is None:
                return answer
            target = join(request.url, answer.location)
            if target is None:
                raise ExecutionError(
                    f"{request.label} was redirected to an invalid URL '{answer.location}'"
                )
            if origin(target) != allowed_origin:
                raise ExecutionError(
                    f"{request.label} was redirected to '{shown(target)}' on another origin; "
                    f"only redirects within '{allowed_origin}' are followed"
                )
            request = request.redirected(answer.status, target)
        raise ExecutionError(f"{first.label} was redirected more than {MAX_REDIRECTS} times")

    def _send(self, request: HttpRequest, deadline: _Deadline) -> HttpAnswer:
        """One round trip. A redirect's body is not read; the final body is read up to the cap."""
        remaining = deadline.remaining(request)
        client = self._http()
        headers = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in request.headers]
        if not any(name.lower() == "accept-encoding" for name, _ in request.headers):
            # Only what content_decoding can decompress under the cap.
            headers.append((b"Accept-Encoding", ACCEPT_ENCODING.encode("ascii")))
        try:
            outgoing = client.build_request(
                request.verb, request.url, headers=headers, content=request.body, timeout=remaining
            )
            response = client.send(outgoing, stream=True)
            try:
                location = response.headers.get("location")
                if response.status_code in REDIRECT_STATUSES and location is not None:
                    return HttpAnswer(response.status_code, location=location)
                content = read_capped(response, request, deadline)
                return HttpAnswer(
                    response.status_code, charset=response.charset_encoding, content=content
                )
            finally:
                response.close()
        except httpx.TimeoutException:
            raise deadline.timed_out(request) from None
        except httpx.ConnectError as problem:
            raise ExecutionError(
                f"{request.label} failed: could not connect ({describe(problem)})"
            ) from None
        except httpx.HTTPError as problem:
            raise ExecutionError(f"{request.label} failed: {describe(problem)}") from None


@dataclass(frozen=True, slots=True)
class _Deadline:
    """When one call (with its redirects) must be done: `at` (time.monotonic()), which is the
    call's own `timeout_ms` or the run's end, whichever comes first."""

    at: float
    timeout_ms: int
    run: CallDeadline
    # Whether the run ends before the call's own timeout would.
    by_run: bool

    def remaining(self, request: HttpRequest) -> float:
        self.check(request)
        return self.at - time.monotonic()

    def check(self, request: HttpRequest) -> None:
        self.run.check()
        if time.monotonic() > self.at:
            raise self.timed_out(request)

    def timed_out(self, request: HttpRequest) -> ExecutionError:
        if self.run.stopped.is_set():
            return Interrupted("Interrupted while the tool was running")
        if self.by_run:
            return self.run.exceeded()
        return ExecutionError(f"{request.label} timed out after {self.timeout_ms}ms")


def read_capped(response: httpx.Response, request: HttpRequest, deadline: _Deadline) -> bytes:
    """The body, decompressed while it streams, refusing more than MAX_BODY_BYTES and checking
    the deadline between chunks, so neither a huge, a trickling nor a compressed-bomb answer
    holds the run."""
    too_large = ExecutionError(
        f"{request.label} response body is larger than the 1 MiB cap "
        f"({MAX_BODY_BYTES} bytes) of the HTTP tool"
    )
    # A declared length is checked before reading, unless it is of compressed bytes.
    declared = response.headers.get("content-length", "")
    compressed = "content-encoding" in response.headers
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES and not compressed:
        raise too_large
    encoding = response.headers.get("content-encoding", "")
    try:
        return decoded_chunks(
            response.iter_raw(), encoding, MAX_BODY_BYTES, lambda: deadline.check(request)
        )
    except BodyTooLarge:
        raise too_large from None
    except UnsupportedEncoding as problem:
        raise ExecutionError(
            f"{request.label} answered in content-encoding '{problem}', which the HTTP tool "
            f"does not decode (it asks for {ACCEPT_ENCODING})"
        ) from None
    except ValueError as problem:
        raise ExecutionError(f"{request.label} failed: {problem}") from None


def parse_url(uri: str) -> httpx.URL:
    """The import URI as a URL; it needs a host to have an origin."""
    try:
        url = httpx.URL(uri)
    except httpx.InvalidURL:
        url = None
    if url is None or not url.host or not valid_port(url):
        raise ExecutionError(f"Invalid HTTP tool URI '{uri}'")
    return url


def resolve(base: httpx.URL, reference: str) -> httpx.URL:
    """`reference` resolved against the import URI, as `new URL(reference, base)` does."""
    url = join(base, reference)
    if url is None:
        raise ExecutionError(f"Invalid HTTP tool URL '{reference}'")
    return url


def join(base: httpx.URL, reference: str) -> httpx.URL | None:
    """`reference` resolved against `base`, or None when that is not a usable URL."""
    try:
        url = base.join(reference)
    except httpx.InvalidURL:
        return None
    return url if url.host and valid_port(url) else None


def valid_port(url: httpx.URL) -> bool:
    return url.port is None or 0 < url.port < 65536


def origin(url: httpx.URL) -> str:
    """The URL's origin as JavaScript writes it: scheme, ASCII host, port unless the default."""
    host = url.raw_host.decode("ascii")
    if ":" in host:
        host = f"[{host}]"
    port = f":{url.port}" if url.port is not None else ""
    return f"{url.scheme}://{host}{port}"


def shown(url: httpx.URL) -> str:
    """The URL for messages, without a user name or password it may carry."""
    return str(url.copy_with(username=None, password=None)) if url.userinfo else str(url)


def header_pairs(arguments: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """`headers`, an object of strings passed through as given. Header text is Latin-1 on the
    wire, so other characters are refused here rather than garbled."""
    headers = arguments.get("headers")
    if headers is None:
        return ()
    if not isinstance(headers, dict):
        raise ExecutionError(
            f"Http.headers must be an object of strings, got {stringify(sanitize(headers))}"
        )
    pairs: list[tuple[str, str]] = []
    for name, value in headers.items():
        if not isinstance(value, str):
            raise ExecutionError(
                f"Http.headers.{name} must be a string, got {stringify(sanitize(value))}"
            )
        try:
            name.encode("latin-1")
            value.encode("latin-1")
        except UnicodeEncodeError:
            raise ExecutionError(
                f"Http.headers.{name} cannot be sent: header names and values are Latin-1 text"
            ) from None
        pairs.append((name, value))
    return tuple(pairs)


def body_bytes(arguments: dict[str, Any]) -> bytes | None:
    """`body`: a string is sent as is, any other value (null too) as JSON text, both UTF-8.
    No content-type is added; a program that wants one says so in `headers`."""
    if "body" not in arguments:
        return None
    body = arguments["body"]
    text = body if isinstance(body, str) else stringify(sanitize(body))
    return text.encode("utf-8")


def decode(content: bytes, charset: str | None) -> str:
    """The body as text: in its declared charset, else UTF-8 (a BOM dropped, as fetch does);
    bytes that do not decode become U+FFFD instead of failing the call."""
    encoding = "utf-8-sig"
    if charset:
        try:
            name = codecs.lookup(charset).name
        except LookupError:
            name = "utf-8"
        encoding = "utf-8-sig" if name == "utf-8" else name
    return content.decode(encoding, errors="replace")


def json_or_null(text: str) -> Any:
    try:
        return parse(text)
    except (ValueError, RecursionError):
        return None


def describe(problem: Exception) -> str:
    return str(problem) or type(problem).__name__
