"""Which layout each provider gets, seen from local servers speaking each provider's wire
protocol: compact by default (the same prompt for OpenAI, Anthropic and Ollama, with the shape
sent only natively), the 0.1.0 one on request, and recordings that replay in the layout they were
made with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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


SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "score": {"type": "number"}},
    "required": ["answer", "score"],
    "additionalProperties": False,
}


def anthropic_reply(value: object) -> dict[str, object]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": json.dumps(value)}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def anthropic_tool_reply(value: object) -> dict[str, object]:
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "agentscript_generate"}
    return {**anthropic_reply(value), "content": [{**tool_use, "input": value}]}


def ollama_reply(value: object) -> dict[str, object]:
    message = {"role": "assistant", "content": json.dumps(value)}
    return {"message": message, "done": True, "done_reason": "stop"}


Prompt = tuple[str, str, Any]  # system text, user text, the schema as the provider carries it


def openai_prompt(body: dict[str, Any]) -> Prompt:
    system, user = (message["content"] for message in body["messages"])
    return system, user, body["response_format"]["json_schema"]["schema"]


def anthropic_prompt(body: dict[str, Any]) -> Prompt:
    return body["system"], body["messages"][0]["content"], body["output_config"]["format"]["schema"]


def anthropic_tool_prompt(body: dict[str, Any]) -> Prompt:
    (tool,) = body["tools"]
    assert tool == {"name": "agentscript_generate", "input_schema": tool["input_schema"]}
    return body["system"], body["messages"][0]["content"], tool["input_schema"]


def ollama_prompt(body: dict[str, Any]) -> Prompt:
    system, user = (message["content"] for message in body["messages"])
    return system, user, body["format"]


PROVIDERS = {  # uri: (path, environment variable, base path, reply, what the model reads)
    "openai://m": ("/v1/chat/completions", "OPENAI_BASE_URL", "/v1", completion, openai_prompt),
    "anthropic://claude-sonnet-4-5": (
        "/v1/messages",
        "ANTHROPIC_BASE_URL",
        "/v1",
        anthropic_reply,
        anthropic_prompt,
    ),
    "anthropic://claude-3-5-haiku-latest": (
        "/v1/messages",
        "ANTHROPIC_BASE_URL",
        "/v1",
        anthropic_tool_reply,
        anthropic_tool_prompt,
    ),
    "ollama://llama3.1": ("/api/chat", "OLLAMA_BASE_URL", "", ollama_reply, ollama_prompt),
}


@pytest.mark.parametrize("uri", list(PROVIDERS))
def test_every_provider_that_enforces_the_shape_gets_the_same_compact_prompt(
    httpserver: HTTPServer, uri: str
) -> None:
    path, variable, base, reply, prompt_of = PROVIDERS[uri]
    httpserver.expect_request(path).respond_with_json(reply(ANSWER))
    environ = {
        variable: httpserver.url_for(base),
        "OPENAI_API_KEY": SECRET_KEY,
        "ANTHROPIC_API_KEY": SECRET_KEY,
    }
    result = run(program(uri), environ)
    (body,) = request_bodies(httpserver)
    system, user, schema = prompt_of(body)
    # No agent name beside the role, no printed schema, no note asking for JSON: the schema
    # goes out once, where the provider enforces it.
    assert system == "Role: Analyst. Answers briefly."
    assert user == "input.question:\nWhy is the sky blue?\nInstruction:\nAnswer the question."
    assert schema == SCHEMA
    assert result.value == ANSWER


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
