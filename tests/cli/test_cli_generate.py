"""`agentscript generate python PROGRAM -o PACKAGE/`: one line saying what was written, and
refusals (a program that does not check, a folder that is not a generated client, a name that
is not a Python package) as one clear line and exit code 2, with nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentscript.cli.main import main

SRC = Path(__file__).resolve().parents[2] / "src"

PROGRAM = """import llm Model from "openai://gpt-4.1-mini"

main agent Triage {
    model Model
    role "support triage"
    description "Sorts a ticket."

    main func(input { text: string }) {
        use input.text as "ticket"
        generate({ input: "Classify the ticket." }) -> { label: "billing" | "bug" | "other" }
    }
}
"""


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["generate", "python", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "triage.as"
    path.write_text(PROGRAM, encoding="utf-8")
    return path


def test_it_says_what_it_wrote_in_one_line(
    program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    package = tmp_path / "triage_client"
    code, out, err = cli(capsys, str(program), "-o", str(package))
    assert (code, err) == (0, "")
    assert out == f"wrote 4 files to {package}/ (import triage_client)\n"
    assert sorted(p.relative_to(package).as_posix() for p in package.rglob("*.*")) == [
        "__init__.py", "client.py", "program/triage.as", "py.typed",
    ]  # fmt: skip


def test_a_program_that_does_not_check_writes_nothing(
    program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program.write_text(PROGRAM.replace("model Model", "model Missing"), encoding="utf-8")
    code, out, err = cli(capsys, str(program), "-o", str(tmp_path / "client"))
    assert (code, out) == (2, "")
    assert f"{program}:4:11" in err and "Unknown model import 'Missing'" in err
    assert not (tmp_path / "client").exists()


def test_a_folder_that_is_not_a_generated_client_is_left_alone(
    program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "mine"
    taken.mkdir()
    (taken / "client.py").write_text("# my own code\n")
    code, _, err = cli(capsys, str(program), "-o", str(taken))
    assert code == 2
    assert err == f"{taken} is not empty and holds no generated client: choose another -o folder\n"
    assert [p.name for p in taken.iterdir()] == ["client.py"]
    assert (taken / "client.py").read_text() == "# my own code\n"
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    code, _, err = cli(capsys, str(program), "-o", str(a_file))
    assert (code, err) == (2, f"{a_file} exists and is not a folder\n")


@pytest.mark.parametrize("name", ["not-a-name", "class"])
def test_the_folder_name_must_be_an_import_name(
    program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    code, _, err = cli(capsys, str(program), "-o", str(tmp_path / name))
    assert code == 2
    assert err == f"The package name must be a Python identifier, got {name!r}\n"
    assert not (tmp_path / name).exists()


def test_a_missing_program_and_a_missing_option_are_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, str(tmp_path / "gone.as"), "-o", str(tmp_path / "client"))
    assert code == 2 and "gone.as" in err and len(err.splitlines()) == 1
    code, _, err = cli(capsys, str(tmp_path / "gone.as"))
    assert code != 0 and "-o" in err and "Traceback" not in err


def test_the_installed_command_refuses_without_a_traceback(tmp_path: Path) -> None:
    broken = tmp_path / "broken.as"
    broken.write_text(PROGRAM.replace("{ text: string }", "{ text: string "), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "agentscript", "generate", "python", "broken.as", "-o", "out"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"Expected shape field name at {broken}:8:36\n"
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
