"""An answer cut off by the output limit, from local servers speaking each provider's wire
protocol: reported as cut off (not as "did not return JSON"), not re-asked with the same
limit, and every attempt's finish reason in the trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

import agentscript
from agentscript.app.configuration import RunConfig
from llm_support import SECRET_KEY, json_response, program, run

TRUNCATED = '{"answer": "Rayleigh scatt'


def openai(content: str, reason: str) -> dict[str, Any]:
    return {
        "model": "local",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": reason,
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 8},
    }


def anthropic(content: str, reason: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [{"type": "text", "text": content}],
        "stop_reason": {"length": "max_tokens", "stop": "end_turn"}[reason],
        "usage": {"input_tokens": 50, "output_tokens": 8},
    }


def ollama(content: str, reason: str) -> dict[str, Any]:
    return {
        "model": "llama",
        "message": {"role": "assistant", "content": content},
        "done": True,
        "done_reason": reason,
        "prompt_eval_count": 50,
        "eval_count": 8,
    }


PROVIDERS = {
    "openai": ("/v1/chat/completions", openai, "OPENAI_BASE_URL", "/v1", "length"),
    "anthropic": ("/v1/messages", anthropic, "ANTHROPIC_BASE_URL", "/v1", "max_tokens"),
    "ollama": ("/api/chat", ollama, "OLLAMA_BASE_URL", "", "length"),
}


def environ(httpserver: HTTPServer, protocol: str) -> dict[str, str]:
    _, _, variable, base, _ = PROVIDERS[protocol]
    return {
        variable: httpserver.url_for(base) if base else httpserver.url_for("/").rstrip("/"),
        "OPENAI_API_KEY": SECRET_KEY,
        "ANTHROPIC_API_KEY": SECRET_KEY,
    }


def generate_event(error: agentscript.ExecutionError) -> dict[str, Any]:
    trace = error.trace or []
    return next(event for event in trace if event["kind"] == "generate")


@pytest.mark.parametrize("protocol", sorted(PROVIDERS))
def test_a_cut_off_answer_says_so_and_spends_no_further_attempt(
    httpserver: HTTPServer, protocol: str
) -> None:
    path, answer, _, _, reason = PROVIDERS[protocol]
    httpserver.expect_request(path).respond_with_json(answer(TRUNCATED, "length"))
    source = program(f"{protocol}://m", options="max_output: 8", attempts=3)
    with pytest.raises(agentscript.ExecutionError) as caught:
        run(source, environ(httpserver, protocol))
    message = str(caught.value)
    assert "answer was cut off at the output limit" in message
    assert f"finish reason {reason}" in message
    assert "raise the generate's max_output" in message
    assert "did not return JSON" not in message
    assert caught.value.position is not None  # located at the generate
    assert len(httpserver.log) == 1
    event = generate_event(caught.value)
    assert event["data"]["finish_reasons"] == [reason]
    assert event["data"]["attempts"] == 1


def test_invalid_json_that_was_not_cut_off_is_repaired_and_each_reason_traced(
    httpserver: HTTPServer,
) -> None:
    answers = iter(
        [openai("not json at all", "stop"), openai(json.dumps({"answer": "a", "score": 1}), "stop")]
    )
    httpserver.expect_request("/v1/chat/completions").respond_with_handler(
        lambda request: json_response(next(answers))
    )
    result = run(program("openai://m", attempts=3), environ(httpserver, "openai"))
    assert result.value == {"answer": "a", "score": 1}
    event = next(event for event in result.trace if event["kind"] == "generate")
    assert event["data"]["finish_reasons"] == ["stop", "stop"]
    assert len(httpserver.log) == 2


def test_a_replayed_cut_off_stops_where_the_recorded_run_stopped(
    httpserver: HTTPServer, tmp_path: Path
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(openai(TRUNCATED, "length"))
    source = program("openai://m", options="max_output: 8", attempts=3)
    recording = tmp_path / "cassette.jsonl"
    with pytest.raises(agentscript.ExecutionError) as recorded:
        run(source, environ(httpserver, "openai"), record=recording)
    httpserver.clear()
    with pytest.raises(agentscript.ExecutionError) as replayed:
        agentscript.run(
            agentscript.load_source(source),
            {"question": "Why is the sky blue?"},
            RunConfig(replay=recording, environ={}),
        )
    assert str(replayed.value) == str(recorded.value)
    assert generate_event(replayed.value)["data"]["finish_reasons"] == ["length"]
    assert httpserver.log == []


def test_a_balanced_fragment_of_a_cut_off_answer_is_not_taken_for_the_answer(
    httpserver: HTTPServer,
) -> None:
    # The outer object was cut off; the inner one is balanced JSON but not the answer.
    fragment = '{"detail": {"answer": "a", "score": 1}, "answer": "Rayleigh scatt'
    httpserver.expect_request("/v1/chat/completions").respond_with_json(openai(fragment, "length"))
    source = program("openai://m", options="max_output: 20", attempts=2)
    with pytest.raises(agentscript.ExecutionError) as caught:
        run(source, environ(httpserver, "openai"))
    assert "answer was cut off at the output limit (max_output 20 tokens" in str(caught.value)
    assert len(httpserver.log) == 1


def test_a_complete_answer_that_ended_at_the_limit_is_used(httpserver: HTTPServer) -> None:
    complete = json.dumps({"answer": "a", "score": 1})
    httpserver.expect_request("/v1/chat/completions").respond_with_json(openai(complete, "length"))
    result = run(program("openai://m", options="max_output: 20"), environ(httpserver, "openai"))
    assert result.value == {"answer": "a", "score": 1}
