"""Support for the run page tests: a journaled run of tests/fixtures/run_view/everything.as
against a local server speaking the OpenAI chat-completions protocol (with token usage), so
the page has every kind of step, real tokens and a price to show."""

from __future__ import annotations

import json
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_httpserver import HTTPServer
from werkzeug.wrappers import Request, Response

import agentscript

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "run_view" / "everything.as"
SECRET = "tok-SECRET-4242"
TOPICS = ["tides", "stars", "rivers"]


class WriterAndLead:
    """Answers as the model: the Writer's first answer has the wrong type (so it is repaired),
    later ones and the Lead's are right. Every answer reports its token usage."""

    def __init__(self, writer_fails: bool = False) -> None:
        self.lock = threading.Lock()
        self.writer_calls = 0
        self.writer_fails = writer_fails

    def __call__(self, request: Request) -> Response:
        body = json.loads(request.get_data(as_text=True))
        shape = body["response_format"]["json_schema"]["schema"]["properties"]
        if "line" in shape:  # the Writer's
            with self.lock:
                self.writer_calls += 1
                first = self.writer_calls == 1
            wrong = first or self.writer_fails
            answer: Any = {"line": 5} if wrong else {"line": f"Line {self.writer_calls}."}
        else:
            answer = {"summary": "Three lines were written."}
        payload = {
            "model": "gpt-4.1-mini-2025-04-14",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": json.dumps(answer)},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 120, "completion_tokens": 12},
        }
        return Response(json.dumps(payload), content_type="application/json")


@dataclass(frozen=True, slots=True)
class ViewedRun:
    workspace: Path
    run_id: str
    # None when the run failed.
    result: agentscript.RunResult | None


def run_everything(
    server: HTTPServer,
    workspace: Path,
    previous: str = "none",
    writer_fails: bool = False,
    extra_environ: dict[str, str] | None = None,
    **config: Any,
) -> ViewedRun:
    """Run the fixture journaled in `workspace`; its input names `previous` (a run it
    "called", for the page's links). With `writer_fails` the Writer never answers right, so
    the run fails in its `parallel for`."""
    server.expect_request("/v1/chat/completions").respond_with_handler(WriterAndLead(writer_fails))
    workspace.mkdir(parents=True, exist_ok=True)
    program = workspace / FIXTURE.name
    shutil.copy(FIXTURE, program)
    environ = {
        "OPENAI_API_KEY": "sk-test-key",
        "OPENAI_BASE_URL": server.url_for("/v1"),
        "VIEW_TOKEN": SECRET,
        **(extra_environ or {}),
    }
    settings: dict[str, Any] = {
        "environ": environ,
        "workspace": workspace,
        "approve": "auto",
        "env_allow": ["VIEW_TOKEN"],
        "concurrency": 1,
        "learn": False,
        **config,
    }
    try:
        result = agentscript.run(
            agentscript.load(program),
            {"topics": TOPICS, "previous": previous},
            agentscript.RunConfig(**settings),
        )
    except agentscript.ExecutionError as error:
        journal = error.journal
        assert journal is not None
        assert journal.wait(30) == []
        return ViewedRun(workspace, journal.run_id, None)
    assert result.journal is not None
    assert result.journal.wait(30) == []
    return ViewedRun(workspace, result.journal.run_id, result)
