"""Closed choices on the wire: the exact JSON schema each provider that enforces schemas receives
(OpenAI json_schema, strict too; Anthropic output_config and forced tool; Ollama format), the
0.1.0 layout stating the choices in words to a server told the shape only in the prompt, and a
wrong choice from a real HTTP answer repaired within the attempts."""

from __future__ import annotations

import json
from typing import Any

from pytest_httpserver import HTTPServer

from llm_support import (
    SECRET_KEY,
    Sequence,
    json_response,
    openai_completion,
    program,
    request_bodies,
    run,
)

SHAPE = '{ category: "billing" | "bug" | "feature", priority: 1 | 2 | 3, tags: list["ui" | "api"] }'
SCHEMA = {
    "type": "object",
    "properties": {
        "category": {"type": "string", "enum": ["billing", "bug", "feature"]},
        "priority": {"type": "number", "enum": [1, 2, 3]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["ui", "api"]}},
    },
    "required": ["category", "priority", "tags"],
    "additionalProperties": False,
}
ANSWER = {"category": "bug", "priority": 2, "tags": ["api"]}


def openai_environ(server: HTTPServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": SECRET_KEY, "OPENAI_BASE_URL": server.url_for("/v1")}


def test_openai_gets_the_choices_as_an_enum_in_a_strict_json_schema(
    httpserver: HTTPServer,
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(
        openai_completion(json.dumps(ANSWER))
    )
    result = run(program("openai://m", shape=SHAPE), openai_environ(httpserver))
    assert request_bodies(httpserver)[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "agentscript_generate", "strict": True, "schema": SCHEMA},
    }
    assert result.value == ANSWER


def test_anthropic_gets_the_enum_in_output_config_and_in_the_forced_tool(
    httpserver: HTTPServer,
) -> None:
    def message(block: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 8, "output_tokens": 4},
        }

    httpserver.expect_request("/v1/messages").respond_with_handler(
        Sequence(
            json_response(message({"type": "text", "text": json.dumps(ANSWER)})),
            json_response(
                message(
                    {"type": "tool_use", "id": "t", "name": "agentscript_generate", "input": ANSWER}
                )
            ),
        )
    )
    environ = {"ANTHROPIC_API_KEY": SECRET_KEY, "ANTHROPIC_BASE_URL": httpserver.url_for("/v1")}
    assert run(program("anthropic://claude-sonnet-4-5", shape=SHAPE), environ).value == ANSWER
    assert run(program("anthropic://claude-3-5-haiku-latest", shape=SHAPE), environ).value == ANSWER
    structured, tooled = request_bodies(httpserver)
    assert structured["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    assert tooled["tools"][0]["input_schema"] == SCHEMA


def test_ollama_gets_the_enum_in_format(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/chat").respond_with_json(
        {
            "model": "llama3.1",
            "message": {"role": "assistant", "content": json.dumps(ANSWER)},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 4,
            "eval_count": 2,
        }
    )
    result = run(
        program("ollama://llama3.1", shape=SHAPE), {"OLLAMA_BASE_URL": httpserver.url_for("")}
    )
    assert request_bodies(httpserver)[0]["format"] == SCHEMA
    assert result.value == ANSWER


def test_the_original_layout_states_the_choices_in_the_prompt_and_repairs_a_wrong_one(
    httpserver: HTTPServer,
) -> None:
    wrong = {**ANSWER, "category": "Billing, bug"}
    httpserver.expect_request("/v1/chat/completions").respond_with_handler(
        Sequence(
            json_response(openai_completion(json.dumps(wrong))),
            json_response(openai_completion(json.dumps(ANSWER))),
        )
    )
    result = run(
        program("openai://m", shape=SHAPE, attempts=2),
        openai_environ(httpserver),
        prompt_layout="0.1.0",
    )
    assert result.value == ANSWER
    first, second = (body["messages"][-1]["content"] for body in request_bodies(httpserver))
    assert first.endswith(
        "Use exactly one of the listed values for these fields:\n"
        'category: one of "billing", "bug", "feature"\n'
        "priority: one of 1, 2, 3\n"
        'tags: each item one of "ui", "api"'
    )
    assert (
        'LLM result field \'category\' must be one of "billing", "bug", "feature", '
        'got "Billing, bug"'
    ) in second
