"""`file://path.jsonl`: one envelope per line, appended under a file lock and fsynced.

An append is one write of a whole line, so a crash can only leave a torn last line. Such a
line is reported by every read with its line number, never skipped, because skipping would
hide lost data; `repair_jsonl` moves unreadable lines into `<file>.corrupt` on request. A new
append after a torn line starts on a fresh line, so the torn text never swallows a new record.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from agentscript.providers.memory.rules import (
    Envelope,
    MemoryQuery,
    is_envelope,
    newest_first,
    oldest_first,
    timestamp,
)
from agentscript.providers.memory.store import MemoryStoreError
from agentscript.runtime.jsjson import parse, stringify

LOCK_POLL_SECONDS = 0.001
_APPEND_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC


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


class JsonlStore:
    """A MemoryStore over one JSONL file. Writers in any process take `<file>.lock` first;
    readers read without it unless the file does not end with a newline (see `_read`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = FileLock(f"{path}.lock")

    def add(self, envelope: Envelope) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._locked():
            _append(self.path, (stringify(envelope) + "\n").encode("utf-8"))

    def query(self, query: MemoryQuery) -> list[Envelope]:
        return query.select(newest_first(self._envelopes()))

    def export(self) -> Iterator[Envelope]:
        return iter(oldest_first(self._envelopes()))

    def import_envelopes(self, envelopes: list[Envelope]) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._locked():
            seen = {envelope["id"] for envelope in self._envelopes()}
            lines = []
            for envelope in envelopes:
                if envelope["id"] not in seen:
                    seen.add(envelope["id"])
                    lines.append((stringify(envelope) + "\n").encode("utf-8"))
            if lines:
                _append(self.path, b"".join(lines))
            return len(lines)

    def repair(self) -> RepairReport:
        """Move every unreadable line into `<file>.corrupt` (appended, each with its line
        number and the reason), then atomically rewrite the file with the readable ones."""
        with self._locked():
            try:
                data = self.path.read_bytes()
            except FileNotFoundError:
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
            _append(corrupt, "".join(stringify(entry) + "\n" for entry in entries).encode())
            _replace(self.path, b"".join(line.raw + b"\n" for line in good))
            return RepairReport(self.path, len(good), tuple(line.number for line in bad), corrupt)

    def close(self) -> None:
        """Nothing stays open between operations."""

    def _locked(self) -> AbstractContextManager[object]:
        """The cross-process lock. filelock retries a non-blocking flock; a short interval keeps
        a waiting writer from sleeping long after the holder released it."""
        return self._lock.acquire(poll_interval=LOCK_POLL_SECONDS)

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
        data = _read_if_exists(self.path)
        if data and not data.endswith(b"\n"):
            with self._locked():
                data = _read_if_exists(self.path)
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


def _read_if_exists(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def _append(path: Path, data: bytes) -> None:
    """Append `data` (whole lines) with one write and fsync it; the caller holds the lock.

    When the file ends in a torn line, a newline goes first so the new lines stay whole. A new
    file's directory entry is fsynced too, or a crash could lose the file itself.
    """
    created = not path.exists()
    descriptor = os.open(path, _APPEND_FLAGS, 0o644)
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
