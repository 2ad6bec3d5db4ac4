"""Which layout each provider gets, seen from a local server speaking the OpenAI wire protocol:
compact by default, the 0.1.0 one on request, and recordings that replay in the layout they were
made with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

import agentscript
from agentscript.app.configuration import RunConfig
from agentscript.cli.main import main
from llm_support import SECRET_KEY, json_response, program, request_bodies, run

ANSWER = {"answer": "scattering", "score": 1}


def completion(value: object) -> dict[str, object]:
    message = {"role": "assistant", "content": json.dumps(value)}
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


def environ(httpserver: HTTPServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": SECRET_KEY, "OPENAI_BASE_URL": httpserver.url_for("/v1")}


def test_the_schema_goes_out_once_by_default(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(completion(ANSWER))
    run(program("openai://m"), environ(httpserver))
    (body,) = request_bodies(httpserver)
    assert "response_format" in body
    assert "Return JSON matching this schema" not in body["messages"][1]["content"]


def test_the_0_1_0_layout_can_be_asked_for(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(completion(ANSWER))
    run(program("openai://m"), environ(httpserver), prompt_layout="0.1.0")
    (body,) = request_bodies(httpserver)
    user = body["messages"][1]["content"]
    assert user.startswith("Context:\n[0] input.question:\nWhy is the sky blue?\nInstruction:")
    assert "Return JSON matching this schema:\n{\n" in user
    assert "response_format" in body  # the provider still enforces the shape


def test_a_compact_recording_replays_offline(httpserver: HTTPServer, tmp_path: Path) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_handler(
        lambda request: json_response(completion(ANSWER))
    )
    recording = tmp_path / "cassette.jsonl"
    recorded = run(program("openai://m"), environ(httpserver), record=recording)
    (line,) = [json.loads(text) for text in recording.read_text().splitlines()]
    assert line["request"]["layout"] == "compact"
    httpserver.clear()
    replayed = agentscript.run(
        agentscript.load_source(program("openai://m")),
        {"question": "Why is the sky blue?"},
        RunConfig(replay=recording, environ={}, journal=False, learn=False),
    )
    assert replayed.value == recorded.value == ANSWER
    assert httpserver.log == []


def test_a_recording_made_in_the_0_1_0_layout_still_replays(
    httpserver: HTTPServer, tmp_path: Path
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(completion(ANSWER))
    recording = tmp_path / "old.jsonl"
    run(program("openai://m"), environ(httpserver), record=recording, prompt_layout="0.1.0")
    assert "layout" not in json.loads(recording.read_text())["request"]
    replayed = agentscript.run(
        agentscript.load_source(program("openai://m")),
        {"question": "Why is the sky blue?"},
        RunConfig(replay=recording, environ={}, journal=False, learn=False),
    )
    assert replayed.value == ANSWER


def test_the_dry_run_shows_where_the_tokens_go(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ask.as"
    path.write_text(program("openai://m"), encoding="utf-8")
    code = main(["run", str(path), "--input", '{"question": "Why?"}', "--dry-run"])
    assert code == 0
    tokens = capsys.readouterr().err.split("--- tokens ---\n")[1].splitlines()[0]
    assert tokens.startswith("system ")
    assert "[0] " in tokens and "instruction " in tokens and "schema " in tokens
    assert tokens.endswith("(estimated)")
