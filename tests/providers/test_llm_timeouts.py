"""Timeouts that suit slow, real models, against a local OpenAI-wire server on 127.0.0.1 that
streams its answer at a set pace: a streamed answer lives as long as pieces keep coming (the
timeout bounds each wait, not the whole answer), a stream that goes quiet fails naming the
setting that changes the timeout, and the run's `--max-seconds` bounds the whole request.
Timeouts are configured short; the server paces its pieces with an Event's timed wait."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import agentscript
from agentscript.runtime.budgets import BudgetExceeded
from agentscript.runtime.trace import TraceSink
from llm_support import program, run

ANSWER = json.dumps({"answer": "Rayleigh scattering", "score": 0.9})


class Watcher(TraceSink):
    """Someone watching the answer arrive, so the provider streams it."""

    def __init__(self) -> None:
        self.pieces: list[str] = []

    def text_delta(self, text: str) -> None:
        self.pieces.append(text)


class PacedServer:
    """Streams ANSWER one character per SSE chunk, `pace` seconds apart; after `stall_after`
    chunks it goes quiet until `release` is set (the test's end)."""

    def __init__(self, pace: float, stall_after: int | None = None, repeat: int = 1) -> None:
        self.pace = pace
        self.stall_after = stall_after
        self.repeat = repeat
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                try:
                    server.stream(self)
                except (BrokenPipeError, ConnectionResetError):
                    return

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True

    def stream(self, handler: BaseHTTPRequestHandler) -> None:
        pieces = list(ANSWER) * self.repeat
        for index, piece in enumerate(pieces):
            if self.stall_after is not None and index == self.stall_after:
                self.release.wait()
                return
            if index and self.release.wait(self.pace):
                return
            delta = {"choices": [{"index": 0, "delta": {"content": piece}}]}
            handler.wfile.write(f"data: {json.dumps(delta)}\n\n".encode())
            handler.wfile.flush()
        finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        handler.wfile.write(f"data: {json.dumps(finish)}\n\ndata: [DONE]\n\n".encode())
        handler.wfile.flush()

    def environ(self, timeout_ms: int) -> dict[str, str]:
        port = self.httpd.server_address[1]
        return {
            "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
            "AGENTSCRIPT_LLM_TIMEOUT_MS": str(timeout_ms),
        }


@contextmanager
def paced(pace: float, stall_after: int | None = None, repeat: int = 1) -> Iterator[PacedServer]:
    server = PacedServer(pace, stall_after, repeat)
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.httpd.shutdown()
        server.httpd.server_close()


def test_a_stream_slower_than_the_timeout_in_all_succeeds_while_pieces_keep_coming() -> None:
    # 50 pieces 10 ms apart: about 0.5 s in all, more than twice the 200 ms timeout.
    with paced(0.01) as server:
        watcher = Watcher()
        result = run(
            program("openai://local"),
            server.environ(timeout_ms=200),
            stream=True,
            trace_sinks=[watcher],
        )
    assert result.value == json.loads(ANSWER)
    assert "".join(watcher.pieces) == ANSWER


def test_a_stream_that_goes_quiet_fails_naming_the_setting() -> None:
    with paced(0.001, stall_after=3) as server, pytest.raises(agentscript.ExecutionError) as caught:
        run(
            program("openai://local"),
            server.environ(timeout_ms=200),
            stream=True,
            trace_sinks=[Watcher()],
        )
    message = str(caught.value)
    assert "sent nothing for 200ms in the middle of its answer" in message
    assert "set AGENTSCRIPT_LLM_TIMEOUT_MS" in message
    assert "--timeout SECONDS" in message


def test_a_request_that_times_out_before_answering_names_the_setting() -> None:
    with paced(0.001, stall_after=0) as server, pytest.raises(agentscript.ExecutionError) as caught:
        run(program("openai://local"), server.environ(timeout_ms=150))
    assert "request timed out after 150ms" in str(caught.value)
    assert "set AGENTSCRIPT_LLM_TIMEOUT_MS" in str(caught.value)


def test_the_runs_max_seconds_bounds_a_stream_that_never_stops() -> None:
    # A steady stream far longer than the run's 0.3 s, each piece well within the timeout.
    with paced(0.01, repeat=100) as server, pytest.raises(BudgetExceeded) as caught:
        run(
            program("openai://local"),
            server.environ(timeout_ms=5_000),
            stream=True,
            trace_sinks=[Watcher()],
            max_seconds=0.3,
        )
    assert caught.value.budget == "seconds"
    assert "--max-seconds" in str(caught.value)


def test_run_timeout_flag_sets_the_timeout(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentscript.cli.main import main

    source = tmp_path / "asker.as"
    source.write_text(program("openai://local"), encoding="utf-8")
    with paced(0.001, stall_after=0) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.environ(0)["OPENAI_BASE_URL"])
        monkeypatch.setenv("AGENTSCRIPT_LLM_TIMEOUT_MS", "60000")
        argv = ["run", str(source), "--input", '{"question": "why?"}', "--timeout", "0.15"]
        assert main(argv) != 0
    assert "request timed out after 150ms" in capsys.readouterr().err


def test_eval_timeout_flag_sets_the_timeout_of_every_cell(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentscript.cli.main import main

    source = tmp_path / "asker.as"
    source.write_text(program("openai://local"), encoding="utf-8")
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"input": {"question": "why?"}, "expected": "x"}) + "\n")
    out = tmp_path / "results.jsonl"
    with paced(0.001, stall_after=0) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.environ(0)["OPENAI_BASE_URL"])
        argv = ["eval", str(source), "--data", str(cases), "--timeout", "0.15", "--out", str(out)]
        assert main([*argv, "--json"]) == 0
    row = json.loads(out.read_text().splitlines()[-1])
    assert "request timed out after 150ms" in row["error"]
