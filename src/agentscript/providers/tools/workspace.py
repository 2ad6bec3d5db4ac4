"""The workspace jail: every file a host tool touches lies inside one root directory.

Paths are resolved component by component from an open directory descriptor of the root, never
by handing a joined path string to the OS: `..` cannot climb out, absolute paths are refused,
a symlink is followed only when its target stays inside, and every open uses O_NOFOLLOW so a
symlink swapped in after the check is refused, not followed. Hard-linked files (the other link
may live outside), device files, FIFOs and sockets are refused, and so are files over the size
cap. Writes are atomic: a temporary file in the same directory, fsync, rename, fsync of the
directory. Every refusal says `Path escapes workspace: <path>` or names the limit.
"""

from __future__ import annotations

import errno
import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from agentscript.runtime.errors import ExecutionError

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
# AgentScript's state directory in a workspace; tree walks from the root pass over it.
STATE_DIRECTORY = ".agentscript"
MAX_SYMLINK_HOPS = 40
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
# Added to every open_file: no link followed, no FIFO waited on, nothing leaked to children.
_OPEN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class WorkspaceError(ExecutionError):
    """A path was refused by the jail."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One file or directory met while walking a tree. Read it by the entry itself, not by
    `path`: a name may hold a `\\`, which a path a program writes takes as a separator."""

    path: str  # workspace-relative, "/"-separated; "." for the root
    is_dir: bool
    parts: tuple[str, ...] = ()  # the names below the root, as the file system has them


class Workspace:
    """A root directory and the only ways host tools may read and change files under it."""

    def __init__(
        self,
        root: str | Path,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        windows_paths: bool = True,
    ) -> None:
        """`windows_paths`: paths a program writes may use `\\` and `C:` (refused or split as
        on Windows); off for paths that are POSIX names already (memory files)."""
        resolved = os.path.realpath(root)
        if not os.path.isdir(resolved):
            raise ExecutionError(f"Workspace root is not a directory: {root}")
        self.root = Path(resolved)
        self.max_file_bytes = max_file_bytes
        self.windows_paths = windows_paths

    # ------------------------------------------------------------------ path resolution

    def parts(self, path: str) -> list[str]:
        """The canonical components of `path` below the root, symlinks resolved, or a refusal.

        Missing trailing components are allowed (a file about to be written)."""
        if not isinstance(path, str) or path == "" or "\x00" in path:
            raise self.escape(str(path))
        try:
            os.fsencode(path)
        except UnicodeEncodeError:
            # A lone surrogate that is not an undecodable file-name byte: no file has this name.
            raise WorkspaceError(f"Path is not a valid file name: {path!r}") from None
        windows_root = path.startswith("\\") or (len(path) > 1 and path[1] == ":")
        if path.startswith("/") or (self.windows_paths and windows_root):
            raise self.escape(path)
        pending = (path.replace("\\", "/") if self.windows_paths else path).split("/")
        resolved: list[str] = []
        hops = 0
        while pending:
            part = pending.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if not resolved:
                    raise self.escape(path)
                resolved.pop()
                continue
            kind = self._lstat_kind(resolved, part)
            if kind == "link":
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise self.escape(path)
                target = self._readlink(resolved, part)
                if target is None:
                    # Swapped for something else since the look: look at it again (the hops
                    # bound keeps a path swapped back and forth from walking for ever).
                    pending.insert(0, part)
                    continue
                if target.startswith("/"):
                    inside = self._inside_root(target)
                    if inside is None:
                        raise self.escape(path)
                    resolved = []
                    pending = inside + pending
                else:
                    pending = target.split("/") + pending
                continue
            resolved.append(part)
            if kind is None:
                # Nothing exists here yet: the rest is taken as written (for writes).
                for rest in pending:
                    if rest in ("", "."):
                        continue
                    if rest == "..":
                        if len(resolved) <= 0:
                            raise self.escape(path)
                        resolved.pop()
                    else:
                        resolved.append(rest)
                return resolved
        return resolved

    def relative(self, path: str) -> str:
        """The canonical workspace-relative form of `path` ("." for the root)."""
        return "/".join(self.parts(path)) or "."

    def escape(self, path: str) -> WorkspaceError:
        return WorkspaceError(f"Path escapes workspace: {path}")

    def _inside_root(self, absolute: str) -> list[str] | None:
        root = str(self.root)
        normal = os.path.normpath(absolute)
        if normal == root:
            return []
        if normal.startswith(root + os.sep):
            return normal[len(root) + 1 :].split(os.sep)
        return None

    def _lstat_kind(self, parents: list[str], name: str) -> str | None:
        with self._directory(parents) as fd:
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return None
        if stat.S_ISLNK(info.st_mode):
            return "link"
        return "dir" if stat.S_ISDIR(info.st_mode) else "file"

    def _readlink(self, parents: list[str], name: str) -> str | None:
        """The link's target; None when `name` stopped being a link after it was looked at."""
        with self._directory(parents) as fd:
            try:
                return os.readlink(name, dir_fd=fd)
            except OSError as problem:
                if problem.errno in (errno.EINVAL, errno.ENOENT):
                    return None
                raise

    # ------------------------------------------------------------------ descriptors

    @contextmanager
    def _directory(
        self, parts: list[str], create: bool = False, created: list[str] | None = None
    ) -> Iterator[int]:
        """An open descriptor of the directory `parts` below the root, walked with O_NOFOLLOW.
        With `create`, missing directories are made and their paths added to `created`."""
        fd = os.open(self.root, _DIRECTORY_FLAGS)
        try:
            for depth, part in enumerate(parts):
                try:
                    child = self._open_directory(part, fd, parts)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(part, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass  # another writer made it meanwhile: not ours for undo to remove
                    else:
                        if created is not None:
                            created.append("/".join(parts[: depth + 1]))
                    child = self._open_directory(part, fd, parts)
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    def _open_directory(self, part: str, parent: int, parts: list[str]) -> int:
        """The directory `part` inside `parent`, never through a symbolic link."""
        try:
            return os.open(part, _DIRECTORY_FLAGS, dir_fd=parent)
        except OSError as problem:
            if problem.errno == errno.ELOOP:
                raise self.escape("/".join(parts)) from None
            if problem.errno == errno.ENOTDIR:
                raise ExecutionError(f"Not a directory: {'/'.join(parts)}") from None
            raise

    def _split(self, path: str | Entry) -> tuple[list[str], str]:
        parts = list(path.parts) if isinstance(path, Entry) else self.parts(path)
        if not parts:
            raise WorkspaceError(f"Path is the workspace root, not a file: {_shown(path)}")
        return parts[:-1], parts[-1]

    def _check_regular(self, info: os.stat_result, path: str) -> None:
        if stat.S_ISDIR(info.st_mode):
            raise WorkspaceError(f"Path is a directory, not a file: {path}")
        if not stat.S_ISREG(info.st_mode):
            raise WorkspaceError(f"Path escapes workspace: {path} (not a regular file)")
        if info.st_nlink > 1:
            raise WorkspaceError(f"Path escapes workspace: {path} (a hard link)")

    # ------------------------------------------------------------------ reading

    def exists(self, path: str) -> bool:
        parents, name = self._split(path)
        try:
            with self._directory(parents) as fd:
                os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def is_dir(self, path: str) -> bool:
        parts = self.parts(path)
        try:
            with self._directory(parts):
                return True
        except (FileNotFoundError, NotADirectoryError, WorkspaceError):
            return False

    def read_bytes(self, entry: str | Entry, limit: int | None = None) -> bytes:
        cap = self.max_file_bytes if limit is None else limit
        parents, name = self._split(entry)
        path = _shown(entry)
        try:
            with self._directory(parents) as directory:
                try:
                    fd = os.open(name, _READ_FLAGS, dir_fd=directory)
                except OSError as problem:
                    if problem.errno == errno.ELOOP:
                        raise self.escape(path) from None
                    raise
        except FileNotFoundError:
            raise ExecutionError(f"File not found: {path}") from None
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            self._check_regular(info, path)
            if info.st_size > cap:
                raise WorkspaceError(
                    f"File is larger than the workspace limit of {cap} bytes: {path}"
                )
            data = _read_capped(handle, cap)
        if len(data) > cap:
            raise WorkspaceError(f"File is larger than the workspace limit of {cap} bytes: {path}")
        return data

    def open_file(self, path: str, flags: int, mode: int = 0o644) -> int:
        """A descriptor of the regular file `path`, for callers that append or lock (the
        memory JSONL files). The directories are walked and the file opened without following
        symlinks, so a directory swapped for a link after the check is refused, not followed.
        With O_CREAT in `flags`, missing directories and the file are created (and the new
        file's directory entry fsynced). Raises FileNotFoundError when it does not exist."""
        parents, name = self._split(path)
        create = bool(flags & os.O_CREAT)
        with self._directory(parents, create=create) as directory:
            created = create and not self._exists_in(directory, name)
            try:
                fd = os.open(name, flags | _OPEN_FLAGS, mode, dir_fd=directory)
            except OSError as problem:
                if problem.errno == errno.ELOOP:
                    raise self.escape(path) from None
                raise
            if created:
                os.fsync(directory)
        try:
            self._check_regular(os.fstat(fd), path)
        except BaseException:
            os.close(fd)
            raise
        return fd

    @staticmethod
    def _exists_in(directory: int, name: str) -> bool:
        try:
            os.stat(name, dir_fd=directory, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def read_file(self, path: Path, limit: int) -> bytes:
        """The file at absolute `path`, which must lie inside the root (runtime's FileImports
        port, for `import file`): jailed exactly like `read_bytes`."""
        inside = self._inside_root(os.path.abspath(path))
        if inside is None:
            raise WorkspaceError(f"Path escapes workspace {self.root}: {path}")
        return self.read_bytes("/".join(inside) or ".", limit)

    def read_text(self, path: str | Entry, limit: int | None = None) -> str:
        return self.read_bytes(path, limit).decode("utf-8", errors="replace")

    def size(self, path: str | Entry) -> int:
        parents, name = self._split(path)
        with self._directory(parents) as fd:
            return os.stat(name, dir_fd=fd, follow_symlinks=False).st_size

    def list_names(self, path: str) -> list[str]:
        parts = self.parts(path)
        try:
            with self._directory(parts) as fd:
                return sorted(os.listdir(fd))
        except FileNotFoundError:
            raise ExecutionError(f"Directory not found: {path}") from None
        except NotADirectoryError:
            raise ExecutionError(f"Not a directory: {path}") from None

    def walk(self, path: str) -> Iterator[Entry]:
        """The start path itself, then everything below it depth-first in sorted order.
        Symlinks are skipped entirely, as the original did, and so is the workspace's own
        `.agentscript/` state directory unless the walk starts inside it."""
        parts = self.parts(path)
        start = "/".join(parts) or "."
        if parts:
            parents, name = parts[:-1], parts[-1]
            try:
                with self._directory(parents) as fd:
                    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return
            if stat.S_ISLNK(info.st_mode):
                return
            if not stat.S_ISDIR(info.st_mode):
                yield Entry(start, False, tuple(parts))
                return
        yield Entry(start, True, tuple(parts))
        with self._directory(parts) as fd:
            yield from self._walk_below(fd, "" if start == "." else start, tuple(parts))

    def _walk_below(self, fd: int, prefix: str, above: tuple[str, ...]) -> Iterator[Entry]:
        for name in sorted(os.listdir(fd)):
            if not prefix and name == STATE_DIRECTORY:
                # Our own state (journal, memory, effect side store) is not the user's files.
                continue
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            relative = f"{prefix}/{name}" if prefix else name
            parts = (*above, name)
            if stat.S_ISLNK(info.st_mode):
                continue
            if stat.S_ISDIR(info.st_mode):
                yield Entry(relative, True, parts)
                child = os.open(name, _DIRECTORY_FLAGS, dir_fd=fd)
                try:
                    yield from self._walk_below(child, relative, parts)
                finally:
                    os.close(child)
            else:
                yield Entry(relative, False, parts)

    # ------------------------------------------------------------------ writing

    def write_bytes(self, path: str, data: bytes) -> list[str]:
        """Replace (or create) the file atomically. Missing parent directories are created;
        their workspace-relative paths are returned, outermost first."""
        if len(data) > self.max_file_bytes:
            raise WorkspaceError(
                f"File is larger than the workspace limit of {self.max_file_bytes} bytes: {path}"
            )
        parents, name = self._split(path)
        created: list[str] = []
        with self._directory(parents, create=True, created=created) as directory:
            mode = 0o644
            try:
                info = os.stat(name, dir_fd=directory, follow_symlinks=False)
            except FileNotFoundError:
                info = None
            if info is not None:
                if stat.S_ISLNK(info.st_mode):
                    raise self.escape(path)
                self._check_regular(info, path)
                mode = stat.S_IMODE(info.st_mode)
            temporary = f".{name}.{uuid.uuid4().hex[:12]}.tmp"
            fd = os.open(
                temporary,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                mode,
                dir_fd=directory,
            )
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.rename(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
            except BaseException:
                with suppress(FileNotFoundError):
                    os.unlink(temporary, dir_fd=directory)
                raise
            os.fsync(directory)
        return created

    def write_text(self, path: str, text: str) -> list[str]:
        return self.write_bytes(path, text.encode("utf-8"))

    def remove_empty_directory(self, path: str) -> bool:
        """Remove the directory `path` if it is empty; True when it was removed."""
        parents, name = self._split(path)
        with self._directory(parents) as directory:
            try:
                os.rmdir(name, dir_fd=directory)
            except (FileNotFoundError, OSError):
                return False
            os.fsync(directory)
            return True

    def delete(self, path: str) -> None:
        parents, name = self._split(path)
        with self._directory(parents) as directory:
            info = os.stat(name, dir_fd=directory, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                raise self.escape(path)
            self._check_regular(info, path)
            os.unlink(name, dir_fd=directory)
            os.fsync(directory)


def _read_capped(handle: BinaryIO, cap: int) -> bytes:
    """Read to the end, or to one byte past `cap` (a file may grow while it is read)."""
    chunks: list[bytes] = []
    size = 0
    while size <= cap:
        chunk = handle.read(min(1 << 20, cap + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _shown(path: str | Entry) -> str:
    return path.path if isinstance(path, Entry) else path
