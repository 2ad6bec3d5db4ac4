"""Highlighted source in the terminal: a diagnostic's source line under `check`, and the REPL."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from agentscript.cli.highlight import highlight, source_excerpt


def test_highlight_colours_without_changing_the_text() -> None:
    coloured = highlight('use notes < 2k as "the notes"')
    assert "\x1b[" in coloured
    plain = re.sub(r"\x1b\[[0-9;]*m", "", coloured)
    assert plain == 'use notes < 2k as "the notes"'


def test_the_caret_sits_under_the_column() -> None:
    line, caret = source_excerpt("\treturn inptu.goal\n", 9, color=False)
    assert line == "        return inptu.goal"
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
    # Under the `i` of `inptu`: column 16, so 15 spaces after the 4 of the excerpt's indent.
    assert "\n" + " " * 19 + "^" in text.replace("\r\n", "\n")


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
