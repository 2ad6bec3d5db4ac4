"""Highlighted source in the terminal: a diagnostic's source line under `check`, and the REPL."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from agentscript.cli.highlight import highlight
from agentscript.cli.source_excerpt import excerpt


def test_highlight_colours_without_changing_the_text() -> None:
    coloured = highlight('use notes < 2k as "the notes"')
    assert "\x1b[" in coloured
    plain = re.sub(r"\x1b\[[0-9;]*m", "", coloured)
    assert plain == 'use notes < 2k as "the notes"'


def test_the_caret_sits_under_the_column(tmp_path: Path) -> None:
    program = tmp_path / "tabs.as"
    program.write_text("x\n\treturn inptu.goal\n", encoding="utf-8")
    line, caret = excerpt(str(program), 2, 9, color=False)
    assert line == "   2 |     return inptu.goal"
    assert caret.index("^") == line.index("inptu")


def test_check_in_a_terminal_shows_the_highlighted_source_line(tmp_path: Path) -> None:
    program = tmp_path / "bad.as"
    program.write_text(
        "main agent A {\n    main func(input) {\n        return inptu.goal\n    }\n}\n",
        encoding="utf-8",
    )
    controller, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "agentscript", "check", str(program)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=terminal,
            timeout=60,
            check=False,
        )
        os.close(terminal)
        shown = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(controller)
    text = shown.decode()
    assert done.returncode == 1
    assert "UNKNOWN_IDENTIFIER" in text
    assert "\x1b[" in text and "inptu" in text  # the source line, coloured
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text).replace("\r\n", "\n").splitlines()
    (at,) = [number for number, line in enumerate(plain) if "return inptu.goal" in line]
    assert plain[at + 1].index("^") == plain[at].index("inptu")  # under the `i` of `inptu`


def test_check_into_a_pipe_stays_plain(tmp_path: Path) -> None:
    program = tmp_path / "bad.as"
    program.write_text("main agent A {\n    main func(input) {\n        return x\n    }\n}\n")
    done = subprocess.run(
        [sys.executable, "-m", "agentscript", "check", str(program)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stderr.strip().splitlines() == [
        f"ERROR UNKNOWN_IDENTIFIER at {program}:3:16: Unknown identifier 'x'"
    ]
