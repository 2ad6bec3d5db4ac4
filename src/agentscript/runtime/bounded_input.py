"""Reading what a user hands over (a program, an input file, a trace, an export, stdin) safely.

A path may name a FIFO (opening it waits for a writer forever), `/dev/zero` (reading it never
ends), a directory, or a file of gigabytes. Each read here is bounded: named files must be
regular files of at most `limit` bytes, streams are read at most `limit` characters at a time,
and each refusal is an `UnusableInput` (a ValueError) whose message says what and why, for the
caller to put its own label in front of.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

MIB = 1024 * 1024
# The most a file handed over on the command line may hold (scripts, cassettes, cases,
# policies, results): far past any real one, and never "until memory runs out".
USER_FILE_LIMIT = 256 * MIB


class UnusableInput(ValueError):
    """A file or stream that cannot be used as input; the message says why."""


def _open_regular(path: Path, what: str) -> int:
    """A descriptor of `path`, which must be a regular file. O_NONBLOCK: opening a FIFO must
    not wait for a writer; the file is refused right after, by its type."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise UnusableInput(f"{what} not found: {path}") from None
    except IsADirectoryError:
        raise UnusableInput(f"{what} is a directory: {path}") from None
    except OSError as problem:
        raise UnusableInput(f"Cannot read {what.lower()} {path}: {problem.strerror}") from None
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise UnusableInput(f"{what} is {kind}: {path}")
    return descriptor


def read_regular_bytes(path: Path, limit: int, what: str) -> bytes:
    """The bytes of the regular file `path`, refused when it is larger than `limit`. `what`
    names the file in messages ("Program file", "--input-file")."""
    descriptor = _open_regular(path, what)
    with os.fdopen(descriptor, "rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise UnusableInput(f"{what} is larger than {_size(limit)}: {path}")
    return data


def read_regular_text(path: Path, limit: int, what: str) -> str:
    """`read_regular_bytes` decoded as UTF-8; text that is not UTF-8 is refused."""
    data = read_regular_bytes(path, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UnusableInput(f"{what} is not UTF-8 text: {path}") from None


def read_stream(stream: TextIO, limit: int, what: str) -> str:
    """All of `stream` (stdin), refused when it holds more than `limit` characters."""
    text = stream.read(limit + 1)
    if len(text) > limit:
        raise UnusableInput(f"{what} is longer than {_size(limit)}")
    return text


def open_lines(path: Path, what: str) -> TextIO:
    """A named file to read line by line (an export): a regular file or a pipe (`<(…)`), never
    a device or a directory. Pair with `bounded_lines`."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise UnusableInput(f"{what} not found: {path}") from None
    except OSError as problem:
        raise UnusableInput(f"Cannot read {what.lower()} {path}: {problem.strerror}") from None
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        kind = "a directory" if stat.S_ISDIR(mode) else "a device or socket"
        raise UnusableInput(f"{what} is {kind}, not a file: {path}")
    # O_NONBLOCK: opening a named FIFO no one writes to must not wait for a writer. Reads then
    # block as usual: a pipe with a writer (`<(…)`) is read to its end, and one without ends
    # at once (no writer is end-of-file).
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as problem:
        raise UnusableInput(f"Cannot read {what.lower()} {path}: {problem.strerror}") from None
    os.set_blocking(descriptor, True)
    return open(descriptor, encoding="utf-8")


def bounded_lines(stream: TextIO, limit: int, where: str) -> Iterator[str]:
    """The lines of `stream`, refusing any longer than `limit` characters: `/dev/zero` on stdin
    has no line end, and must not be read until memory runs out."""
    number = 0
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) > limit and not line.endswith("\n"):
            raise UnusableInput(f"{where}:{number}: line is longer than {_size(limit)}")
        yield line


def _size(limit: int) -> str:
    if limit % MIB == 0:
        return f"{limit // MIB} MiB"
    return f"{limit} bytes"
