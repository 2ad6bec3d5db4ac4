"""The Ollama provider against a local server speaking the native /api/chat protocol."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

import agentscript
from llm_support import program, request_bodies, run

ANSWER = json.dumps({"answer": "scattering", "score": 2})


def chat(content: str, thinking: str | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking is not None:
        answer["thinking"] = thinking
    return {
        "model": "llama3.1",
        "created_at": "2026-11-30T00:00:00Z",
        "message": answer,
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 40,
        "eval_count": 9,
    }


@pytest.fixture
def environ(httpserver: HTTPServer) -> dict[str, str]:
    return {"OLLAMA_BASE_URL": httpserver.url_for("")}


def test_request_body_follows_the_native_chat_protocol(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    httpserver.expect_request("/api/chat", method="POST").respond_with_json(chat(ANSWER))
    result = run(program("ollama://llama3.1", options="max_output: 64, temperature: 0.1"), environ)
    body = request_bodies(httpserver)[0]
    assert body["model"] == "llama3.1"
    assert body["stream"] is False
    assert body["think"] is False
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["format"]["properties"] == {
        "answer": {"type": "string"},
        "score": {"type": "number"},
    }
    assert body["options"] == {"num_predict": 64, "temperature": 0.1}
    assert result.value == {"answer": "scattering", "score": 2}
    generate = next(event for event in result.trace if event["kind"] == "generate")
    assert generate["data"]["usage"] == {"input_tokens": 40, "output_tokens": 9}


def test_host_and_port_in_the_uri_beat_the_environment(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/chat").respond_with_json(chat(ANSWER))
    host = f"{httpserver.host}:{httpserver.port}"
    run(program(f"ollama://{host}/qwen3:8b"), {"OLLAMA_BASE_URL": "http://127.0.0.1:9"})
    assert request_bodies(httpserver)[0]["model"] == "qwen3:8b"


def test_ollama_host_variable_is_honoured(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/chat").respond_with_json(chat(ANSWER))
    run(program("ollama://llama3.1"), {"OLLAMA_HOST": f"{httpserver.host}:{httpserver.port}"})
    assert len(httpserver.log) == 1


@pytest.mark.parametrize(("think", "sent"), [("true", True), ('"high"', "high"), ('"auto"', None)])
def test_think_option_is_passed_through(
    httpserver: HTTPServer, environ: dict[str, str], think: str, sent: Any
) -> None:
    httpserver.expect_request("/api/chat").respond_with_json(chat(ANSWER))
    run(program("ollama://m", options=f"think: {think}"), environ)
    assert request_bodies(httpserver)[0].get("think", None) == sent


def test_free_form_generate_sends_no_format(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    httpserver.expect_request("/api/chat").respond_with_json(chat("Because of scattering."))
    result = run(program("ollama://m", shape=""), environ)
    assert "format" not in request_bodies(httpserver)[0]
    assert result.value == "Because of scattering."


def test_thinking_without_content_is_a_clear_error(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    httpserver.expect_request("/api/chat").respond_with_json(chat("", thinking="Let me think..."))
    with pytest.raises(agentscript.ExecutionError) as caught:
        run(program("ollama://m", options="think: true", attempts=2), environ)
    assert str(caught.value).startswith(
        "Ollama returned thinking output but no final content. "
        "Increase generate max_output or disable think."
    )
    assert len(httpserver.log) == 1


def test_unknown_model_reports_the_servers_error(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    httpserver.expect_request("/api/chat").respond_with_json(
        {"error": "model 'nope' not found, try pulling it first"}, status=404
    )
    with pytest.raises(agentscript.ExecutionError) as caught:
        run(program("ollama://nope"), environ)
    assert str(caught.value).startswith(
        "LLM provider 'ollama' request failed (404): model 'nope' not found, try pulling it first"
    )


def test_unreachable_server_is_a_clear_error() -> None:
    with pytest.raises(agentscript.ExecutionError) as caught:
        run(program("ollama://m"), {"OLLAMA_BASE_URL": "http://127.0.0.1:9"})
    assert str(caught.value).startswith("LLM provider 'ollama' request failed:")
    assert "http://127.0.0.1:9/api/chat" in str(caught.value)
