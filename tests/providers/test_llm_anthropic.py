"""The Anthropic provider against a local server speaking the Messages API wire protocol."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

import agentscript
from agentscript.providers.llm.anthropic import supports_structured_outputs
from llm_support import SECRET_KEY, Sequence, json_response, program, request_bodies, run

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "score": {"type": "number"}},
    "required": ["answer", "score"],
    "additionalProperties": False,
}


def message(*blocks: dict[str, Any], stop_reason: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": list(blocks),
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 80, "output_tokens": 12},
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


@pytest.fixture
def environ(httpserver: HTTPServer) -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": SECRET_KEY, "ANTHROPIC_BASE_URL": httpserver.url_for("/v1")}


def test_structured_output_models_get_output_config(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    httpserver.expect_request("/v1/messages", method="POST").respond_with_json(
        message(text(json.dumps({"answer": "scattering", "score": 1})))
    )
    result = run(
        program("anthropic://claude-sonnet-4-5", options="max_output: 200, temperature: 0"), environ
    )
    request, _ = httpserver.log[0]
    assert request.headers["x-api-key"] == SECRET_KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    body = request_bodies(httpserver)[0]
    assert body["model"] == "claude-sonnet-4-5"
    assert body["max_tokens"] == 200
    assert body["system"] == "Role: Analyst. Answers briefly."
    assert body["messages"][0]["role"] == "user"
    assert body["temperature"] == 0
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    assert "tools" not in body
    assert result.value == {"answer": "scattering", "score": 1}
    generate = next(event for event in result.trace if event["kind"] == "generate")
    assert generate["data"]["usage"] == {"input_tokens": 80, "output_tokens": 12}


def test_older_models_are_forced_to_answer_through_a_single_tool(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    tool_use = {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "agentscript_generate",
        "input": {"answer": "scattering", "score": 0.5},
    }
    httpserver.expect_request("/v1/messages").respond_with_json(
        message(tool_use, stop_reason="tool_use")
    )
    result = run(program("anthropic://claude-3-5-haiku-latest"), environ)
    body = request_bodies(httpserver)[0]
    assert body["max_tokens"] == 1024
    assert body["tools"][0]["name"] == "agentscript_generate"
    assert body["tools"][0]["input_schema"] == SCHEMA
    assert body["tool_choice"] == {"type": "tool", "name": "agentscript_generate"}
    assert "output_config" not in body
    assert result.value == {"answer": "scattering", "score": 0.5}


@pytest.mark.parametrize(
    ("model", "structured"),
    [
        ("claude-sonnet-4-5", True),
        ("claude-sonnet-4-5-20250929", True),
        ("claude-haiku-4-5", True),
        ("claude-opus-4-1", True),
        ("claude-opus-4-6", True),
        ("claude-sonnet-5", True),
        ("claude-sonnet-4-0", False),
        ("claude-sonnet-4-20250514", False),
        ("claude-3-7-sonnet-latest", False),
        ("some-gateway-model", False),
    ],
)
def test_structured_output_support_by_model_name(model: str, structured: bool) -> None:
    assert supports_structured_outputs(model) is structured


def test_text_blocks_are_concatenated_for_free_form_generates(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    httpserver.expect_request("/v1/messages").respond_with_json(
        message(text("Blue "), text("light."))
    )
    result = run(program("anthropic://claude-sonnet-4-5", shape=""), environ)
    assert "output_config" not in request_bodies(httpserver)[0]
    assert result.value == "Blue light."


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (message(text("x"), stop_reason="refusal"), "LLM provider 'anthropic' refused the request"),
        (
            {"type": "message", "content": []},
            "LLM provider 'anthropic' response is missing content",
        ),
        ({"type": "message"}, "LLM provider 'anthropic' response is missing content"),
    ],
)
def test_refusals_and_empty_answers_are_clear_errors(
    httpserver: HTTPServer, environ: dict[str, str], payload: dict[str, Any], error: str
) -> None:
    httpserver.expect_request("/v1/messages").respond_with_json(payload)
    with pytest.raises(agentscript.ExecutionError) as caught:
        run(program("anthropic://claude-sonnet-4-5", attempts=2), environ)
    assert str(caught.value).startswith(error)


def test_overloaded_is_retried_and_error_bodies_are_read(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    overloaded = json_response(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        status=529,
    )
    invalid = json_response(
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "max_tokens: too large"},
        },
        status=400,
    )
    httpserver.expect_request("/v1/messages").respond_with_handler(Sequence(overloaded, invalid))
    waits: list[float] = []
    with pytest.raises(agentscript.ExecutionError) as caught:
        run(program("anthropic://claude-sonnet-4-5"), environ, waits=waits)
    assert str(caught.value).startswith(
        "LLM provider 'anthropic' request failed (400): max_tokens: too large"
    )
    assert waits == [0.5]


def test_missing_key_fails_before_any_request(httpserver: HTTPServer) -> None:
    with pytest.raises(agentscript.ExecutionError) as caught:
        run(program("anthropic://claude-sonnet-4-5"), {})
    assert str(caught.value).startswith("ANTHROPIC_API_KEY is required for anthropic:// models")
    assert httpserver.log == []
