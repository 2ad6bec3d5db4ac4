"""`agentscript lsp` is a subcommand, and the REPL colours its input at a terminal."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time

from agentscript.cli.main import main


def test_lsp_is_a_subcommand() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentscript", "lsp", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "language server" in done.stdout
    assert main(["--help"]) == 0


def test_lsp_answers_initialize_on_stdio() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}'
    request = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    server = subprocess.Popen(
        [sys.executable, "-m", "agentscript", "lsp", "--stdio"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(request)
        server.stdin.flush()
        header = server.stdout.readline()
        assert header.startswith(b"Content-Length: ")
        server.stdout.readline()
        answer = server.stdout.read(int(header.split(b":")[1]))
        assert b'"hoverProvider":true' in answer.replace(b" ", b"")
        assert b'"name":"agentscript"' in answer.replace(b" ", b"")
    finally:
        server.kill()
        server.wait(timeout=30)


def test_the_repl_highlights_what_is_typed() -> None:
    controller, terminal = pty.openpty()
    repl = subprocess.Popen(
        [sys.executable, "-m", "agentscript"],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env={**os.environ, "TERM": "xterm-256color"},
        close_fds=True,
    )
    os.close(terminal)
    shown = b""
    try:
        shown += _read_until(controller, b"\x1b[0m>")
        os.write(controller, b"agent Helper {")
        shown += _read_until(controller, b"Helper")
        os.write(controller, b' role "helps" }\r')
        shown += _read_until(controller, b"added agent Helper")
        os.write(controller, b":show\r")
        listed = _read_until(controller, b"}\r\n")
        os.write(controller, b"\x04\x04")  # end of input
    finally:
        repl.kill()
        repl.wait(timeout=30)
        os.close(controller)
    typed = shown.split(b"\x1b[0m>", 1)[1]
    before_agent = typed.split(b"agent", 1)[0]
    assert b"38;5;" in before_agent  # `agent` is drawn in a colour of the lexer's style
    # `:show` prints the program highlighted too (a string in the lexer's string colour).
    assert b'\x1b[38;5;124m"helps"' in listed.split(b":show", 1)[1]


def _read_until(descriptor: int, wanted: bytes, timeout: float = 30.0) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while wanted not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([descriptor], [], [], 0.5)
        if ready:
            try:
                seen += os.read(descriptor, 4096)
            except OSError:
                break
    assert wanted in seen, seen
    return seen


def test_a_session_that_shuts_down_and_exits_ends_with_code_0_and_nothing_on_stderr() -> None:
    def message(payload: dict[str, object]) -> bytes:
        body = json.dumps(payload).encode()
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    session = b"".join(
        message(payload)
        for payload in (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"processId": None, "rootUri": None, "capabilities": {}},
            },
            {"jsonrpc": "2.0", "method": "initialized", "params": {}},
            {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
            {"jsonrpc": "2.0", "method": "exit"},
        )
    )
    ended = subprocess.run(
        [sys.executable, "-m", "agentscript", "lsp"],
        input=session,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (ended.returncode, ended.stderr.decode()) == (0, "")
