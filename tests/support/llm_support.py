"""Support for the model-provider tests: programs that call a model, and a runner wired to a
local HTTP server that speaks the provider's wire protocol (pytest-httpserver)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_httpserver import HTTPServer
from werkzeug.wrappers import Request, Response

import agentscript
from agentscript.app.configuration import RunConfig

SECRET_KEY = "sk-test-SECRET-0123456789"


def program(
    uri: str,
    *,
    shape: str = "{ answer string, score number }",
    options: str = "",
    attempts: int = 1,
) -> str:
    """One agent whose main func asks the model once, with the given shape and options."""
    arrow = f" -> {shape}" if shape else ""
    extra = f", {options}" if options else ""
    return f"""
import llm Model from "{uri}"

agent Asker {{
  model Model
  role "Analyst"
  description "Answers briefly."
  main func(input {{ question string }}) {{
    use input.question
    return generate({{ input: "Answer the question.", attempts: {attempts}{extra} }}){arrow}
  }}
}}
"""


def run(
    source: str,
    environ: Mapping[str, str],
    *,
    tmp_path: Path | None = None,
    **config: Any,
) -> agentscript.RunResult:
    """Run `source` against the real providers configured by `environ`, without retry waits."""
    from agentscript.providers.llm.router import ModelRouter

    waits: list[float] = config.pop("waits", [])
    router = ModelRouter(environ, sleep=waits.append)
    path = tmp_path / "program.as" if tmp_path else None
    if path is not None:
        path.write_text(source, encoding="utf-8")
    loaded = agentscript.load(path) if path else agentscript.load_source(source)
    try:
        return agentscript.run(
            loaded,
            {"question": "Why is the sky blue?"},
            RunConfig(model=config.pop("model", router), environ=environ, **config),
        )
    finally:
        router.close()


def request_bodies(server: HTTPServer) -> list[dict[str, Any]]:
    return [json.loads(request.get_data(as_text=True)) for request, _ in server.log]


def openai_completion(content: str) -> dict[str, Any]:
    """A chat-completions answer (model `m`) whose message is `content`."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def json_response(
    payload: Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    return Response(
        json.dumps(payload), status=status, headers=headers, content_type="application/json"
    )


class Sequence:
    """A request handler answering with the given responses in turn (the last one repeats)."""

    def __init__(self, *responses: Response) -> None:
        self.responses = list(responses)
        self.calls = 0

    def __call__(self, request: Request) -> Response:
        self.calls += 1
        index = min(self.calls, len(self.responses)) - 1
        return self.responses[index]
