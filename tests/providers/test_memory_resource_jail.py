"""JSONL memory files stay in the workspace even when a directory on their path is swapped for
a symlink while records are written (a TOCTOU race): the path is checked, then every file is
opened through the workspace jail, which follows no link met after the check."""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

import pytest

from agentscript.providers.memory.router import MemoryRouter
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import MemoryRequest

RECORDS = 300


def exchange(first: Path, second: Path) -> None:
    """Swap two paths atomically (renameat2 with RENAME_EXCHANGE), so neither is ever
    missing: the directory and the symlink trade places."""
    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd, rename_exchange = -100, 2
    if libc.renameat2(at_fdcwd, bytes(first), at_fdcwd, bytes(second), rename_exchange) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def swap_until(stop: threading.Event, directory: Path, outside: Path) -> int:
    """Swap `directory` for a symlink to `outside` and back until `stop`; the swaps done."""
    link = directory.with_name(directory.name + ".link")
    link.symlink_to(outside)
    swaps = 0
    while not stop.is_set():
        exchange(directory, link)
        exchange(directory, link)
        swaps += 1
    return swaps


def test_a_directory_swapped_for_a_symlink_sends_no_record_outside(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    (workspace / "mem").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    try:
        exchange(workspace / "mem", outside)
        exchange(workspace / "mem", outside)
    except (AttributeError, OSError):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available here")
    router = MemoryRouter(workspace, workspace)
    stop = threading.Event()
    swaps: list[int] = []
    swapper = threading.Thread(
        target=lambda: swaps.append(swap_until(stop, workspace / "mem", outside))
    )
    swapper.start()
    refused = 0
    try:
        for index in range(RECORDS):
            request = MemoryRequest("M", "file://mem/notes.jsonl", "add", {"index": index})
            try:
                router.add(request)
            except (ExecutionError, FileNotFoundError, NotADirectoryError):
                refused += 1
    finally:
        stop.set()
        swapper.join()
        router.close()
    assert swaps and swaps[0] > 0
    assert list(outside.iterdir()) == []
    # Under load every write may meet a swap and be refused: then no file was made at all.
    notes = workspace / "mem" / "notes.jsonl"
    stored = notes.read_text().splitlines() if notes.exists() else []
    assert len(stored) + refused == RECORDS


def test_a_memory_file_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    outside = tmp_path / "outside.jsonl"
    outside.write_text("")
    (workspace / "inside.jsonl").symlink_to(outside)
    router = MemoryRouter(workspace, workspace)
    with pytest.raises(ExecutionError, match=r"outside workspace|escapes workspace"):
        router.add(MemoryRequest("M", "file://inside.jsonl", "add", {"a": 1}))
    assert outside.read_text() == ""


def test_the_lock_file_is_opened_through_the_jail_too(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (workspace / "notes.jsonl.lock").symlink_to(victim)
    router = MemoryRouter(workspace, workspace)
    with pytest.raises(ExecutionError, match="escapes workspace"):
        router.add(MemoryRequest("M", "file://notes.jsonl", "add", {"a": 1}))
    assert victim.read_text() == "keep me"
