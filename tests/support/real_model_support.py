"""The local real model for the `real_model` tests: one llama-server for the whole session, on
a free port of 127.0.0.1, stopped when the session ends (scripts/local_model.py).

tests/conftest.py loads this module as a plugin; a test that uses its fixtures is marked
`@pytest.mark.real_model`, so it is skipped (failed under CI=true) where the model is not built.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

# A CPU model may take minutes for a long answer; these tests wait for it.
REQUEST_TIMEOUT_MS = "600000"


@pytest.fixture(scope="session")
def local_model_url() -> Iterator[str]:
    """The base URL (`…/v1`) of the session's llama-server."""
    import local_model
    from system_parts import require

    require("real_model")
    with local_model.serve() as url:
        yield url


@pytest.fixture
def on_local_model(local_model_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every `openai://` model of a run goes to the local server (which serves its one model
    whatever name a program gives it)."""
    monkeypatch.setenv("OPENAI_BASE_URL", local_model_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("AGENTSCRIPT_LLM_TIMEOUT_MS", REQUEST_TIMEOUT_MS)
    return local_model_url


class UsageProxy:
    """A pass-through HTTP proxy in front of the server that keeps the `usage` object of every
    answer as the server sent it, so a test compares the tokens a run reports with the
    server's own count. Streamed answers are passed on whole (their last chunk has the usage)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.usages: list[dict[str, Any]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                request = urllib.request.Request(
                    proxy.upstream + self.path.removeprefix("/v1"),
                    data=body,
                    headers={"content-type": "application/json"},
                )
                with urllib.request.urlopen(request, timeout=600) as answer:
                    payload = answer.read()
                    kind = answer.headers.get("content-type", "application/json")
                proxy.usages.extend(_usages(payload))
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

    def __enter__(self) -> UsageProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


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
