"""Programs written for the newest original (0.1.16–0.1.22), written afresh with its constructs
(tests/fixtures/newest/: File.read's `{ok, content}`, sh://find and sh://read-range, `parallel
for`, `use one of` and agent-level `use`, `loop until` with `+=`, generate options of later
releases, Env.get's `{ok, value}`, node: tools, host://agentscript). Their workspace declares the
release in package.json, so `--mock` mocks the model, the tools and memory, and host tools run.
Each must check clean and run under `--mock`, in the flag form and with `run`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentscript.cli.main import main

NEWEST = Path(__file__).parent / "fixtures" / "newest"
INPUTS = json.loads((NEWEST / "inputs.json").read_text(encoding="utf-8"))
PROGRAMS = sorted(path.name for path in NEWEST.glob("*.as"))


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "newest"
    shutil.copytree(NEWEST, copy)
    monkeypatch.chdir(copy)  # the flag form's workspace is the working directory
    return copy


def test_every_program_has_an_input_and_there_are_nine() -> None:
    assert sorted(INPUTS) == PROGRAMS and len(PROGRAMS) == 9


@pytest.mark.parametrize("program", PROGRAMS)
def test_a_newest_program_checks_clean(
    program: str, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", program]) == 0, capsys.readouterr()


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("form", ["flag", "run"])
def test_a_newest_program_runs_under_mock(
    program: str, form: str, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    given = json.dumps(INPUTS[program])
    command = [program, "--mock", "--input", given, "--quiet"]
    if form == "run":
        command = ["run", program, "--mock", "--no-learn", "--input", given, "--quiet"]
    code = main(command)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert isinstance(json.loads(out), dict)
    # --mock of a newer release mocks every tool but host://: nothing was written or read for
    # real, and the host tool answered from the real target.
    if program == "sites.as":
        assert json.loads(out) == {"ok": True, "sites": 1}
