"""HTTP and MCP tool calls end when the run's time is up or it is interrupted, whatever the
call's own timeout; HTTP timeouts are capped and a compressed answer is capped while it
streams (real servers on 127.0.0.1: pytest-httpserver and the MCP echo server)."""

from __future__ import annotations

import gzip
import json
import sys
import threading
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug.wrappers import Request, Response

from agentscript.providers.tools import http as http_module
from agentscript.providers.tools.http import MAX_TIMEOUT_MS, HttpTools
from agentscript.providers.tools.mcp import McpTools, approve_every_start
from agentscript.runtime.budgets import BudgetExceeded, CallDeadline, Interrupted
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall
from local_http import LocalHTTPServer

ECHO_SERVER = str(Path(__file__).parents[1] / "fixtures" / "mcp" / "echo_server.py")


@pytest.fixture
def server() -> Iterator[HTTPServer]:
    started = LocalHTTPServer(host="127.0.0.1", port=0)
    started.start()
    yield started
    started.clear()
    started.stop()


@pytest.fixture
def stalled(server: HTTPServer) -> Iterator[str]:
    """The origin of a server whose `/slow` answers only when the test ends."""
    release = threading.Event()

    def stall(request: Request) -> Response:
        release.wait(30)
        return Response("late")

    server.expect_request("/slow").respond_with_handler(stall)
    yield f"http://127.0.0.1:{server.port}"
    release.set()


def http_call(origin: str, argument: dict[str, Any], deadline: CallDeadline) -> Any:
    tools = HttpTools()
    try:
        return tools.call(ToolCall("Api", origin, "get", [argument], deadline=deadline))
    finally:
        tools.close()


def test_an_http_call_ends_with_the_run_time_not_its_own_timeout(stalled: str) -> None:
    run_end = CallDeadline(at=time.monotonic() + 0.5, max_seconds=2)
    with pytest.raises(BudgetExceeded, match="more than 2 seconds"):
        http_call(stalled, {"url": "/slow", "timeout": 60_000}, run_end)


def test_an_http_timeout_is_capped(stalled: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The cap is what bounds the call, so a lower cap must show in the message.
    monkeypatch.setattr(http_module, "MAX_TIMEOUT_MS", 300)
    with pytest.raises(ExecutionError, match="timed out after 300ms"):
        http_call(stalled, {"url": "/slow", "timeout": 10**12}, CallDeadline())
    assert MAX_TIMEOUT_MS == 120_000


def test_an_http_call_stops_on_interrupt(stalled: str) -> None:
    stopped = threading.Event()
    threading.Timer(0.3, stopped.set).start()
    # Read timeouts are the shorter of the call's and the run's, so the check comes soon.
    deadline = CallDeadline(at=time.monotonic() + 1.0, max_seconds=30, stopped=stopped)
    with pytest.raises(Interrupted):
        http_call(stalled, {"url": "/slow", "timeout": 60_000}, deadline)


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_compression_bomb_is_refused_without_inflating_it(
    server: HTTPServer, encoding: str
) -> None:
    zeros = b"\0" * (200 * 1024 * 1024)
    bomb = gzip.compress(zeros, 9) if encoding == "gzip" else zlib.compress(zeros, 9)
    del zeros
    server.expect_request("/bomb").respond_with_response(
        Response(bomb, headers={"Content-Encoding": encoding})
    )
    tracemalloc.start()
    try:
        with pytest.raises(ExecutionError, match="larger than the 1 MiB cap"):
            http_call(f"http://127.0.0.1:{server.port}", {"url": "/bomb"}, CallDeadline())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024, f"peak {peak / 2**20:.0f} MiB"


def test_a_compressed_answer_within_the_cap_is_decoded(server: HTTPServer) -> None:
    body = json.dumps({"items": list(range(1000))}).encode()
    server.expect_request("/gz").respond_with_response(
        Response(gzip.compress(body), headers={"Content-Encoding": "gzip"})
    )
    server.expect_request("/raw-deflate").respond_with_response(
        Response(zlib.compress(body)[2:-4], headers={"Content-Encoding": "deflate"})
    )
    server.expect_request("/br").respond_with_response(
        Response(b"??", headers={"Content-Encoding": "br"})
    )
    origin = f"http://127.0.0.1:{server.port}"
    for url in ("/gz", "/raw-deflate"):
        assert http_call(origin, {"url": url}, CallDeadline())["json"]["items"][-1] == 999
    with pytest.raises(ExecutionError, match="content-encoding 'br'"):
        http_call(origin, {"url": "/br"}, CallDeadline())


@pytest.fixture
def mcp_tools(tmp_path: Path) -> Iterator[McpTools]:
    server = {"command": sys.executable, "args": [ECHO_SERVER], "startTimeout": 120}
    (tmp_path / "agentscript.mcp.json").write_text(
        json.dumps({"mcpServers": {"slow": {**server, "timeout": 60}}})
    )
    with McpTools(tmp_path, approve_start=approve_every_start) as tools:
        yield tools


def mcp_sleep(tools: McpTools, deadline: CallDeadline) -> Any:
    request = ToolCall("Slow", "mcp://slow", "sleep", [{"seconds": 30}], deadline=deadline)
    return tools.call(request)


def test_an_mcp_call_ends_with_the_run_time_and_the_server_stays_usable(
    mcp_tools: McpTools,
) -> None:
    mcp_tools.call(ToolCall("Slow", "mcp://slow", "echo", [{"text": "up"}]))  # started
    with pytest.raises(BudgetExceeded, match="--max-seconds"):
        mcp_sleep(mcp_tools, CallDeadline(at=time.monotonic() + 0.5, max_seconds=1))
    answer = mcp_tools.call(ToolCall("Slow", "mcp://slow", "echo", [{"text": "still"}]))
    assert answer["text"] == "still"


def test_an_mcp_call_stops_on_interrupt(mcp_tools: McpTools) -> None:
    mcp_tools.call(ToolCall("Slow", "mcp://slow", "echo", [{"text": "up"}]))
    stopped = threading.Event()
    threading.Timer(0.3, stopped.set).start()
    with pytest.raises(Interrupted):
        mcp_sleep(mcp_tools, CallDeadline(stopped=stopped))
