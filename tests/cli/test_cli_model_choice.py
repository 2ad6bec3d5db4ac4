"""`--model URI` and `--model NAME=URI` on `run`, the 0.1.0 flag form and `eval`: a program
answered by another model without editing it, against a local OpenAI-wire server; and `eval`
sending exactly the bytes `run` sends for the same program and model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentscript.cli.main import main
from openai_wire import OpenAiWireServer, serving

PROGRAM = """
import llm Fast from "openai://fast-original"
import llm Slow from "openai://slow-original"

agent Asker {
  model Fast
  role "Analyst"
  description "Answers briefly."
  main func(input { question string }) {
    use input.question
    return generate({ input: "Answer the question." }) -> { answer string }
  }
}
"""


def answer(model: str, body: dict[str, object]) -> str:
    return json.dumps({"answer": f"from {model}"})


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> object:
    with serving(answer) as running:
        for name, value in running.environ().items():
            monkeypatch.setenv(name, value)
        yield running


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "asker.as"
    path.write_text(PROGRAM, encoding="utf-8")
    return path


def run_args(program: Path, *extra: str) -> list[str]:
    return ["run", str(program), "--input", '{"question": "why?"}', "--quiet", *extra]


def test_a_bare_uri_replaces_every_llm_import(
    server: OpenAiWireServer, program: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(run_args(program, "--model", "openai://local-small")) == 0
    assert json.loads(capsys.readouterr().out) == {"answer": "from local-small"}
    assert [body["model"] for body in server.requests] == ["local-small"]
    assert program.read_text(encoding="utf-8") == PROGRAM


def test_a_named_uri_wins_over_a_bare_one_whatever_the_order(
    server: OpenAiWireServer, program: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--model", "Fast=openai://named", "--model", "openai://every"]
    assert main(run_args(program, *flags)) == 0
    assert json.loads(capsys.readouterr().out) == {"answer": "from named"}
    # Replacing another name leaves the one the agent uses alone.
    assert main(run_args(program, "--model", "Slow=openai://other")) == 0
    assert json.loads(capsys.readouterr().out) == {"answer": "from fast-original"}


def test_the_trace_names_the_model_that_answered(
    server: OpenAiWireServer, program: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.json"
    assert main(run_args(program, "--model", "openai://local-small", "--trace", str(trace))) == 0
    assert "openai://local-small" in trace.read_text()
    assert "openai://fast-original" not in trace.read_text()


def test_an_unknown_name_is_an_error_naming_the_programs_llm_names(
    server: OpenAiWireServer, program: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(run_args(program, "--model", "Slowest=openai://x")) != 0
    error = capsys.readouterr().err
    assert "no `import llm` named 'Slowest'" in error
    assert "its llm names: Fast, Slow" in error
    assert "Traceback" not in error
    assert server.requests == []


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--model", "gpt-4"], "LLM URI must use an explicit protocol URL form"),
        (["--model", "openai://a", "--model", "openai://b"], "--model given twice"),
    ],
)
def test_bad_model_values_are_clear_errors(
    server: OpenAiWireServer,
    program: Path,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    expected: str,
) -> None:
    assert main(run_args(program, *flags)) != 0
    error = capsys.readouterr().err
    assert expected in error and "Traceback" not in error
    assert server.requests == []


def test_the_flag_form_takes_model_too_and_asks_the_real_model(
    server: OpenAiWireServer, program: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(program), "--input", '{"question": "why?"}', "--model", "openai://legacy"]
    assert main(argv) == 0
    assert '"answer": "from legacy"' in capsys.readouterr().out
    assert [body["model"] for body in server.requests] == ["legacy"]


def test_eval_sends_the_bytes_run_sends(
    server: OpenAiWireServer, program: Path, tmp_path: Path
) -> None:
    assert main(run_args(program, "--model", "openai://same")) == 0
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"input": {"question": "why?"}, "expected": "x"}) + "\n")
    eval_argv = ["eval", str(program), "--data", str(cases), "--model", "openai://same"]
    assert main([*eval_argv, "--json"]) == 0
    assert len(server.raw) == 2
    assert server.raw[0] == server.raw[1]
    # The compact layout: the schema travels as response_format, not in the prompt.
    assert "Return JSON matching" not in server.requests[1]["messages"][-1]["content"]


def test_eval_compares_the_mock_beside_a_real_model(
    server: OpenAiWireServer,
    program: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        json.dumps({"id": "c1", "input": {"question": "why?"}, "expected": "scripted"}) + "\n"
    )
    script = tmp_path / "answers.json"
    script.write_text(json.dumps([{"answer": "scripted"}]))
    argv = ["eval", str(program), "--data", str(cases), "--field", "answer", "--json"]
    flags = ["--model", "mock", "--model", "openai://real", "--mock", str(script)]
    assert main([*argv, *flags]) == 0
    summary = json.loads(capsys.readouterr().out)
    scores = {row["configuration"]: row["mean_score"] for row in summary["summary"]}
    assert scores == {"mock": 1.0, "openai://real": 0.0}
    assert [body["model"] for body in server.requests] == ["real"]


def test_a_resumed_run_keeps_the_models_it_was_started_with(
    program: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    two_generates = PROGRAM.replace(
        '    return generate({ input: "Answer the question." }) -> { answer string }',
        '    first = generate({ input: "Answer the question." }) -> { answer string }\n'
        '    return generate({ input: "Check the answer." }) -> { answer string }',
    )
    program.write_text(two_generates, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with serving(answer) as server:
        for name, value in server.environ().items():
            monkeypatch.setenv(name, value)
        # The budget stops the run before its second generate.
        assert main(run_args(program, "--model", "openai://local", "--max-calls", "1")) != 0
        assert main(["runs", "resume", "last", "--quiet"]) == 0
    assert '"answer": "from local"' in capsys.readouterr().out
    # The first generate was answered from the journal; the second asked the same model.
    assert [body["model"] for body in server.requests] == ["local", "local"]


def test_eval_takes_a_named_model_and_refuses_an_unknown_name_before_any_cell(
    server: OpenAiWireServer,
    program: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"input": {"question": "why?"}, "expected": "x"}) + "\n")
    argv = ["eval", str(program), "--data", str(cases), "--json"]
    assert main([*argv, "--model", "Fast=openai://named"]) == 0
    assert [body["model"] for body in server.requests] == ["named"]
    capsys.readouterr()
    assert main([*argv, "--model", "Quick=openai://named"]) == 2
    assert "its llm names: Fast, Slow" in capsys.readouterr().err
    assert len(server.requests) == 1
