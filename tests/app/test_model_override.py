"""`run --model` and `eval --model` put other models under a program without editing it, and
both send the very prompt a plain run of that model sends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentscript.cli.main import main
from eval_support import classify, example_copy
from openai_wire import serving

TICKET = "I was charged twice for my March invoice."


def run_and_eval(tmp_path: Path, *model: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    folder = example_copy(tmp_path)
    case = folder / "one.jsonl"
    case.write_text(json.dumps({"id": "a", "input": {"ticket": TICKET}, "expected": "billing"}))
    with serving(classify) as server, pytest.MonkeyPatch.context() as patch:
        for name, value in server.environ().items():
            patch.setenv(name, value)
        program = str(folder / "classifier.as")
        ran = main(["run", program, "--input", json.dumps({"ticket": TICKET}), "--quiet", *model])
        after_run = len(server.requests)
        evaluated = main(["eval", program, "--data", str(case), "--field", "label", *model])
    assert (ran, evaluated) == (0, 0)
    return server.requests[:after_run], server.requests[after_run:]


def test_eval_sends_the_bytes_run_sends_for_the_same_program_and_model(tmp_path: Path) -> None:
    by_run, by_eval = run_and_eval(tmp_path, "--model", "openai://good")
    assert len(by_run) == len(by_eval) == 1
    assert by_eval == by_run
    assert by_run[0]["model"] == "good"
    # The compact layout: the shape goes out as a schema, never printed into the prompt.
    assert "response_format" in by_run[0]
    assert "schema" not in by_run[0]["messages"][-1]["content"]


def test_a_model_name_replaces_that_import_only(tmp_path: Path) -> None:
    program = example_copy(tmp_path) / "classifier.as"
    with serving(classify) as server, pytest.MonkeyPatch.context() as patch:
        for name, value in server.environ().items():
            patch.setenv(name, value)
        ticket = json.dumps({"ticket": TICKET})
        assert main(["run", str(program), "--input", ticket, "--model", "Model=openai://good"]) == 0
    assert [body["model"] for body in server.requests] == ["good"]


def test_an_unknown_model_name_is_refused_naming_the_programs_models(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = example_copy(tmp_path) / "classifier.as"
    code = main(["run", str(program), "--mock", "--model", "Modle=openai://good"])
    assert code != 0
    assert "the program has no `import llm Modle` (its models: Model)" in capsys.readouterr().err


def test_the_same_model_twice_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "x.as", "--model", "openai://a", "--model", "openai://b"])
    assert code == 1  # as every usage error of `run`
    assert "--model given twice for every model" in capsys.readouterr().err
