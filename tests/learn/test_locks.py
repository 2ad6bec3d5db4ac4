"""The cross-process lock file: exclusion, release, timeouts, stale locks and the fallback for
filesystems without hard links."""

from __future__ import annotations

import errno
import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from agentscript.learn import locks
from agentscript.learn.locks import LockTimeout, file_lock, read_owner
from reflection_support import COUNTER_WORKER, dead_pid, run_together


def write_lock(path: Path, *, pid: int, host: str | None = None, ts: float | None = None) -> None:
    body = {
        "pid": pid,
        "host": host or socket.gethostname(),
        "ts": time.time() if ts is None else ts,
        "token": "someone-else",
    }
    path.write_text(json.dumps(body), encoding="utf-8")


def test_the_lock_file_names_its_owner_while_held_and_is_gone_after(tmp_path: Path) -> None:
    lock = tmp_path / "state" / "profile.lock"
    with file_lock(lock):
        owner = read_owner(lock)
        assert owner is not None
        assert (owner.pid, owner.host) == (os.getpid(), socket.gethostname())
        assert owner.ts is not None and abs(owner.ts - time.time()) < 3600
    assert not lock.exists()
    assert list(lock.parent.iterdir()) == []  # no temporary file is left behind


def test_the_lock_is_released_when_the_body_raises(tmp_path: Path) -> None:
    lock = tmp_path / "a.lock"
    with pytest.raises(RuntimeError, match="boom"), file_lock(lock):
        raise RuntimeError("boom")
    assert not lock.exists()
    with file_lock(lock, timeout=0):
        pass


def test_a_held_lock_times_out_naming_the_file_and_the_owner(tmp_path: Path) -> None:
    lock = tmp_path / "a.lock"
    with file_lock(lock), pytest.raises(LockTimeout) as raised, file_lock(lock, timeout=0):
        pytest.fail("a held lock was taken twice")
    message = str(raised.value)
    assert str(lock) in message
    assert f"pid {os.getpid()} on {socket.gethostname()}" in message
    assert raised.value.owner is not None and raised.value.owner.pid == os.getpid()
    assert not lock.exists()


def test_threads_of_one_process_exclude_each_other(tmp_path: Path) -> None:
    lock = tmp_path / "a.lock"
    inside: list[int] = []
    overlaps: list[int] = []

    def work() -> None:
        for _ in range(50):
            with file_lock(lock, poll=0.005):
                inside.append(1)
                if len(inside) > 1:
                    overlaps.append(len(inside))
                inside.pop()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == []
    assert not lock.exists()


def test_processes_exclude_each_other(tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0")
    finished = run_together(tmp_path, COUNTER_WORKER, [[str(counter), "200"]] * 3)
    assert [process.returncode for process in finished] == [0, 0, 0], finished
    assert counter.read_text() == "600"


def test_a_lock_whose_owner_died_on_this_host_is_taken_over(tmp_path: Path) -> None:
    lock = tmp_path / "a.lock"
    write_lock(lock, pid=dead_pid())
    with file_lock(lock, timeout=0):
        owner = read_owner(lock)
        assert owner is not None and owner.pid == os.getpid()
    assert not lock.exists()
    assert list(tmp_path.iterdir()) == []  # the stale lock was removed, not left renamed


def test_a_lock_older_than_stale_after_is_taken_over_even_from_a_live_pid(
    tmp_path: Path,
) -> None:
    lock = tmp_path / "a.lock"
    write_lock(lock, pid=os.getpid(), ts=time.time() - 3600)
    with file_lock(lock, timeout=0, stale_after=30):
        owner = read_owner(lock)
        assert owner is not None and owner.token != "someone-else"


def test_a_fresh_lock_of_a_dead_pid_on_another_host_is_respected(tmp_path: Path) -> None:
    lock = tmp_path / "a.lock"
    write_lock(lock, pid=dead_pid(), host="another-host")
    with pytest.raises(LockTimeout, match="on another-host"), file_lock(lock, timeout=0):
        pytest.fail("a live lock on another host was taken")
    assert read_owner(lock) is not None


def test_a_lock_with_a_garbage_body_is_taken_over_once_it_is_not_new(tmp_path: Path) -> None:
    lock = tmp_path / "a.lock"
    lock.write_bytes(b"\x00garbage{")
    with pytest.raises(LockTimeout, match="cannot be read"), file_lock(lock, timeout=0):
        pytest.fail("a lock being written was taken")
    old = time.time() - 60
    os.utime(lock, (old, old))
    with file_lock(lock, timeout=0):
        owner = read_owner(lock)
        assert owner is not None and owner.pid == os.getpid()
    assert not lock.exists()


def test_without_hard_links_the_lock_is_created_exclusively(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(source: object, target: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(locks.os, "link", no_links)
    lock = tmp_path / "a.lock"
    with file_lock(lock):
        owner = read_owner(lock)
        assert owner is not None and owner.pid == os.getpid()
        with pytest.raises(LockTimeout), file_lock(lock, timeout=0):
            pytest.fail("the fallback let a held lock be taken twice")
    assert not lock.exists()
    assert list(tmp_path.iterdir()) == []


def test_other_link_errors_are_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(source: object, target: object) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(locks.os, "link", broken)
    with pytest.raises(OSError, match="Input/output"), file_lock(tmp_path / "a.lock"):
        pass


def test_release_leaves_a_lock_that_is_no_longer_ours(tmp_path: Path) -> None:
    lock = tmp_path / "a.lock"
    with file_lock(lock):
        # Another process judged us stale and took the lock over.
        write_lock(lock, pid=os.getpid())
    owner = read_owner(lock)
    assert owner is not None and owner.token == "someone-else"


def test_removing_a_stale_lock_puts_back_one_that_changed_hands(tmp_path: Path) -> None:
    lock = tmp_path / "a.lock"
    write_lock(lock, pid=dead_pid())
    stale = read_owner(lock)
    assert stale is not None
    # Between our look and our rename, someone else removed it and took a fresh lock.
    write_lock(lock, pid=os.getpid(), host="fresh-host")
    locks._remove_stale(lock, stale)
    owner = read_owner(lock)
    assert owner is not None and owner.host == "fresh-host"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.lock"]


def test_settings_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="stale_after"), file_lock(tmp_path / "a", stale_after=0):
        pass
