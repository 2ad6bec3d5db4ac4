"""Cross-process locks for the state an agent keeps about itself (profiles, the autonomy ledger).

A lock is a file whose body names its owner (`{pid, host, ts, token}`). It is a file rather
than `flock` because flock locks vanish silently on network and FUSE filesystems and cannot say
who holds them; a lock file works wherever files can be created and lets a timeout name the
owner. It is created with its body in one step: the body goes to a unique temporary file that is
hard-linked into place, so no contender ever reads a half-written lock. Filesystems without hard
links get an O_EXCL create followed by the write, whose empty instant is covered by
UNREADABLE_GRACE.

A lock left behind by a crash is recovered: it is stale when its owner's pid is dead on this
host, its timestamp is older than `stale_after`, or its body cannot be read for longer than
UNREADABLE_GRACE. A stale lock is renamed to a unique name before it is deleted, so of several
contenders exactly one removes it; the rest find it gone and compete for a new one as usual. If
the renamed file turns out to be a fresh lock (it changed hands between the look and the
rename), it is put back. Release deletes the file only if its token is still ours: a holder
whose lock was stolen for being stale never deletes its successor's.
"""

from __future__ import annotations

import errno
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from agentscript.runtime.errors import AgentScriptError

DEFAULT_TIMEOUT = 10.0
DEFAULT_STALE_AFTER = 30.0
DEFAULT_POLL = 0.05
# The first wait between attempts; each next one doubles, up to `poll`. A lock held for a
# millisecond (a profile write) is then taken again within about a millisecond, and a long
# wait still costs only one look every `poll` seconds.
FIRST_WAIT = 0.001
# How long a lock file may have an unreadable body before it counts as stale: the O_EXCL
# fallback creates the file empty and writes its body right after.
UNREADABLE_GRACE = 1.0
# What `os.link` raises on filesystems that have no hard links (FUSE mounts, some SMB shares).
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP})


@dataclass(frozen=True, slots=True)
class LockOwner:
    """Who a lock file says holds it; every field None when its body cannot be read. `raw` is
    the body as read, which tells one lock from its successor; `mtime` the file's."""

    pid: int | None
    host: str | None
    ts: float | None
    token: str | None
    raw: bytes
    mtime: float | None

    @property
    def readable(self) -> bool:
        return self.token is not None

    def describe(self, now: float | None = None) -> str:
        """`pid 412 on build-7 since 2027-01-15T08:03:12Z (3.2 s ago)`, for messages."""
        if not self.readable or self.ts is None:
            return "an owner whose lock file cannot be read"
        since = datetime.fromtimestamp(self.ts, UTC).isoformat(timespec="seconds")
        text = f"pid {self.pid} on {self.host} since {since.replace('+00:00', 'Z')}"
        if now is not None:
            text += f" ({max(now - self.ts, 0.0):.1f} s ago)"
        return text


class LockTimeout(AgentScriptError):
    """The lock stayed held by a live owner for the whole timeout."""

    def __init__(self, path: Path, timeout: float, owner: LockOwner | None) -> None:
        self.path = path
        self.timeout = timeout
        self.owner = owner
        held = owner.describe(time.time()) if owner is not None else "another process"
        super().__init__(
            f"Timed out after {timeout:g} s waiting for the lock {path}, held by {held}"
        )


@contextmanager
def file_lock(
    path: Path,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    stale_after: float = DEFAULT_STALE_AFTER,
    poll: float = DEFAULT_POLL,
) -> Iterator[None]:
    """Hold the lock file `path` for the body of the `with` (its directory is created).

    Waits up to `timeout` seconds (0: one attempt), looking again after 1 ms, 2 ms, … up to
    `poll` seconds; raises LockTimeout naming the lock file and its owner. A lock that is
    stale (see the module docstring) is taken over. The lock is released however the body
    ends, and only if it is still ours.
    """
    if timeout < 0 or stale_after <= 0 or poll <= 0:
        raise ValueError("file_lock needs timeout >= 0, stale_after > 0 and poll > 0")
    lock = Path(path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    token = f"{os.getpid()}-{os.urandom(8).hex()}"
    _acquire(lock, token, timeout, stale_after, poll)
    try:
        yield
    finally:
        _release(lock, token)


def host_name() -> str:
    """This machine's name, as `socket.gethostname()` gives it, without importing socket on
    POSIX (every journaled run records it, and a run's start should load little)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists here. On Windows signal 0 would terminate it, so
    there only the heartbeat tells."""
    if os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_owner(path: Path) -> LockOwner | None:
    """Who holds the lock at `path`, or None when nobody does."""
    try:
        raw = path.read_bytes()
        mtime: float | None = path.stat().st_mtime
    except FileNotFoundError:
        return None
    except OSError:
        raw, mtime = b"", None
    try:
        body = json.loads(raw.decode("utf-8"))
        pid, host, ts, token = body["pid"], body["host"], body["ts"], body["token"]
        if not (
            isinstance(pid, int)
            and isinstance(host, str)
            and isinstance(ts, int | float)
            and isinstance(token, str)
        ):
            raise ValueError("not a lock body")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return LockOwner(None, None, None, None, raw, mtime)
    return LockOwner(pid, host, float(ts), token, raw, mtime)


def _acquire(path: Path, token: str, timeout: float, stale_after: float, poll: float) -> None:
    deadline = time.monotonic() + timeout
    wait = min(FIRST_WAIT, poll)
    while True:
        if _create(path, token):
            return
        owner = read_owner(path)
        if owner is None:
            continue  # released between our attempt and our look: try again at once
        if _stale(owner, stale_after):
            _remove_stale(path, owner)
            continue
        left = deadline - time.monotonic()
        if left <= 0:
            raise LockTimeout(path, timeout, owner)
        time.sleep(min(wait, left))
        wait = min(wait * 2, poll)


def _body(token: str) -> bytes:
    owner = {"pid": os.getpid(), "host": host_name(), "ts": time.time(), "token": token}
    return json.dumps(owner).encode("utf-8")


def _create(path: Path, token: str) -> bool:
    """Create the lock with our body in one step; False when it exists already."""
    body = _body(token)
    temporary = path.with_name(f"{path.name}.{token}.tmp")
    temporary.write_bytes(body)
    try:
        os.link(temporary, path)
    except FileExistsError:
        return False
    except OSError as error:
        if error.errno not in _NO_HARD_LINKS:
            raise
        return _create_exclusive(path, body)
    finally:
        temporary.unlink(missing_ok=True)
    return True


def _create_exclusive(path: Path, body: bytes) -> bool:
    """The fallback without hard links: create the file exclusively, then write its body."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(descriptor, "wb") as file:
        file.write(body)
    return True


def _stale(owner: LockOwner, stale_after: float) -> bool:
    now = time.time()
    if not owner.readable:
        return owner.mtime is not None and now - owner.mtime > UNREADABLE_GRACE
    assert owner.ts is not None and owner.pid is not None
    if now - owner.ts > stale_after:
        return True
    return owner.host == host_name() and not process_alive(owner.pid)


def _remove_stale(path: Path, owner: LockOwner) -> None:
    """Take a stale lock out of the way; only one contender's rename can succeed."""
    grave = path.with_name(f"{path.name}.stale-{os.urandom(8).hex()}")
    try:
        os.rename(path, grave)
    except FileNotFoundError:
        return  # another contender removed it first
    removed = read_owner(grave)
    if removed is not None and removed.raw != owner.raw:
        # The lock changed hands between our look and the rename: a live lock, put it back.
        _create_exclusive(path, removed.raw)
    grave.unlink(missing_ok=True)


def _release(path: Path, token: str) -> None:
    owner = read_owner(path)
    if owner is not None and owner.token == token:
        path.unlink(missing_ok=True)
