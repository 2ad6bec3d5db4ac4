"""The OpenAI provider against a local server speaking the Chat Completions wire protocol."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug.wrappers import Request, Response

import agentscript
from agentscript.runtime.budgets import BudgetExceeded
from llm_support import SECRET_KEY, Sequence, json_response, program, request_bodies, run


def completion(content: str, **extra: Any) -> dict[str, Any]:
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": content},
        "finish_reason": "stop",
    }
    choice.update(extra)
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4.1-mini",
        "choices": [choice],
        "usage": {"prompt_tokens": 120, "completion_tokens": 15, "total_tokens": 135},
    }


ANSWER = json.dumps({"answer": "Rayleigh scattering", "score": 0.9})


@pytest.fixture
def environ(httpserver: HTTPServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": SECRET_KEY, "OPENAI_BASE_URL": httpserver.url_for("/v1")}


def test_request_body_and_headers_follow_the_chat_completions_protocol(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_json(
        completion(ANSWER)
    )
    source = program(
        "openai://gpt-4.1-mini", options='max_output: 300, temperature: 0.2, think: "high"'
    )

    result = run(source, environ)

    request, _ = httpserver.log[0]
    assert request.headers["authorization"] == f"Bearer {SECRET_KEY}"
    assert request.headers["content-type"] == "application/json"
    body = request_bodies(httpserver)[0]
    assert list(body) == [
        "model",
        "messages",
        "response_format",
        "max_completion_tokens",
        "temperature",
        "reasoning_effort",
    ]
    assert body["model"] == "gpt-4.1-mini"
    # The compact layout: the shape goes out as response_format only, not printed as well.
    assert body["messages"][0] == {
        "role": "system",
        "content": "Role: Analyst. Answers briefly.",
    }
    assert body["messages"][1] == {
        "role": "user",
        "content": "input.question:\nWhy is the sky blue?\nInstruction:\nAnswer the question.",
    }
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "agentscript_generate",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {"answer": {"type": "string"}, "score": {"type": "number"}},
                "required": ["answer", "score"],
                "additionalProperties": False,
            },
        },
    }
    assert body["max_completion_tokens"] == 300
    assert body["temperature"] == 0.2
    assert body["reasoning_effort"] == "high"
    assert result.value == {"answer": "Rayleigh scattering", "score": 0.9}


@pytest.mark.parametrize(
    ("shape", "options", "strict"),
    [
        ("{ data json }", "", False),
        ("{ items list }", "", False),
        ("{ items list[string] }", "", True),
        ("{ data json }", "strict: true", True),
        ("{ answer string }", "strict: false", False),
    ],
)
def test_schema_strictness_follows_the_shape_and_the_strict_option(
    httpserver: HTTPServer, environ: dict[str, str], shape: str, options: str, strict: bool
) -> None:
    field = shape.split()[1]
    answer = {"data": {}, "items": ["x"], "answer": "x"}[field]
    httpserver.expect_request("/v1/chat/completions").respond_with_json(
        completion(json.dumps({field: answer}))
    )
    run(program("openai://m", shape=shape, options=options), environ)
    assert request_bodies(httpserver)[0]["response_format"]["json_schema"]["strict"] is strict


def test_free_form_generate_sends_no_response_format_and_returns_text(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(
        completion("The sky scatters blue light.")
    )
    result = run(program("openai://m", shape=""), environ)
    assert "response_format" not in request_bodies(httpserver)[0]
    assert result.value == "The sky scatters blue light."


@pytest.mark.parametrize(
    ("think", "expected"),
    [("true", "medium"), ('"low"', "low"), ("false", None), ('"auto"', None)],
)
def test_think_maps_to_reasoning_effort(
    httpserver: HTTPServer, environ: dict[str, str], think: str, expected: str | None
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(completion(ANSWER))
    run(program("openai://m", options=f"think: {think}"), environ)
    assert request_bodies(httpserver)[0].get("reasoning_effort") == expected


def test_usage_is_recorded_on_the_generate_event_and_summed_for_the_run(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(completion(ANSWER))
    result = run(program("openai://m"), environ)
    generate = next(event for event in result.trace if event["kind"] == "generate")
    assert generate["data"]["usage"] == {"input_tokens": 120, "output_tokens": 15}
    assert result.usage["calls"] == 1
    assert result.usage["input_tokens"] == 120
    assert result.usage["output_tokens"] == 15


def test_json_is_found_inside_prose_and_fences(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(
        completion(f"Here you go:\n```json\n{ANSWER}\n```\nAnything else?")
    )
    assert run(program("openai://m"), environ).value["answer"] == "Rayleigh scattering"


def test_answer_that_is_not_json_is_repaired_with_a_second_attempt(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_handler(
        Sequence(
            json_response(completion("I think it is because of scattering.")),
            json_response(completion(ANSWER)),
        )
    )
    result = run(program("openai://m", attempts=2), environ)
    bodies = request_bodies(httpserver)
    assert len(bodies) == 2
    repaired = bodies[1]["messages"][1]["content"]
    assert "Previous generation failed." in repaired
    assert "LLM provider did not return JSON: I think it is because of scattering." in repaired
    generate = next(event for event in result.trace if event["kind"] == "generate")
    assert generate["data"]["attempts"] == 2
    assert generate["data"]["usage"] == {"input_tokens": 240, "output_tokens": 30}
    assert result.value["score"] == 0.9


def test_shape_mismatch_is_repaired_with_the_previous_output_shown(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_handler(
        Sequence(
            json_response(completion(json.dumps({"answer": "x", "score": "high"}))),
            json_response(completion(ANSWER)),
        )
    )
    run(program("openai://m", attempts=3), environ)
    repaired = request_bodies(httpserver)[1]["messages"][1]["content"]
    # Providers that enforce the shape get the compact layout: the output as compact JSON.
    assert 'Previous output:\n{"answer":"x","score":"high"}' in repaired
    assert "LLM result field 'score' must be a number, got \"high\"" in repaired


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (
            401,
            {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}},
            "LLM provider 'openai' request failed (401): Incorrect API key provided",
        ),
        (
            403,
            {"error": {"message": "Project does not have access", "type": "permission"}},
            "LLM provider 'openai' request failed (403): Project does not have access",
        ),
        (
            404,
            {"error": {"message": "The model `nope` does not exist", "code": "model_not_found"}},
            "LLM provider 'openai' request failed (404): The model `nope` does not exist",
        ),
        (
            400,
            {"error": {"message": "Invalid schema"}},
            "LLM provider 'openai' request failed (400): Invalid schema",
        ),
    ],
)
def test_client_errors_fail_at_once_without_retry_or_repair(
    httpserver: HTTPServer, environ: dict[str, str], status: int, body: Any, message: str
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(body, status=status)
    with pytest.raises(agentscript.ExecutionError) as caught:
        run(program("openai://m", attempts=3), environ)
    assert str(caught.value).startswith(message)
    assert len(httpserver.log) == 1


def test_rate_limit_is_retried_honouring_retry_after_and_each_retry_is_traced(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    limited = json_response(
        {"error": {"message": "Rate limit reached"}}, status=429, headers={"retry-after": "2"}
    )
    httpserver.expect_request("/v1/chat/completions").respond_with_handler(
        Sequence(
            limited,
            json_response({"error": {"message": "upstream"}}, status=503),
            json_response(completion(ANSWER)),
        )
    )
    waits: list[float] = []
    result = run(program("openai://m"), environ, waits=waits)
    assert waits == [2.0, 1.0]
    retries = [event["data"] for event in result.trace if event["kind"] == "llm_retry"]
    assert [(r["status"], r["retry"], r["wait_ms"]) for r in retries] == [
        (429, 1, 2000),
        (503, 2, 1000),
    ]
    assert retries[0]["error"] == "Rate limit reached"
    assert "- retry openai after 429 (retry 1, waited 2000 ms)" in agentscript.format_trace(
        result.trace
    )


def test_server_errors_stop_after_three_retries(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(
        {"error": {"message": "server melted"}}, status=500
    )
    waits: list[float] = []
    with pytest.raises(agentscript.ExecutionError, match=r"request failed \(500\): server melted"):
        run(program("openai://m"), environ, waits=waits)
    assert len(httpserver.log) == 4
    assert waits == [0.5, 1.0, 2.0]


def test_html_error_page_is_reported_by_its_title(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_data(
        "<html><head><title>502 Bad Gateway</title></head><body><h1>nginx</h1></body></html>",
        status=502,
        content_type="text/html",
    )
    with pytest.raises(agentscript.ExecutionError) as caught:
        run(program("openai://m"), environ)
    assert str(caught.value).startswith(
        "LLM provider 'openai' request failed (502): HTML error page: 502 Bad Gateway"
    )


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (
            '{"choices": [',
            "LLM provider 'openai' returned invalid JSON response (200): {\"choices\": [",
        ),
        ("<html>oops</html>", "LLM provider 'openai' returned invalid JSON response (200): oops"),
        (
            json.dumps({"choices": []}),
            "LLM provider 'openai' response is missing 'choices.0.message.content'",
        ),
        (
            json.dumps({"object": "chat.completion"}),
            "LLM provider 'openai' response is missing 'choices.0.message.content'",
        ),
        (
            json.dumps(completion("", finish_reason="content_filter")),
            "LLM provider 'openai' stopped the answer: content filter",
        ),
        (
            json.dumps(
                {
                    "choices": [
                        {
                            "message": {
                                "role": "assistant",
                                "content": None,
                                "refusal": "I can't help with that.",
                            }
                        }
                    ]
                }
            ),
            "LLM provider 'openai' refused the request: I can't help with that.",
        ),
        ("[1, 2]", "LLM provider 'openai' response is not a JSON object"),
    ],
)
def test_malformed_or_refused_answers_give_clear_errors(
    httpserver: HTTPServer, environ: dict[str, str], payload: str, message: str
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_data(
        payload, content_type="application/json"
    )
    with pytest.raises(agentscript.ExecutionError) as caught:
        run(program("openai://m", attempts=2), environ)
    assert str(caught.value).startswith(message)
    assert len(httpserver.log) == 1


def test_missing_key_fails_before_any_request(httpserver: HTTPServer) -> None:
    with pytest.raises(agentscript.ExecutionError) as caught:
        run(program("openai://gpt-4.1-mini"), {})
    assert str(caught.value).startswith("OPENAI_API_KEY is required for openai:// models")
    assert httpserver.log == []


def test_compatible_server_without_key_gets_no_authorization_header(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(completion(ANSWER))
    run(program("openai://qwen3"), {"OPENAI_BASE_URL": httpserver.url_for("/v1")})
    request, _ = httpserver.log[0]
    assert "authorization" not in request.headers


def test_timeout_is_reported_with_the_url_and_not_retried(httpserver: HTTPServer) -> None:
    def slow(request: Request) -> Response:
        time.sleep(0.5)
        return json_response(completion(ANSWER))

    httpserver.expect_request("/v1/chat/completions").respond_with_handler(slow)
    environ = {
        "OPENAI_BASE_URL": httpserver.url_for("/v1"),
        "AGENTSCRIPT_LLM_TIMEOUT_MS": "100",
    }
    with pytest.raises(agentscript.ExecutionError) as caught:
        run(program("openai://m", attempts=3), environ)
    assert str(caught.value).startswith(
        f"LLM provider 'openai' request timed out after 100ms: {httpserver.url_for('/v1/chat/completions')}"
    )
    assert len(httpserver.log) <= 1


def test_key_never_appears_in_errors_traces_or_recordings(
    httpserver: HTTPServer, environ: dict[str, str], tmp_path: Any
) -> None:
    echo = json_response(
        {"error": {"message": f"Incorrect API key provided: {SECRET_KEY}"}}, status=401
    )
    httpserver.expect_request("/v1/chat/completions").respond_with_handler(
        Sequence(json_response(completion(ANSWER)), echo)
    )
    recording = tmp_path / "session.jsonl"
    result = run(program("openai://m"), environ, record=recording)
    with pytest.raises(agentscript.ExecutionError) as caught:
        run(program("openai://m"), environ)
    assert SECRET_KEY not in str(caught.value)
    assert "[REDACTED]" in str(caught.value)
    assert SECRET_KEY not in json.dumps(result.trace)
    assert SECRET_KEY not in json.dumps(caught.value.trace)
    assert SECRET_KEY not in recording.read_text()


def test_max_calls_budget_stops_the_run_and_keeps_the_trace(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_handler(
        Sequence(json_response(completion("not json")), json_response(completion(ANSWER)))
    )
    with pytest.raises(BudgetExceeded) as caught:
        run(program("openai://m", attempts=3), environ, max_calls=1)
    assert caught.value.budget == "calls"
    assert "Run budget exceeded: 1 model calls used (--max-calls)" in str(caught.value)
    assert len(httpserver.log) == 1
    assert [event["kind"] for event in caught.value.trace or []] == ["use", "generate"]


def test_max_tokens_budget_stops_after_the_call_that_exceeds_it(
    httpserver: HTTPServer, environ: dict[str, str]
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(completion(ANSWER))
    with pytest.raises(BudgetExceeded) as caught:
        run(program("openai://m"), environ, max_tokens=100)
    assert caught.value.budget == "tokens"
    assert "135 of 100 tokens used" in str(caught.value)
