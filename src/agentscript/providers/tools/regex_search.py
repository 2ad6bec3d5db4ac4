"""Regular-expression grep in a worker process (regex_worker.py), bounded in every direction.

Python's regex engine backtracks, and a search inside it cannot be interrupted, so the search
runs in a child process that is killed when the time cap (REGEX_TIMEOUT_SECONDS, or less when
the run's `--max-seconds` ends sooner) passes or the run is interrupted. The worker reports its
progress, which tells the two ways of running out of time apart: progress that stopped means
the pattern is backtracking catastrophically on one line (named in the error); progress that
kept coming means the search was merely slow (the error says how far it got). Text beyond
REGEX_MAX_TOTAL_BYTES is not searched, and the result then says `truncated: true`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

from agentscript.runtime.budgets import CallDeadline
from agentscript.runtime.errors import ExecutionError

REGEX_TIMEOUT_SECONDS = 5.0
REGEX_MAX_PATTERN = 1000
# Text handed to one regex worker; beyond it the remaining files are not searched.
REGEX_MAX_TOTAL_BYTES = 64 * 1024 * 1024
# No progress report for this long means the worker is stuck on one line.
STUCK_SECONDS = 1.0
POLL_SECONDS = 0.05


@dataclass(slots=True)
class _Progress:
    """What the worker said so far, as the reader thread saw it."""

    file_index: int = 0
    line: int = 0
    reported_at: float = 0.0
    answer: dict[str, Any] | None = None


def check_pattern(pattern: str) -> None:
    """Refuse a pattern that is too long or does not compile, with a message and no traceback."""
    if len(pattern) > REGEX_MAX_PATTERN:
        raise ExecutionError(
            f"Grep.run regex pattern is longer than {REGEX_MAX_PATTERN} characters"
        )
    try:
        re.compile(pattern)
    except re.error as problem:
        raise ExecutionError(f"Grep.run regex pattern is invalid: {problem}") from None
    except (RecursionError, OverflowError):
        raise ExecutionError(
            "Grep.run regex pattern is invalid: it is nested too deeply to compile"
        ) from None


def bounded(files: Iterable[tuple[str, str]], total: int) -> tuple[list[tuple[str, str]], bool]:
    """The first files whose text fits in `total` characters (no file past them is read), and
    whether any were left out."""
    chosen: list[tuple[str, str]] = []
    size = 0
    for path, text in files:
        size += len(text)
        if size > total:
            return chosen, True
        chosen.append((path, text))
    return chosen, False


def regex_matches(
    pattern: str, files: Iterable[tuple[str, str]], limit: int, deadline: CallDeadline
) -> tuple[list[dict[str, Any]], bool]:
    """The matches of `pattern` in `files` (at most `limit`), and whether a cap cut them."""
    check_pattern(pattern)
    searched, left_out = bounded(files, REGEX_MAX_TOTAL_BYTES)
    job = json.dumps({"pattern": pattern, "max": limit, "files": searched})
    cap = deadline.seconds_left(REGEX_TIMEOUT_SECONDS)
    run_ends_first = deadline.binds(REGEX_TIMEOUT_SECONDS)
    worker = subprocess.Popen(
        [sys.executable, "-m", "agentscript.providers.tools.regex_worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        encoding="utf-8",
    )
    started = time.monotonic()
    progress = _Progress(reported_at=started)
    threads = [
        threading.Thread(target=_feed, args=(worker.stdin, job), daemon=True),
        threading.Thread(target=_read, args=(worker.stdout, progress), daemon=True),
    ]
    for thread in threads:
        thread.start()
    try:
        while not _exited(worker):
            deadline.check()
            if time.monotonic() - started > cap:
                if run_ends_first:
                    raise deadline.exceeded()
                raise _timed_out(progress, searched)
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.wait()
        for thread in threads:
            thread.join()
    answer = progress.answer
    if answer is None:
        raise ExecutionError(
            f"Grep.run regex search failed: the worker exited with status {worker.returncode}"
        )
    if "invalid" in answer:
        raise ExecutionError(f"Grep.run regex pattern is invalid: {answer['invalid']}")
    if "error" in answer:
        raise ExecutionError(f"Grep.run regex search failed: {answer['error']}")
    matches: list[dict[str, Any]] = answer["matches"]
    return matches, bool(answer["truncated"]) or left_out


def _exited(worker: subprocess.Popen[str]) -> bool:
    """Whether the worker exited, waiting at most POLL_SECONDS for it."""
    try:
        worker.wait(timeout=POLL_SECONDS)
    except subprocess.TimeoutExpired:
        return False
    return True


def _timed_out(progress: _Progress, files: list[tuple[str, str]]) -> ExecutionError:
    seconds = f"{REGEX_TIMEOUT_SECONDS:g} seconds"
    if time.monotonic() - progress.reported_at >= STUCK_SECONDS and progress.file_index < len(
        files
    ):
        path = files[progress.file_index][0]
        return ExecutionError(
            f"Grep.run regex search took longer than {seconds}: the pattern backtracks "
            f"catastrophically (stuck on {path} at or after line {max(progress.line, 1)}); "
            "rewrite it without nested repetition such as (a+)+"
        )
    return ExecutionError(
        f"Grep.run regex search took longer than {seconds}: the search was still making "
        f"progress (file {progress.file_index + 1} of {len(files)}), so it is slow rather than "
        "stuck; narrow `path` or `include`, or search without `regex`"
    )


def _feed(stream: IO[str] | None, job: str) -> None:
    assert stream is not None
    try:
        stream.write(job)
        stream.close()
    except (BrokenPipeError, OSError, ValueError):
        pass  # the worker was killed or failed: its exit says why


def _read(stream: IO[str] | None, progress: _Progress) -> None:
    assert stream is not None
    for line in stream:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        if "progress" in message:
            progress.file_index, progress.line = message["progress"]
            progress.reported_at = time.monotonic()
        else:
            progress.answer = message
