"""A local server that speaks the OpenAI chat-completions wire format, for evals: each "model"
is a function from the request to the answer's text, and every answer can wait a fixed time
first (a model's latency). Threaded, so concurrent cells really overlap; 127.0.0.1 only."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (model name, request body) -> the assistant message's content.
Answer = Callable[[str, dict[str, Any]], str]


def user_message(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


class _Server(ThreadingHTTPServer):
    # The listen backlog must hold every concurrent cell (the default of 5 refuses the rest).
    request_queue_size = 128
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (its time budget ran out) is not the server's error.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class OpenAiWireServer:
    """`hold_after=N` answers the first N requests and holds every later one until `release()`
    (or the server stops): a test can interrupt a client at a known point, not a lucky time."""

    def __init__(self, answer: Answer, latency: float = 0.0, hold_after: int | None = None) -> None:
        self.answer = answer
        self.latency = latency
        self.hold_after = hold_after
        self.requests: list[dict[str, Any]] = []
        # The bodies exactly as they arrived.
        self.raw: list[bytes] = []
        # When each request arrived (time.time()), for counting requests in a period.
        self.arrivals: list[float] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.released = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            # Headers and body leave in separate writes: without this, Nagle's algorithm and
            # the client's delayed ACK hold every answer back by about 40 ms.
            disable_nagle_algorithm = True
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                body = json.loads(raw)
                with server._lock:
                    server.requests.append(body)
                    server.raw.append(raw)
                    server.arrivals.append(time.time())
                    held = (
                        server.hold_after is not None and len(server.requests) > server.hold_after
                    )
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                try:
                    if held:
                        server.released.wait()
                    if server.latency:
                        time.sleep(server.latency)
                    content = server.answer(str(body["model"]), body)
                finally:
                    with server._lock:
                        server.in_flight -= 1
                if body.get("stream"):
                    self._stream(str(body["model"]), content)
                    return
                payload = json.dumps(
                    {
                        "id": "chatcmpl-eval",
                        "object": "chat.completion",
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": content},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 10},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _stream(self, model: str, content: str) -> None:
                """The answer as server-sent events, a few characters a chunk, then the
                usage and `[DONE]`, as OpenAI streams with `stream_options.include_usage`."""
                pieces = [content[i : i + 4] for i in range(0, len(content), 4)]
                chunks: list[Any] = [
                    {"model": model, "choices": [{"index": 0, "delta": {"content": piece}}]}
                    for piece in pieces
                ]
                chunks.append(
                    {
                        "model": model,
                        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    }
                )
                chunks.append(
                    {"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 10}}
                )
                payload = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks)
                data = (payload + "data: [DONE]\n\n").encode()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.httpd = _Server(("127.0.0.1", 0), Handler)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def release(self) -> None:
        """Answer the held requests, and every later one at once."""
        self.released.set()

    def environ(self) -> dict[str, str]:
        """What a run needs to reach this server as its OpenAI endpoint."""
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": "sk-local-test"}


@contextmanager
def serving(
    answer: Answer, latency: float = 0.0, hold_after: int | None = None
) -> Iterator[OpenAiWireServer]:
    server = OpenAiWireServer(answer, latency, hold_after)
    # Checked for a stop request every 10 ms (the default half second is paid by every test).
    thread = threading.Thread(target=server.httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release()
        server.httpd.shutdown()
        server.httpd.server_close()


def main() -> None:
    """Serve in a process of its own (benchmarks: the server must not share the client's
    GIL): print the base URL, answer `{"label": "bug"}` after --latency-ms, stop on EOF."""
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--latency-ms", type=float, default=50.0)
    options = parser.parse_args()
    with serving(lambda model, body: '{"label": "bug"}', options.latency_ms / 1000) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
