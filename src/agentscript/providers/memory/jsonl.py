"""`file://path.jsonl`: one envelope per line, appended under a file lock and fsynced.

An append is one write of a whole line, so a crash can only leave a torn last line. Such a
line is reported by every read with its line number, never skipped, because skipping would
hide lost data; `repair_jsonl` moves unreadable lines into `<file>.corrupt` on request. A new
append after a torn line starts on a fresh line, so the torn text never swallows a new record.

A program's memory file lies in its workspace, and every file of it (the records, `.lock`,
`.corrupt`) is opened through the workspace jail: directories walked and files opened without
following symlinks, so a directory swapped for a link after the path was checked cannot send a
record outside. A file named on the command line (`memory repair FILE`) is opened as named.
"""

from __future__ import annotations

import fcntl
import os
import stat
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agentscript.providers.memory.rules import (
    Envelope,
    MemoryQuery,
    is_envelope,
    newest_first,
    oldest_first,
    timestamp,
)
from agentscript.providers.memory.store import MemoryStoreError
from agentscript.providers.tools.workspace import Workspace, WorkspaceError
from agentscript.runtime.jsjson import parse, stringify

# The most a memory file may hold: reading one larger (or a device named as one) is refused.
MAX_MEMORY_FILE_BYTES = 256 * 1024 * 1024
_APPEND_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class _Line:
    """One non-blank line of a memory file: its envelope, or why it is unreadable."""

    number: int
    raw: bytes
    envelope: Envelope | None
    problem: str | None


@dataclass(frozen=True, slots=True)
class RepairReport:
    """What `repair_jsonl` did: envelopes kept, line numbers moved aside, and where to."""

    path: Path
    kept: int
    moved: tuple[int, ...]
    corrupt_path: Path | None


class _Files:
    """Opens the memory file and its companions: through the jail when there is one, else by
    name. Paths are absolute; inside a jail they must lie below its root."""

    def __init__(self, jail: Workspace | None) -> None:
        self.jail = jail

    def open(self, path: Path, flags: int, mode: int = 0o644) -> int:
        """A descriptor of the regular file `path`. O_NONBLOCK: a FIFO named as the memory
        file must not hold the open until a writer comes; it is refused right after, by its
        type, as a device would be (reading /dev/zero never ends)."""
        if self.jail is None:
            if flags & os.O_CREAT:
                path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(path, flags | os.O_NONBLOCK, mode)
        else:
            descriptor = self.jail.open_file(self._inside(path), flags | os.O_NONBLOCK, mode)
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            os.close(descriptor)
            raise MemoryStoreError(f"Memory file is not a regular file: {path}")
        os.set_blocking(descriptor, True)
        return descriptor

    def read_if_exists(self, path: Path) -> bytes:
        try:
            descriptor = self.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return b""
        with os.fdopen(descriptor, "rb") as handle:
            data = handle.read(MAX_MEMORY_FILE_BYTES + 1)
        if len(data) > MAX_MEMORY_FILE_BYTES:
            raise MemoryStoreError(
                f"Memory file is larger than {MAX_MEMORY_FILE_BYTES // (1024 * 1024)} MiB: {path}"
            )
        return data

    def append(self, path: Path, data: bytes) -> None:
        """Append `data` (whole lines) with one write and fsync it; the caller holds the lock.
        When the file ends in a torn line, a newline goes first so the new lines stay whole.
        A new file's directory entry is fsynced too, or a crash could lose the file itself."""
        created = self.jail is None and not path.exists()
        descriptor = self.open(path, _APPEND_FLAGS)
        try:
            size = os.fstat(descriptor).st_size
            if size and os.pread(descriptor, 1, size - 1) != b"\n":
                data = b"\n" + data
            _write_all(descriptor, data)
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        if created:
            _fsync_directory(path.parent)

    def replace(self, path: Path, data: bytes) -> None:
        """Atomically replace the file at `path` with `data`, keeping its permissions."""
        if self.jail is not None:
            self.jail.write_bytes(self._inside(path), data)
            return
        _replace(path, data)

    def _inside(self, path: Path) -> str:
        """`path` relative to the jail's root, its directory's symlinks resolved now (the jail
        refuses any link met later)."""
        assert self.jail is not None
        try:
            parent = os.path.realpath(path.parent)
        except OSError as problem:  # a link changing while it is resolved
            raise WorkspaceError(
                f"Memory path '{path}' cannot be resolved: {problem.strerror}"
            ) from None
        relative = os.path.relpath(os.path.join(parent, path.name), self.jail.root)
        if relative.startswith(".."):
            raise WorkspaceError(
                f"Memory path '{path}' is outside workspace root '{self.jail.root}'"
            )
        return relative


class JsonlStore:
    """A MemoryStore over one JSONL file. Writers in any process take `<file>.lock` first;
    readers read without it unless the file does not end with a newline (see `_read`). With a
    `jail` (the run's workspace), every file is opened through it."""

    def __init__(self, path: Path, jail: Workspace | None = None) -> None:
        self.path = path
        self._files = _Files(jail)
        self._lock_path = path.with_name(path.name + ".lock")
        # The lock is a flock on `<file>.lock` (what filelock takes too), held per thread.
        self._held = threading.local()

    def add(self, envelope: Envelope) -> None:
        with self._locked():
            self._files.append(self.path, (stringify(envelope) + "\n").encode("utf-8"))

    def query(self, query: MemoryQuery) -> list[Envelope]:
        return query.select(newest_first(self._envelopes()))

    def export(self) -> Iterator[Envelope]:
        return iter(oldest_first(self._envelopes()))

    def import_envelopes(self, envelopes: list[Envelope]) -> int:
        with self._locked():
            seen = {envelope["id"] for envelope in self._envelopes()}
            lines = []
            for envelope in envelopes:
                if envelope["id"] not in seen:
                    seen.add(envelope["id"])
                    lines.append((stringify(envelope) + "\n").encode("utf-8"))
            if lines:
                self._files.append(self.path, b"".join(lines))
            return len(lines)

    def repair(self) -> RepairReport:
        """Move every unreadable line into `<file>.corrupt` (appended, each with its line
        number and the reason), then atomically rewrite the file with the readable ones."""
        with self._locked():
            data = self._files.read_if_exists(self.path)
            if not data:
                return RepairReport(self.path, 0, (), None)
            lines = list(_scan(self.path, data))
            good = [line for line in lines if line.envelope is not None]
            bad = [line for line in lines if line.problem is not None]
            if not bad:
                return RepairReport(self.path, len(good), (), None)
            corrupt = self.path.with_name(self.path.name + ".corrupt")
            moved_at = timestamp()
            entries = [
                {
                    "line": line.number,
                    "problem": line.problem,
                    "text": line.raw.decode("utf-8", "backslashreplace"),
                    "moved_at": moved_at,
                }
                for line in bad
            ]
            self._files.append(
                corrupt, "".join(stringify(entry) + "\n" for entry in entries).encode()
            )
            self._files.replace(self.path, b"".join(line.raw + b"\n" for line in good))
            return RepairReport(self.path, len(good), tuple(line.number for line in bad), corrupt)

    def close(self) -> None:
        """Nothing stays open between operations."""

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The cross-process lock: an exclusive flock on `<file>.lock`, opened like the file
        itself. Re-entrant within a thread (a locked read may need it again)."""
        if getattr(self._held, "depth", 0):
            self._held.depth += 1
            try:
                yield
            finally:
                self._held.depth -= 1
            return
        descriptor = self._files.open(self._lock_path, _LOCK_FLAGS)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            self._held.depth = 1
            try:
                yield
            finally:
                self._held.depth = 0
        finally:
            os.close(descriptor)

    def _envelopes(self) -> list[Envelope]:
        """Every envelope in file order, or the error for the first unreadable line."""
        envelopes = []
        for line in _scan(self.path, self._read()):
            if line.problem is not None:
                raise MemoryStoreError(line.problem)
            assert line.envelope is not None
            envelopes.append(line.envelope)
        return envelopes

    def _read(self) -> bytes:
        """The file's bytes (empty when it does not exist yet).

        Appends end with a newline, so a file that does not is either being appended to right
        now or was torn by a crash. Only then is the lock taken and the file read again: a
        torn line that is still there under the lock is a real one and will be reported.
        """
        data = self._files.read_if_exists(self.path)
        if data and not data.endswith(b"\n"):
            with self._locked():
                data = self._files.read_if_exists(self.path)
        return data


def repair_jsonl(path: str | Path) -> RepairReport:
    """Repair the memory file at `path` (see JsonlStore.repair)."""
    return JsonlStore(Path(path)).repair()


def _scan(path: Path, data: bytes) -> Iterator[_Line]:
    """The non-blank lines of `data` (split on `\\r?\\n`), numbered from 1, each checked."""
    for index, raw in enumerate(data.split(b"\n"), start=1):
        raw = raw.removesuffix(b"\r")
        if not raw.strip():
            continue
        try:
            value = parse(raw.decode("utf-8"))
        except ValueError as error:
            # UnicodeDecodeError and json.JSONDecodeError are both ValueErrors.
            yield _Line(index, raw, None, f"Invalid memory JSONL at {path}:{index}: {error}")
            continue
        if is_envelope(value):
            yield _Line(index, raw, value, None)
        else:
            yield _Line(index, raw, None, f"Invalid memory JSONL envelope at {path}:{index}")


def _replace(path: Path, data: bytes) -> None:
    """Atomically replace the file at `path` with `data`, keeping its permissions."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        try:
            os.fchmod(descriptor, os.stat(path).st_mode & 0o7777)
            _write_all(descriptor, data)
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def _write_all(descriptor: int, data: bytes) -> None:
    """Write all of `data`. A regular file takes the whole buffer in one write unless the disk
    is full or a signal interrupts it; the loop finishes such a short write."""
    written = 0
    while written < len(data):
        written += os.write(descriptor, data[written:])


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
