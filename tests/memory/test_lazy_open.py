"""Long-lived readers (CLI, MCP server, memory:// tools) open the service with compaction on:
extractive summaries inside the read, and, when memory.yml names a timeline model, that model
rewriting them on a background worker, reached through the real provider layer (an HTTP server
speaking the OpenAI wire protocol). Several processes on one database make one call per
summary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from agentscript.app.memory_service import open_memory_service
from agentscript.cli.main import main
from agentscript.memory.compaction import CompactionHooks, LazyCompaction

MODEL_SECONDS = 0.5


def completion(text: str) -> dict[str, object]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


def slow_model(request: Request) -> Response:
    """A model that takes MODEL_SECONDS to answer, so a read that waited on it would show."""
    time.sleep(MODEL_SECONDS)
    body = json.dumps(completion("Release day\nShipped 2.3 after fixing the cache bug."))
    return Response(body, content_type="application/json")


@pytest.fixture
def workspace(tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".agentscript").mkdir()
    (tmp_path / ".agentscript" / "memory.yml").write_text(
        "timeline:\n  model: openai://summarizer\n  week: false\n  month: false\n  year: false\n"
    )
    monkeypatch.setenv("OPENAI_BASE_URL", httpserver.url_for("/v1"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    httpserver.expect_request("/v1/chat/completions").respond_with_handler(slow_model)
    return tmp_path


def test_a_read_returns_before_the_model_and_the_worker_rewrites_the_summary(
    workspace: Path, httpserver: HTTPServer
) -> None:
    with open_memory_service(workspace) as service:
        service.remember("Fixed the cache bug", kind="episodic", event_time="2026-01-05")
        service.remember("Shipped 2.3", kind="episodic", event_time="2026-01-05")
        hook = service.before_read
        assert isinstance(hook, CompactionHooks)

        result = service.recall("cache")

        # The read wrote the extractive day summary itself and left the model to the worker.
        assert result["compaction"]["written"] == 1
        (hit,) = result["results"]
        assert hit["title"] == "Monday 5 January 2026: 2 entries"
        assert len(httpserver.log) == 0 or hook.wait(0) is False
        assert hook.wait(30)
        rewritten = service.get(hit["id"])
    assert rewritten["title"] == "Release day"
    assert rewritten["source"] == {"reason": "day compaction"}
    assert len(httpserver.log) == 1


def test_without_a_model_reads_compact_without_calling_one(
    tmp_path: Path, httpserver: HTTPServer
) -> None:
    with open_memory_service(tmp_path) as service:
        assert isinstance(service.before_read, LazyCompaction)
        service.remember("Old event", kind="episodic", event_time="2026-01-05")
        recalled = service.recall("event")
        # Day, week and month of January 2026 have all ended: the whole chain is written.
        assert recalled["compaction"]["written"] == 3
        (hit,) = recalled["results"]
        assert service.get(hit["id"])["source"] == {"reason": "month compaction, extractive"}
    assert httpserver.log == []


def test_the_cli_reads_with_compaction_and_one_call_per_summary(
    workspace: Path, httpserver: HTTPServer, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--workspace", str(workspace), "--json"]
    with open_memory_service(workspace) as service:
        service.remember("Old incident", kind="episodic", event_time="2026-01-05")
    assert main(["memory", "recall", "incident", *args]) == 0
    output = json.loads(capsys.readouterr().out)
    assert output["compaction"]["written"] == 1
    # The one-shot CLI may close before its worker asked the model; `memory compact` then
    # rewrites what is left. Either way the summary costs one call.
    assert main(["memory", "compact", *args]) == 0
    capsys.readouterr()
    assert len(httpserver.log) == 1


RACER = """
import sys
from agentscript.app.memory_service import open_memory_service
with open_memory_service(sys.argv[1], database=sys.argv[2]) as service:
    service.recall("")
    assert service.before_read.wait(60)
print("done")
"""


def test_concurrent_processes_make_one_model_call_per_summary(
    workspace: Path, tmp_path: Path, httpserver: HTTPServer
) -> None:
    database = tmp_path / "shared.db"
    days = ["2026-01-05", "2026-01-06", "2026-01-07"]
    with open_memory_service(workspace, database=database) as service:
        service.before_read = None  # prepare the entries without compacting them
        for day in days:
            service.remember(f"Incident on {day}", kind="episodic", event_time=day)
    environment = {**os.environ, "OPENAI_BASE_URL": httpserver.url_for("/v1")}
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(workspace), str(database)],
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for racer in racers:
        out, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err
        assert out.strip() == "done"
    with open_memory_service(workspace, database=database) as service:
        service.before_read = None
        summaries = service.recall("", kind="summary")["results"]
        rewritten = [s for s in summaries if service.get(s["id"])["title"] == "Release day"]
    assert len(summaries) == 3
    # No summary was asked for twice, whatever the interleaving.
    assert len(httpserver.log) == len(rewritten) >= 1
    assert main(["memory", "compact", "--workspace", str(workspace), "--db", str(database)]) == 0
    assert len(httpserver.log) == 3
