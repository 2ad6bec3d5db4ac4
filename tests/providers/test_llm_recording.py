"""Record model exchanges against a local server, then replay them with no server at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

import agentscript
from agentscript.app.configuration import RunConfig
from llm_support import SECRET_KEY, Sequence, json_response, program, run
from timings import without_timings


def completion(content: str) -> dict[str, object]:
    return {
        "model": "gpt-4.1-mini-2025-04-14",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 7},
    }


def replay(source: str, recording: Path) -> agentscript.RunResult:
    return agentscript.run(
        agentscript.load_source(source),
        {"question": "Why is the sky blue?"},
        RunConfig(replay=recording, environ={}),
    )


def test_replay_of_a_recorded_session_reproduces_value_trace_and_repairs(
    httpserver: HTTPServer, tmp_path: Path
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_handler(
        Sequence(
            json_response(completion("Let me think about it.")),
            json_response(completion(json.dumps({"answer": "scattering", "score": 3}))),
        )
    )
    environ = {"OPENAI_API_KEY": SECRET_KEY, "OPENAI_BASE_URL": httpserver.url_for("/v1")}
    source = program("openai://gpt-4.1-mini", attempts=2)
    recording = tmp_path / "cassette.jsonl"

    recorded = run(source, environ, record=recording)
    lines = [json.loads(line) for line in recording.read_text().splitlines()]
    httpserver.clear()

    replayed = replay(source, recording)

    assert [line["outcome"] for line in lines] == ["not_json", "ok"]
    assert lines[1]["usage"] == {"input_tokens": 50, "output_tokens": 7}
    assert lines[0]["call"] == "Asker.__main"
    assert replayed.value == recorded.value == {"answer": "scattering", "score": 3}
    assert without_timings(replayed.trace) == without_timings(recorded.trace)
    generate = recorded.trace[1]["data"]
    assert generate["model"] == "openai://gpt-4.1-mini"
    assert generate["response_model"] == "gpt-4.1-mini-2025-04-14"
    assert generate["finish_reasons"] == ["stop", "stop"]  # each attempt, the failed one too
    assert replayed.usage["input_tokens"] == 100
    assert httpserver.log == []


def test_replay_fails_loudly_when_the_prompt_changed(
    httpserver: HTTPServer, tmp_path: Path
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(
        completion(json.dumps({"answer": "x", "score": 1}))
    )
    environ = {"OPENAI_BASE_URL": httpserver.url_for("/v1")}
    recording = tmp_path / "cassette.jsonl"
    run(program("openai://m"), environ, record=recording)
    changed = program("openai://m").replace("Answer the question.", "Answer in French.")
    with pytest.raises(agentscript.ExecutionError) as caught:
        replay(changed, recording)
    assert f"Replay {recording} has no recorded answer for Asker.__main" in str(caught.value)


def test_a_corrupt_recording_is_reported_with_its_line(tmp_path: Path) -> None:
    recording = tmp_path / "cassette.jsonl"
    recording.write_text('{"digest": "a", "outcome": "ok"}\n{oops\n')
    with pytest.raises(agentscript.LoadError, match=rf"Invalid recording line {recording}:2"):
        replay(program("openai://m"), recording)
