"""Streamed answers from local servers speaking each provider's streaming wire format: SSE
for OpenAI Chat Completions and the Anthropic Messages API, NDJSON for Ollama's /api/chat.

The text arrives piece by piece at the trace sinks and is still checked against the shape
once it is complete (and repaired when it does not match)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug.wrappers import Request, Response

import agentscript
from agentscript.runtime.trace import TraceSink
from llm_support import SECRET_KEY, Sequence, json_response, program, request_bodies, run

ANSWER = {"answer": "Rayleigh scattering", "score": 0.9}
ANSWER_TEXT = json.dumps(ANSWER)


class Pieces(TraceSink):
    """Collects the streamed text; `first` is set when the first piece arrives."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.first = threading.Event()

    def text_delta(self, text: str) -> None:
        self.pieces.append(text)
        self.first.set()


def split(text: str, parts: int = 4) -> list[str]:
    size = max(1, len(text) // parts)
    return [text[index : index + size] for index in range(0, len(text), size)]


def sse(events: list[tuple[str | None, Any]]) -> str:
    lines = []
    for name, data in events:
        if name is not None:
            lines.append(f"event: {name}")
        lines.append(f"data: {data if isinstance(data, str) else json.dumps(data)}")
        lines.append("")
    return "\n".join(lines) + "\n"


def openai_stream(text: str) -> list[tuple[str | None, Any]]:
    chunks: list[tuple[str | None, Any]] = [
        (None, {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
    ]
    chunks += [
        (None, {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
        for piece in split(text)
    ]
    chunks.append((None, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    chunks.append((None, {"choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 9}}))
    chunks.append((None, "[DONE]"))
    return chunks


def anthropic_stream(text: str, tool: bool = False) -> list[tuple[str | None, Any]]:
    block = (
        {"type": "tool_use", "id": "t1", "name": "agentscript_generate", "input": {}}
        if tool
        else {"type": "text", "text": ""}
    )
    delta_type, key = ("input_json_delta", "partial_json") if tool else ("text_delta", "text")
    events: list[tuple[str | None, Any]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {"id": "m1", "role": "assistant", "usage": {"input_tokens": 33}},
            },
        ),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
        ("ping", {"type": "ping"}),
    ]
    events += [
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": delta_type, key: piece}},
        )
        for piece in split(text)
    ]
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use" if tool else "end_turn"},
                "usage": {"output_tokens": 11},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


def ollama_stream(text: str) -> str:
    lines = [
        json.dumps(
            {"model": "llama3.2", "message": {"role": "assistant", "content": piece}, "done": False}
        )
        for piece in split(text)
    ]
    lines.append(
        json.dumps(
            {
                "model": "llama3.2",
                "message": {"role": "assistant", "content": ""},
                "done": True,
                "prompt_eval_count": 21,
                "eval_count": 8,
            }
        )
    )
    return "\n".join(lines) + "\n"


def streamed(body: str, content_type: str) -> Response:
    return Response(body, content_type=content_type)


def stream_run(source: str, environ: dict[str, str], **config: Any) -> tuple[Any, Pieces]:
    pieces = Pieces()
    result = run(source, environ, stream=True, trace_sinks=[pieces], **config)
    return result, pieces


def generate_event(result: agentscript.RunResult) -> dict[str, Any]:
    (event,) = [event["data"] for event in result.trace if event["kind"] == "generate"]
    return event


# ----------------------------------------------------------------------------- OpenAI


@pytest.fixture
def openai_env(httpserver: HTTPServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": SECRET_KEY, "OPENAI_BASE_URL": httpserver.url_for("/v1")}


def test_openai_answer_streams_and_is_validated(
    httpserver: HTTPServer, openai_env: dict[str, str]
) -> None:
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_response(
        streamed(sse(openai_stream(ANSWER_TEXT)), "text/event-stream")
    )
    result, pieces = stream_run(program("openai://gpt-4.1-mini"), openai_env)
    assert result.value == ANSWER
    assert len(pieces.pieces) >= 4 and "".join(pieces.pieces) == ANSWER_TEXT
    body = request_bodies(httpserver)[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert generate_event(result)["usage"] == {"input_tokens": 40, "output_tokens": 9}


def test_openai_pieces_arrive_before_the_answer_is_complete(
    httpserver: HTTPServer, openai_env: dict[str, str]
) -> None:
    pieces = Pieces()
    seen_before_end: list[bool] = []
    events = openai_stream(ANSWER_TEXT)

    def handler(request: Request) -> Response:
        def body() -> Iterator[str]:
            yield sse(events[:2])
            # The rest is sent only once the client has shown the first piece (or 5 s).
            seen_before_end.append(pieces.first.wait(5))
            yield sse(events[2:])

        return Response(body(), content_type="text/event-stream")

    httpserver.expect_request("/v1/chat/completions").respond_with_handler(handler)
    result = run(program("openai://gpt-4.1-mini"), openai_env, stream=True, trace_sinks=[pieces])
    assert result.value == ANSWER
    assert seen_before_end == [True]


def test_openai_streamed_answer_that_misses_the_shape_is_repaired(
    httpserver: HTTPServer, openai_env: dict[str, str]
) -> None:
    wrong = json.dumps({"answer": "blue", "score": "high"})
    httpserver.expect_request("/v1/chat/completions").respond_with_handler(
        Sequence(
            streamed(sse(openai_stream(wrong)), "text/event-stream"),
            streamed(sse(openai_stream(ANSWER_TEXT)), "text/event-stream"),
        )
    )
    result, _ = stream_run(program("openai://gpt-4.1-mini", attempts=2), openai_env)
    assert result.value == ANSWER
    data = generate_event(result)
    assert (data["attempts"], data["max_attempts"]) == (2, 2)
    assert "'score' must be a number" in data["errors"][0]


def test_openai_rate_limit_is_retried_before_streaming(
    httpserver: HTTPServer, openai_env: dict[str, str]
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_handler(
        Sequence(
            json_response({"error": {"message": "slow down"}}, 429, {"retry-after": "0"}),
            streamed(sse(openai_stream(ANSWER_TEXT)), "text/event-stream"),
        )
    )
    result, _ = stream_run(program("openai://gpt-4.1-mini"), openai_env)
    assert result.value == ANSWER
    assert [event["kind"] for event in result.trace].count("llm_retry") == 1


def test_an_error_sent_mid_stream_fails_with_the_servers_message(
    httpserver: HTTPServer, openai_env: dict[str, str]
) -> None:
    events = [*openai_stream(ANSWER_TEXT)[:2], (None, {"error": {"message": "overloaded"}})]
    httpserver.expect_request("/v1/chat/completions").respond_with_response(
        streamed(sse(events), "text/event-stream")
    )
    with pytest.raises(agentscript.AgentScriptError) as caught:
        stream_run(program("openai://gpt-4.1-mini"), openai_env)
    assert "LLM provider 'openai' stream failed: overloaded" in str(caught.value)


def test_without_a_watcher_the_request_is_not_streamed(
    httpserver: HTTPServer, openai_env: dict[str, str]
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(
        {
            "choices": [{"index": 0, "message": {"content": ANSWER_TEXT}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1},
        }
    )
    result = run(program("openai://gpt-4.1-mini"), openai_env)
    assert result.value == ANSWER
    assert "stream" not in request_bodies(httpserver)[0]


# ----------------------------------------------------------------------------- Anthropic


@pytest.fixture
def anthropic_env(httpserver: HTTPServer) -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": SECRET_KEY, "ANTHROPIC_BASE_URL": httpserver.url_for("/v1")}


@pytest.mark.parametrize(
    ("model", "tool"), [("claude-sonnet-4-5", False), ("claude-3-5-haiku-latest", True)]
)
def test_anthropic_answer_streams_as_text_or_forced_tool_input(
    httpserver: HTTPServer, anthropic_env: dict[str, str], model: str, tool: bool
) -> None:
    httpserver.expect_request("/v1/messages", method="POST").respond_with_response(
        streamed(sse(anthropic_stream(ANSWER_TEXT, tool=tool)), "text/event-stream")
    )
    result, pieces = stream_run(program(f"anthropic://{model}"), anthropic_env)
    assert result.value == ANSWER
    assert "".join(pieces.pieces) == ANSWER_TEXT
    assert request_bodies(httpserver)[0]["stream"] is True
    assert generate_event(result)["usage"] == {"input_tokens": 33, "output_tokens": 11}


def test_anthropic_error_event_fails_the_call(
    httpserver: HTTPServer, anthropic_env: dict[str, str]
) -> None:
    events = [
        *anthropic_stream(ANSWER_TEXT)[:3],
        (
            "error",
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        ),
    ]
    httpserver.expect_request("/v1/messages").respond_with_response(
        streamed(sse(events), "text/event-stream")
    )
    with pytest.raises(agentscript.AgentScriptError) as caught:
        stream_run(program("anthropic://claude-sonnet-4-5"), anthropic_env)
    assert "stream failed: Overloaded" in str(caught.value)


# ----------------------------------------------------------------------------- Ollama


def test_ollama_answer_streams_as_ndjson(httpserver: HTTPServer) -> None:
    environ = {"OLLAMA_BASE_URL": httpserver.url_for("")}
    httpserver.expect_request("/api/chat", method="POST").respond_with_response(
        streamed(ollama_stream(ANSWER_TEXT), "application/x-ndjson")
    )
    result, pieces = stream_run(program("ollama://llama3.2"), environ)
    assert result.value == ANSWER
    assert "".join(pieces.pieces) == ANSWER_TEXT
    assert request_bodies(httpserver)[0]["stream"] is True
    assert generate_event(result)["usage"] == {"input_tokens": 21, "output_tokens": 8}
