"""`agentscript architect`: `--check SPEC` validates, `--spec SPEC OUT.as` writes a program
that checks clean and runs; a bad spec names its fields (exit 1), a command that cannot start
says why (exit 2). As the original's command (0.1.21)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentscript.cli.main import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "architect"


def agentscript(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentscript", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "AGENTSCRIPT_MEMORY_DB": str(cwd / "memory.db")},
        check=False,
    )


@pytest.fixture
def specs(tmp_path: Path) -> Path:
    for path in FIXTURES.glob("*.json"):
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "python.md").write_text("Python 3.10 added the match statement.\n")
    return tmp_path


def write_spec(tmp_path: Path, change: Any) -> Path:
    spec = json.loads((FIXTURES / "notes-answerer.spec.json").read_text(encoding="utf-8"))
    change(spec)
    path = tmp_path / "changed.spec.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


def test_a_spec_becomes_a_program_that_checks_and_runs_under_mock(specs: Path) -> None:
    built = agentscript(specs, "architect", "--spec", "notes-answerer.spec.json", "notes.as")
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout) == {"ok": True, "output": "notes.as"}
    assert agentscript(specs, "check", "notes.as").returncode == 0
    ran = agentscript(
        specs, "run", "notes.as", "--mock", "--input",
        '{"question": "Which release added match?", "topic": "match"}',
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    shown = json.loads(ran.stdout)
    (search, *_) = shown["trace"]
    assert search["data"]["result"]["matches"][0]["path"] == "notes/python.md"
    assert shown["value"] == {
        "answer": "",
        "sources": [""],
        "confident": True,
        "missing": [""],
    }


def test_the_react_spec_runs_its_loop(specs: Path) -> None:
    assert main(["architect", "--spec", str(specs / "notes-researcher.spec.json"),
                 "--out", str(specs / "research.as"), "--quiet"]) == 0  # fmt: skip
    answers = specs / "answers.json"
    thought, answer = {"query": "match", "done": True}, {"answer": "3.10", "queries": ["match"]}
    answers.write_text(json.dumps([thought, answer]), encoding="utf-8")
    ran = agentscript(specs, "run", "research.as", "--mock", "answers.json", "--input",
                      '{"question": "Which release added match?"}')  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["value"] == {"answer": "3.10", "queries": ["match"]}


def test_check_prints_the_result_of_a_valid_spec(
    specs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["architect", "--check", str(specs / "notes-answerer.spec.json")]) == 0
    assert json.loads(capsys.readouterr().out) == {"ok": True, "diagnostics": []}
    assert main(["architect", "--check", str(specs / "notes-answerer.spec.json"), "--quiet"]) == 0
    assert capsys.readouterr().out == ""


def test_an_invalid_spec_names_each_field_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, lambda s: s["locals"][0]["source"].update(tool="Grep"))
    assert main(["architect", "--check", str(spec)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("AgentSpec validation failed:\n")
    diagnostics = json.loads(err.split("\n", 1)[1])
    assert [(d["code"], d["path"]) for d in diagnostics] == [
        ("UNKNOWN_TOOL", "/locals/0/source/tool")
    ]
    assert main(["architect", "--spec", str(spec), str(tmp_path / "out.as")]) == 1
    assert capsys.readouterr().err.startswith("AgentSpec validation failed:\n")
    assert not (tmp_path / "out.as").exists()


def test_source_that_does_not_check_is_not_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, lambda s: s["tools"][0].update(uri="ftp://notes"))
    assert main(["architect", "--spec", str(spec), str(tmp_path / "out.as")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Generated source analysis failed:\n")
    (diagnostic,) = json.loads(err.split("\n", 1)[1])
    assert diagnostic["code"] == "UNKNOWN_TOOL_SCHEME" and diagnostic["path"] == "source:2:1"
    assert not (tmp_path / "out.as").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "AgentSpec file not found: {spec}"),
        ("dir", "AgentSpec file is a directory: {spec}"),
        ("[" * 300 + "]" * 300, "Failed to read AgentSpec '{spec}': JSON is nested deeper"),
        ("{not json", "Failed to read AgentSpec '{spec}': Expecting property name"),
        ("[1, 2]", "AgentSpec '{spec}' must contain a JSON object"),
    ],
)
def test_a_spec_file_that_cannot_be_used_is_one_line_and_exit_2(
    tmp_path: Path, content: str | None, message: str
) -> None:
    spec = tmp_path / "spec.json"
    if content == "dir":
        spec.mkdir()
    elif content is not None:
        spec.write_text(content, encoding="utf-8")
    result = agentscript(tmp_path, "architect", "--check", str(spec))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(message.format(spec=spec))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], '"request" <output.as> | --spec <spec.json> <output.as> | --check <spec.json>'),
        (["only a request"], '"request" <output.as>'),
        (["a request", "out.as", "--model", "gpt-4"], "LLM URI must use an explicit protocol"),
        (["a request", "out.as", "--model", "M=openai://x"], "takes one model URI"),
        (["--spec", "s.json"], "Name the program to write once"),
        (["--spec", "s.json", "a.as", "--out", "b.as"], "Name the program to write once"),
        (["--check", "s.json", "a.as"], "Use architect --check <spec.json> without other"),
    ],
)
def test_usage_mistakes_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = agentscript(tmp_path, "architect", *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_a_request_is_designed_by_the_model_and_written_once_it_checks(specs: Path) -> None:
    spec = json.loads((specs / "notes-answerer.spec.json").read_text(encoding="utf-8"))
    design = {"spec": spec, "assumptions": ["notes/ holds the notes"], "missing_requirements": []}
    (specs / "design.json").write_text(json.dumps([design]), encoding="utf-8")
    request = "answer questions from the notes folder"
    result = agentscript(specs, "architect", request, "notes-helper.as", "--mock=design.json")
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["ok"] is True and shown["output"] == "notes-helper.as"
    assert shown["value"]["analysis_ok"] is True and shown["value"]["repairs"] == 0
    written = (specs / "notes-helper.as").read_text(encoding="utf-8")
    assert written == shown["value"]["source"]
    assert agentscript(specs, "check", "notes-helper.as").returncode == 0


def test_a_design_that_never_validates_is_shown_and_not_written(specs: Path) -> None:
    result = agentscript(specs, "architect", "anything", "nothing.as", "--mock")
    assert result.returncode == 1
    header, shown = result.stderr.split("\n", 1)
    assert header == "Architect request did not produce analyzable source:"
    value = json.loads(shown)
    assert value["analysis_ok"] is False and value["repairs"] == 2
    assert {"code": "MISSING_FIELD", "path": "/version"}.items() <= value["diagnostics"][0].items()
    assert not (specs / "nothing.as").exists()
