"""Hostile input on the command line: each refusal is one clear line and exit code 1.

Issue 13, finding 10: `--input` nested 50,000 deep gave a RecursionError traceback; `/dev/zero`
as the program, `--input-file`, an undo trace, `memory remember -` or `memory import` ran out of
memory; a FIFO as program or input file hung. Every case runs `agentscript` as its own process
(with a timeout, so a hang fails instead of stalling the suite), the way a user meets it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest

# The documented depth limit (runtime.jsjson.MAX_JSON_DEPTH), spelled out so this test also
# runs against code that has none.
MAX_JSON_DEPTH = 256

PROGRAM = "agent A { main func() { return 1 } }\n"
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def agentscript(
    tmp_path: Path, *args: str, stdin: IO[bytes] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "AGENTSCRIPT_MEMORY_DB": str(tmp_path / "memory.db")}
    return subprocess.run(
        [sys.executable, "-m", "agentscript", *args],
        cwd=tmp_path,
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=environ,
        check=False,
    )


def refused(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [message]


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "prog.as"
    path.write_text(PROGRAM)
    return path


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def test_deeply_nested_input_is_refused(tmp_path: Path, program: Path) -> None:
    # One command-line argument may hold 128 KiB, so brackets: 100,000 characters.
    deep = "[" * 50_000 + "]" * 50_000
    refused(
        agentscript(tmp_path, "run", str(program), "--mock", "--input", deep),
        f"--input is not valid JSON: JSON is nested deeper than {MAX_JSON_DEPTH} levels "
        f"(at character {MAX_JSON_DEPTH + 1})",
    )
    nested_file = tmp_path / "deep.json"
    nested_file.write_text('{"a":' * 50_000 + "1" + "}" * 50_000)
    refused(
        agentscript(tmp_path, "run", str(program), "--mock", "--input-file", str(nested_file)),
        f"--input-file is not valid JSON: JSON is nested deeper than {MAX_JSON_DEPTH} levels "
        f"(at character {5 * MAX_JSON_DEPTH + 1})",
    )


def test_a_device_as_program_is_refused(tmp_path: Path) -> None:
    for command in (["run", "/dev/zero", "--mock"], ["check", "/dev/zero"], ["parse", "/dev/zero"]):
        refused(agentscript(tmp_path, *command), "Program file is not a regular file: /dev/zero")


@needs_fifo
def test_a_fifo_as_program_is_refused_without_waiting(tmp_path: Path, fifo: Path) -> None:
    refused(
        agentscript(tmp_path, "run", str(fifo), "--mock"),
        f"Program file is not a regular file: {fifo}",
    )


def test_a_device_as_input_file_is_refused(tmp_path: Path, program: Path) -> None:
    refused(
        agentscript(tmp_path, "run", str(program), "--mock", "--input-file", "/dev/zero"),
        "--input-file is not a regular file: /dev/zero",
    )


@needs_fifo
def test_a_fifo_as_input_file_is_refused_without_waiting(
    tmp_path: Path, program: Path, fifo: Path
) -> None:
    refused(
        agentscript(tmp_path, "run", str(program), "--mock", "--input-file", str(fifo)),
        f"--input-file is not a regular file: {fifo}",
    )


def test_an_input_file_over_the_limit_is_refused(tmp_path: Path, program: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as file:
        file.truncate(16 * 1024 * 1024 + 1)
    refused(
        agentscript(tmp_path, "run", str(program), "--mock", "--input-file", str(big)),
        f"--input-file is larger than 16 MiB: {big}",
    )


def test_a_device_as_undo_trace_is_refused(tmp_path: Path) -> None:
    refused(agentscript(tmp_path, "undo", "/dev/zero"), "Trace is not a regular file: /dev/zero")


def test_memory_remember_reads_a_bounded_stdin(tmp_path: Path) -> None:
    with open("/dev/zero", "rb") as zero:
        result = agentscript(tmp_path, "memory", "remember", "-", stdin=zero)
    refused(result, "The text on stdin is longer than 1 MiB")


def test_memory_import_refuses_devices_and_endless_lines(tmp_path: Path) -> None:
    refused(
        agentscript(tmp_path, "memory", "import", "/dev/zero"),
        "Export is a device or socket, not a file: /dev/zero",
    )
    with open("/dev/zero", "rb") as zero:
        result = agentscript(tmp_path, "memory", "import", stdin=zero)
    refused(result, "<stdin>:1: line is longer than 8 MiB")
    uri = f"file://{tmp_path / 'records.jsonl'}"
    refused(
        agentscript(tmp_path, "memory", "import", uri, "/dev/zero"),
        "Export is a device or socket, not a file: /dev/zero",
    )


# ------------------------------------------------- every file argument is bounded (issue 27)

PROGRAM_WITH_MODEL = """import llm M from "openai://m"
agent A {
  model M
  role "r"
  description "d"
  main func() { return generate({ input: "x" }) -> { a } }
}
"""


def file_arguments(tmp_path: Path, program: Path, target: Path) -> list[list[str]]:
    """Every command line that reads `target` as a file argument, other than the program."""
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "a", "input": {}, "expected": 1}\n')
    return [
        ["run", str(program), "--mock", str(target)],
        ["run", str(program), "--replay", str(target)],
        ["run", str(program), "--mock", "--approvals", str(target)],
        ["eval", str(program), "--data", str(target), "--mock"],
        ["eval", str(program), "--data", str(cases), "--mock", str(target)],
        ["eval", str(program), "--data", str(cases), "--mock", "--approvals", str(target)],
        ["eval", str(program), "--data", str(cases), "--replay", str(target)],
        ["eval", str(program), "--data", str(cases), "--mock", "--out", str(target)],
        ["memory", "show", f"file://{target}"],
        ["memory", "import", str(target)],
        ["runs", "resume", "last", "--mock", str(target)],
    ]


@needs_fifo
def test_no_file_argument_waits_for_a_fifo_writer(tmp_path: Path, fifo: Path) -> None:
    program = tmp_path / "model.as"
    program.write_text(PROGRAM_WITH_MODEL)
    for arguments in file_arguments(tmp_path, program, fifo):
        # A hang would time out and fail here; a file read lazily may never be opened.
        result = agentscript(tmp_path, *arguments)
        assert "Traceback" not in result.stderr, (arguments, result.stderr)


def test_no_file_argument_reads_an_endless_device(tmp_path: Path) -> None:
    program = tmp_path / "model.as"
    program.write_text(PROGRAM_WITH_MODEL)
    for arguments in file_arguments(tmp_path, program, Path("/dev/zero")):
        # Read to its end, /dev/zero would take minutes and all the memory there is.
        result = agentscript(tmp_path, *arguments, timeout=30)
        assert "Traceback" not in result.stderr, (arguments, result.stderr)


def test_deep_json_and_huge_numbers_in_files_are_one_line_errors(tmp_path: Path) -> None:
    program = tmp_path / "model.as"
    program.write_text(PROGRAM_WITH_MODEL)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    deep_cases = tmp_path / "deep.jsonl"
    deep_cases.write_text('{"id": "a", "input": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    huge = tmp_path / "huge.json"
    huge.write_text('{"n": 1' + "0" * 4000 + "}")
    for arguments in (
        ["run", str(program), "--mock", "--approvals", str(deep)],
        ["eval", str(program), "--data", str(deep_cases), "--mock"],
        ["run", str(program), "--mock", "--input-file", str(huge)],
        ["run", str(program), "--mock", str(huge)],
    ):
        result = agentscript(tmp_path, *arguments)
        assert result.returncode != 0, arguments
        assert "Traceback" not in result.stderr, (arguments, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, (arguments, result.stderr)
