"""`agentscript fmt`: formats files in place, `--check` only reports, errors name the place."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from agentscript.cli.main import main

MESSY = "agent A {\n  func f(x) {\n    return {a:x}\n  }\n}\n"
TIDY = "agent A {\n    func f(x) {\n        return { a: x }\n    }\n}\n"


def test_fmt_rewrites_the_file_and_keeps_its_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = tmp_path / "a.as"
    program.write_text(MESSY, encoding="utf-8")
    program.chmod(0o640)
    assert main(["fmt", str(program)]) == 0
    assert program.read_text(encoding="utf-8") == TIDY
    assert stat.S_IMODE(program.stat().st_mode) == 0o640
    assert capsys.readouterr().err == f"reformatted {program}\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.as"]  # no temporary left
    assert main(["fmt", str(program)]) == 0
    assert capsys.readouterr().err == ""


def test_fmt_check_changes_nothing_and_fails_when_a_file_would_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    messy, tidy = tmp_path / "messy.as", tmp_path / "tidy.as"
    messy.write_text(MESSY, encoding="utf-8")
    tidy.write_text(TIDY, encoding="utf-8")
    assert main(["fmt", "--check", str(messy), str(tidy)]) == 1
    assert messy.read_text(encoding="utf-8") == MESSY
    assert capsys.readouterr().err == f"would reformat {messy}\n"
    assert main(["fmt", "--check", str(tidy)]) == 0


def test_fmt_reports_a_parse_error_with_its_place_and_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken, messy = tmp_path / "broken.as", tmp_path / "messy.as"
    broken.write_text("agent A {\n  func f( {\n", encoding="utf-8")
    messy.write_text(MESSY, encoding="utf-8")
    assert main(["fmt", str(broken), str(messy)]) == 1
    assert broken.read_text(encoding="utf-8") == "agent A {\n  func f( {\n"
    assert messy.read_text(encoding="utf-8") == TIDY
    err = capsys.readouterr().err
    assert f"Expected parameter name at {broken}:2:11" in err
    assert f"reformatted {messy}" in err


def test_fmt_of_a_missing_file_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fmt", str(tmp_path / "nope.as")]) == 1
    assert "not found" in capsys.readouterr().err
