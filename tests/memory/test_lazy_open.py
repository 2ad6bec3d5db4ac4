"""Long-lived readers (CLI, MCP server, memory:// tools) open the service with lazy compaction
when memory.yml names a timeline model; the model is reached through the real provider layer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from agentscript.app.memory_service import open_memory_service
from agentscript.cli.main import main


def completion(text: str) -> dict[str, object]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


@pytest.fixture
def workspace(tmp_path: Path, httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".agentscript").mkdir()
    (tmp_path / ".agentscript" / "memory.yml").write_text(
        "timeline:\n  model: openai://summarizer\n  week: false\n  month: false\n  year: false\n"
    )
    monkeypatch.setenv("OPENAI_BASE_URL", httpserver.url_for("/v1"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    httpserver.expect_request("/v1/chat/completions").respond_with_json(
        completion("Release day\nShipped 2.3 after fixing the cache bug.")
    )
    return tmp_path


def test_reading_summarises_ended_days_through_the_configured_model(
    workspace: Path, httpserver: HTTPServer
) -> None:
    with open_memory_service(workspace) as service:
        service.remember("Fixed the cache bug", kind="episodic", event_time="2026-01-05")
        service.remember("Shipped 2.3", kind="episodic", event_time="2026-01-05")
        result = service.recall("cache")
        assert result["compaction"]["written"] == 1
        summaries = service.recall("", kind="summary")["results"]
    assert [s["title"] for s in summaries] == ["Release day"]
    assert len(httpserver.log) == 1


def test_without_a_model_reads_never_call_one(tmp_path: Path, httpserver: HTTPServer) -> None:
    with open_memory_service(tmp_path) as service:
        service.remember("Old event", kind="episodic", event_time="2026-01-05")
        assert "compaction" not in service.recall("event")
    assert httpserver.log == []


def test_the_cli_reads_with_lazy_compaction(
    workspace: Path, httpserver: HTTPServer, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--workspace", str(workspace), "--json"]
    assert main(["memory", "remember", "Rolled back 2.2", "--kind", "episodic", *args]) == 0
    capsys.readouterr()
    with open_memory_service(workspace) as service:
        # Move the entry into an ended day, as if it had been written last week.
        service.remember("Old incident", kind="episodic", event_time="2026-01-05")
    httpserver.clear_log()
    assert main(["memory", "recall", "incident", *args]) == 0
    output = json.loads(capsys.readouterr().out)
    assert output["compaction"]["written"] == 1
    assert len(httpserver.log) == 1
