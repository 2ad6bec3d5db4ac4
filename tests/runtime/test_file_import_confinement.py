"""`import file` reads only regular files inside the run's workspace, at most 16 MiB.

Issue 13, finding 9: a program imported `../`, absolute paths and `/dev/zero` into its prompt
context. Every refusal is a located error (file:line:column), never a hang or a MemoryError.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import agentscript
from agentscript.app.configuration import RunConfig
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.files import MAX_FILE_IMPORT_BYTES


def run_import(workspace: Path, uri: str) -> object:
    program = workspace / "main.as"
    program.write_text(
        f'import file Data from "{uri}"\nagent A {{ main func() {{ return Data }} }}\n'
    )
    config = RunConfig(model="mock", journal=False, learn=False)
    return agentscript.run(agentscript.load(program), {}, config).value


def refusal(workspace: Path, uri: str) -> ExecutionError:
    with pytest.raises(ExecutionError) as raised:
        run_import(workspace, uri)
    error = raised.value
    assert error.position is not None and (error.position.line, error.position.column) == (1, 1)
    assert error.path == str(workspace / "main.as")
    assert error.located().startswith("Cannot read file import 'Data' from ")
    return error


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "notes.md").write_text("inside")
    (tmp_path / "secret.txt").write_text("outside")
    return root


def test_a_file_inside_the_workspace_is_read(workspace: Path) -> None:
    assert run_import(workspace, "./notes.md") == "inside"


@pytest.mark.parametrize("uri", ["../secret.txt", "{outside}", "file://{outside}", "/etc/passwd"])
def test_paths_outside_the_workspace_are_refused(workspace: Path, uri: str) -> None:
    outside = workspace.parent / "secret.txt"
    error = refusal(workspace, uri.format(outside=outside))
    assert "Path escapes workspace" in str(error)
    assert "outside" not in str(error).split(":")[-1]


def test_a_symlink_that_leaves_the_workspace_is_refused(workspace: Path) -> None:
    (workspace / "link.txt").symlink_to(workspace.parent / "secret.txt")
    assert "Path escapes workspace" in str(refusal(workspace, "./link.txt"))


def test_device_files_are_refused(workspace: Path) -> None:
    assert "Path escapes workspace" in str(refusal(workspace, "/dev/zero"))
    (workspace / "zero").symlink_to("/dev/zero")
    assert "Path escapes workspace" in str(refusal(workspace, "./zero"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_waiting_for_a_writer(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    assert "not a regular file" in str(refusal(workspace, "./pipe"))


def test_a_file_over_the_limit_is_refused(workspace: Path) -> None:
    with (workspace / "big.txt").open("wb") as big:
        big.truncate(MAX_FILE_IMPORT_BYTES + 1)
    assert "larger than the workspace limit" in str(refusal(workspace, "./big.txt"))
