"""What a person at a terminal sees, through a real pseudo-terminal (the `pty` module): live
progress on stderr while a run works (and none with --quiet or in a pipe), diagnostics with
the source line and a caret, and a closed pipe that ends the command quietly."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug.wrappers import Response

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).with_name("agentscript")

SLOW_TOOL_PROGRAM = """
import tool Find from "sh://find"
import llm Model from "openai://gpt-4.1-mini"

main agent Walker {
  model Model
  role "walker"
  description "Walks the workspace."
  main func(input { rounds number }) {
    seen = []
    for r in [1, 2, 3] < 3 {
      found = Find.run({ path: ".", name: "*.txt" })
      seen.add(found)
    }
    return generate({ input: "Summarise." }) -> { summary string }
  }
}
"""


class Terminal:
    """A child process whose stdin, stdout and stderr are one pseudo-terminal."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave, close_fds=True
        )
        os.close(slave)

    def read_all(self, timeout: float = 60.0) -> str:
        chunks: list[bytes] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            waiting = select.poll()  # not select: a long session may pass fd 1024
            waiting.register(self.master, select.POLLIN)
            ready = waiting.poll(200)
            if ready:
                try:
                    data = os.read(self.master, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif self.process.poll() is not None:
                break
        self.process.wait(timeout=10)
        os.close(self.master)
        return b"".join(chunks).decode("utf-8", "replace")


def environment(home: Path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "TERM": "xterm-256color", "COLUMNS": "120"}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "walk.as").write_text(SLOW_TOOL_PROGRAM)
    return tmp_path


def run_at_terminal(workspace: Path, *argv: str) -> tuple[int, str]:
    terminal = Terminal([str(SCRIPT), *argv], workspace, environment(workspace))
    output = terminal.read_all()
    return terminal.process.returncode, output


def test_progress_shows_on_the_terminal_while_the_run_works(workspace: Path) -> None:
    code, output = run_at_terminal(
        workspace, "run", "walk.as", "--mock", "--input", '{"rounds": 3}'
    )
    assert code == 0, output
    # rich's live panel: the finished tool calls as they happen, redrawn with cursor moves.
    assert "✓ tool Find.run" in output
    assert "\x1b[" in output  # drawn with terminal control sequences
    assert '"summary": ""' in output  # the result is still printed


def test_quiet_turns_progress_off_at_the_terminal(workspace: Path) -> None:
    code, output = run_at_terminal(
        workspace, "run", "walk.as", "--mock", "--input", '{"rounds": 3}', "--quiet"
    )
    assert code == 0, output
    assert "✓ tool" not in output
    assert "usage:" not in output


def test_no_progress_when_stderr_is_not_a_terminal(workspace: Path) -> None:
    done = subprocess.run(
        [str(SCRIPT), "run", "walk.as", "--mock", "--input", '{"rounds": 3}'],
        cwd=workspace,
        env=environment(workspace),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert done.stderr.startswith("usage: ") and "✓" not in done.stderr
    assert "\x1b[" not in done.stdout + done.stderr


def test_the_tree_is_drawn_in_colour_at_the_terminal(workspace: Path) -> None:
    code, output = run_at_terminal(
        workspace, "run", "walk.as", "--mock", "--input", '{"rounds": 3}', "--trace", "pretty"
    )
    assert code == 0
    assert "for r" in output and "3 rounds" in output
    assert "\x1b[" in output


def test_diagnostics_show_the_source_line_and_a_caret_at_the_terminal(workspace: Path) -> None:
    (workspace / "typo.as").write_text(
        "main agent A {\n  main func(input { q string }) {\n    return inptu.q\n  }\n}\n"
    )
    code, output = run_at_terminal(workspace, "check", "typo.as")
    assert code == 1
    plain = re.sub(r"\x1b\[[0-9;]*m", "", output)  # the source line is highlighted
    lines = [line.rstrip() for line in plain.replace("\r", "").splitlines()]
    assert lines[0].endswith("typo.as:3:12: Unknown identifier 'inptu' (did you mean 'input'?)")
    assert lines[1] == "   3 |     return inptu.q"
    assert lines[2] == "     |            ^"


def test_diagnostics_in_a_pipe_stay_one_line(workspace: Path) -> None:
    (workspace / "typo.as").write_text(
        "main agent A {\n  main func(input { q string }) {\n    return inptu.q\n  }\n}\n"
    )
    done = subprocess.run(
        [str(SCRIPT), "check", "typo.as"], cwd=workspace, capture_output=True, text=True
    )
    assert done.returncode == 1
    assert len(done.stderr.splitlines()) == 1


def test_a_closed_pipe_ends_quietly_with_exit_0(tmp_path: Path) -> None:
    """`agentscript run … | head -1`: the reader leaves long before the output ends."""
    shutil.copy(ROOT / "tests" / "fixtures" / "cli" / "greet.as", tmp_path / "greet.as")
    items = ", ".join(str(number) for number in range(3000))
    (tmp_path / "long.as").write_text(
        f"main agent L {{\n  main func() {{\n    for x in [{items}] < 3000 {{ use x }}\n"
        "    return 1\n  }\n}\n"
    )
    reader = subprocess.Popen(["head", "-1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert reader.stdin is not None
    writer = subprocess.run(
        [str(SCRIPT), "run", "long.as", "--mock", "--no-journal"],
        cwd=tmp_path,
        stdout=reader.stdin,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )
    reader.stdin.close()
    reader.wait(timeout=10)
    assert writer.returncode == 0
    assert "Broken pipe" not in writer.stderr and "Traceback" not in writer.stderr


def test_at_a_terminal_answers_stream_from_the_provider(
    workspace: Path, httpserver: HTTPServer
) -> None:
    """The default at a terminal: the request asks for a stream (SSE here), the pieces reach the
    live view, and the value printed is the validated whole."""
    pieces = ['{"sum', 'mary": "three', ' files"}']
    body = "".join(
        f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': piece}}]})}\n\n"
        for piece in pieces
    )
    body += "data: [DONE]\n\n"
    httpserver.expect_request("/v1/chat/completions").respond_with_response(
        Response(body, content_type="text/event-stream")
    )
    env = {
        **environment(workspace),
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": httpserver.url_for("/v1"),
    }
    terminal = Terminal(
        [str(SCRIPT), "run", "walk.as", "--input", '{"rounds": 1}', "--no-learn"], workspace, env
    )
    output = terminal.read_all()
    assert terminal.process.returncode == 0, output
    (request, _), *_ = httpserver.log
    assert json.loads(request.get_data())["stream"] is True
    assert '"summary": "three files"' in output
