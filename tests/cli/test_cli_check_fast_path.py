"""`check FILE... [--quiet]` is answered without click; it must answer exactly as the click
command does (which still handles every other form, such as --help)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentscript.cli.app import invoke
from agentscript.cli.main import main

BROKEN = "main agent A {\n  main func() {\n    return missing\n  }\n}\n"
GOOD = 'main agent A {\n  main func() {\n    return "ok"\n  }\n}\n'


@pytest.mark.parametrize("quiet", [False, True])
def test_the_fast_check_answers_like_the_click_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], quiet: bool
) -> None:
    good, broken = tmp_path / "good.as", tmp_path / "broken.as"
    good.write_text(GOOD, encoding="utf-8")
    broken.write_text(BROKEN, encoding="utf-8")
    args = ["check", str(good), str(broken), str(tmp_path / "missing.as")]
    args += ["--quiet"] if quiet else []

    fast = main(args), capsys.readouterr()
    full = invoke(args), capsys.readouterr()

    assert fast == full
    assert fast[0] == 1 and "broken.as" in fast[1].err and "missing.as" in fast[1].err
    assert ("good.as: ok" in fast[1].err) is not quiet


def test_the_fast_check_does_not_load_click(tmp_path: Path) -> None:
    import subprocess

    good = tmp_path / "good.as"
    good.write_text(GOOD, encoding="utf-8")
    probe = (
        "import sys; from agentscript.cli.main import main; code = main(sys.argv[1:]); "
        "print(code, 'click' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, "check", str(good)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["0", "False"]


def test_help_still_goes_to_click(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--help"]) == 0
    assert "Check programs and print their diagnostics." in capsys.readouterr().out
