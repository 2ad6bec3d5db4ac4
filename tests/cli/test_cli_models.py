"""The model-related command line: budgets, record/replay, the usage line and `models`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from agentscript.cli.main import main
from llm_support import SECRET_KEY, program
from timings import without_timings

ANSWER = {"answer": "Rayleigh scattering", "score": 0.9}


def completion(content: str) -> dict[str, object]:
    return {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 34},
    }


@pytest.fixture
def served(httpserver: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A program talking to a local OpenAI-compatible server, with the key in the environment."""
    httpserver.expect_request("/v1/chat/completions").respond_with_json(
        completion(json.dumps(ANSWER))
    )
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", httpserver.url_for("/v1"))
    path = tmp_path / "ask.as"
    path.write_text(program("openai://gpt-4.1-mini", attempts=2))
    return path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


QUESTION = '{"question": "Why is the sky blue?"}'


def test_run_prints_a_usage_line_on_stderr(
    served: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, "run", str(served), "--input", QUESTION)
    assert code == 0
    assert json.loads(out)["value"] == ANSWER
    assert err.startswith("usage: 1 model call, 1,200 input + 34 output tokens, ")


def test_quiet_run_prints_no_usage_line(served: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "run", str(served), "--input", QUESTION, "--quiet")
    assert (code, err) == (0, "")
    assert json.loads(out) == ANSWER


def test_budget_flag_stops_the_run_and_the_partial_trace_is_written(
    served: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace_file = tmp_path / "trace.json"
    code, out, err = cli(
        capsys,
        "run",
        str(served),
        "--input",
        QUESTION,
        "--max-tokens",
        "1000",
        "--trace",
        str(trace_file),
    )
    assert code == 1
    assert out == ""
    assert "Run budget exceeded: 1234 of 1000 tokens used (--max-tokens)" in err
    assert "usage: 1 model call, 1,200 input + 34 output tokens" in err
    kinds = [event["kind"] for event in json.loads(trace_file.read_text())]
    assert kinds == ["use", "generate"]


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--max-calls", "0", "--max-calls"),
        ("--max-tokens", "many", "--max-tokens"),
        ("--max-seconds", "-1", "--max-seconds"),
    ],
)
def test_invalid_budget_values_are_usage_errors(
    served: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, message: str
) -> None:
    code, _, err = cli(capsys, "run", str(served), flag, value)
    assert code == 1
    assert message in err
    assert "Traceback" not in err


def test_record_then_replay_through_the_command_line(
    served: Path, tmp_path: Path, httpserver: HTTPServer, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = tmp_path / "session.jsonl"
    code, recorded, _ = cli(
        capsys, "run", str(served), "--input", QUESTION, "--record", str(cassette)
    )
    assert code == 0
    assert SECRET_KEY not in cassette.read_text()
    httpserver.clear()
    code, replayed, _ = cli(
        capsys, "run", str(served), "--input", QUESTION, "--replay", str(cassette)
    )
    assert code == 0
    assert without_timings(json.loads(replayed)) == without_timings(json.loads(recorded))
    assert httpserver.log == []


def test_replay_conflicts_with_mock(served: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "run", str(served), "--replay", "x.jsonl", "--mock")
    assert code == 1
    assert "Use either --replay or --mock/--dry-run, not both" in err


def test_models_lists_endpoints_and_key_presence_never_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    path = tmp_path / "models.as"
    path.write_text(
        'import llm Fast from "openai://gpt-4.1-mini"\n'
        'import llm Deep from "anthropic://claude-sonnet-4-5"\n'
        'import llm Local from "ollama://gpu:11434/qwen3"\n'
        'import llm Bad from "gemini://pro"\n'
        "agent A { main func() { return 1 } }\n"
    )
    code, out, _ = cli(capsys, "models", str(path))
    assert code == 1  # Deep has no key and Bad no provider
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "PROTOCOL", "MODEL", "ENDPOINT", "KEY"]
    assert "https://api.openai.com/v1" in lines[1] and "OPENAI_API_KEY set" in lines[1]
    assert "ANTHROPIC_API_KEY missing (required)" in lines[2]
    assert "http://gpu:11434" in lines[3] and "not needed" in lines[3]
    assert "Unsupported LLM provider protocol 'gemini'" in lines[4]
    assert SECRET_KEY not in out
    code, out, _ = cli(capsys, "models", str(path), "--json")
    reports = json.loads(out)
    assert [r["name"] for r in reports] == ["Fast", "Deep", "Local", "Bad"]
    assert reports[0]["key_present"] is True
    assert SECRET_KEY not in out
