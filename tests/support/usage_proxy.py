"""A pass-through HTTP proxy in front of an OpenAI-compatible server (the local llama-server) that
keeps what the server said about every exchange: its `usage` object as sent, and how long the
exchange took. A test compares the tokens a run reports with the server's own count; the
real-model benchmark reads tokens and seconds per call from it, and uses `rewrite` to take the
`response_format` out of each request, as a server that ignores schemas would.

Streamed answers are passed on whole once they are complete (their last chunk has the usage):
the client still parses a stream, only without pauses between chunks.

Stdlib only, so benchmarks/real_model.py uses it too.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# The longest a proxied exchange may take: a CPU model writing a long answer.
UPSTREAM_TIMEOUT_SECONDS = 600


@dataclass(frozen=True)
class Exchange:
    """One request the proxy passed on: the server's usage objects and the wall time."""

    usages: list[dict[str, Any]]
    seconds: float


class UsageProxy:
    """Forwards every POST to `upstream` (a base URL ending in `/v1`); `rewrite`, when given,
    changes each request body (a dict) before it is sent."""

    def __init__(
        self,
        upstream: str,
        rewrite: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if rewrite is not None:
                    body = json.dumps(rewrite(json.loads(body))).encode()
                request = urllib.request.Request(
                    proxy.upstream + self.path.removeprefix("/v1"),
                    data=body,
                    headers={"content-type": "application/json"},
                )
                started = time.monotonic()
                with urllib.request.urlopen(request, timeout=UPSTREAM_TIMEOUT_SECONDS) as answer:
                    payload = answer.read()
                    kind = answer.headers.get("content-type", "application/json")
                exchange = Exchange(_usages(payload), time.monotonic() - started)
                with proxy._lock:
                    proxy.exchanges.append(exchange)
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def usages(self) -> list[dict[str, Any]]:
        """Every usage object the server sent, in the order the exchanges ended."""
        with self._lock:
            return [usage for exchange in self.exchanges for usage in exchange.usages]

    def __enter__(self) -> UsageProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def without_response_format(body: dict[str, Any]) -> dict[str, Any]:
    """A request as a server that ignores `response_format` would act on it."""
    return {key: value for key, value in body.items() if key != "response_format"}


def _usages(payload: bytes) -> list[dict[str, Any]]:
    """The usage objects of a JSON answer or of a stream's `data:` lines."""
    text = payload.decode("utf-8", errors="replace")
    documents = (
        [
            line.removeprefix("data:").strip()
            for line in text.splitlines()
            if line.startswith("data:")
        ]
        if text.lstrip().startswith("data:")
        else [text]
    )
    found = []
    for document in documents:
        if not document or document == "[DONE]":
            continue
        usage = json.loads(document).get("usage")
        if usage:
            found.append(usage)
    return found
