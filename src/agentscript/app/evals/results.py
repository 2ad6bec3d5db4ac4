"""Eval results: one row per (case, configuration), and the JSONL file that keeps them.

Every finished cell is appended and flushed at once, so a crash or Ctrl-C loses at most the
cells in flight. Reopening the file resumes: rows already there (with the same metric) are
kept and not run again; a line cut short by a crash is dropped. A cell stopped by the eval's
budget or an interruption is not written, so it runs when the eval is resumed.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentscript.runtime.bounded_input import USER_FILE_LIMIT, UnusableInput, read_regular_bytes
from agentscript.runtime.errors import AgentScriptError
from agentscript.runtime.jsjson import parse


@dataclass(slots=True)
class CellResult:
    """What one case did in one configuration."""

    id: str
    configuration: str
    model: str | None
    variant: str | None
    score: float
    passed: bool
    value: Any
    expected: Any
    error: str | None = None
    reason: str = ""
    # tokens in/out, model calls, seconds of the agent's run (not the judge's).
    usage: dict[str, float | int] = field(default_factory=dict)
    cost: float | None = None
    run_id: str | None = None
    judge_run_id: str | None = None
    judge_usage: dict[str, float | int] = field(default_factory=dict)
    judge_cost: float | None = None
    metric: str = ""
    learning: str | None = None
    # With learning on: the verdict fed back to the run ("good", "bad", or why it failed).
    feedback: str | None = None
    tags: list[str] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str]:
        return (self.id, self.configuration)

    @property
    def tokens(self) -> int:
        return int(self.usage.get("input_tokens", 0)) + int(self.usage.get("output_tokens", 0))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CellResult:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**known)


class ResultsError(AgentScriptError):
    """A results file that cannot be read or written."""


def read_rows(path: Path) -> dict[tuple[str, str], CellResult]:
    """The rows of a results file, by (case id, configuration), without opening it for an
    eval (`--replay RESULTS.jsonl` reads a previous eval's); a last line cut short is left
    out."""
    try:
        data = read_regular_bytes(path, USER_FILE_LIMIT, "Results file")
    except UnusableInput as problem:
        raise ResultsError(str(problem)) from None
    return parse_rows(path, data[: data.rfind(b"\n") + 1])


def parse_rows(path: Path, data: bytes, hint: str = "") -> dict[tuple[str, str], CellResult]:
    rows: dict[tuple[str, str], CellResult] = {}
    for number, line in enumerate(data.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = CellResult.from_json(parse(line))
        except (ValueError, TypeError) as problem:
            raise ResultsError(f"{path}:{number}: not a result row ({problem}){hint}") from None
        rows[row.key] = row
    return rows


class ResultsFile:
    """The `--out` file: rows loaded on open (unless `fresh`), each new row appended. One eval
    at a time: a second one on the same file is refused (it would run the same cells again and
    interleave their rows), through a lock file beside it, released when the process ends."""

    def __init__(self, path: Path, fresh: bool = False) -> None:
        from filelock import FileLock, Timeout

        self.path = path
        self._lock = threading.Lock()
        self.rows: dict[tuple[str, str], CellResult] = {}
        self._owner = FileLock(f"{path}.lock")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._owner.acquire(timeout=0)
        except Timeout:
            raise ResultsError(
                f"Results file {path} is being written by another eval; wait for it to end"
            ) from None
        except OSError as problem:
            raise ResultsError(f"Cannot use results file {path}: {problem.strerror}") from None
        try:
            if path.exists() and not path.is_file():
                # A FIFO would block the append below; a device would never end.
                raise ResultsError(f"Results file is not a regular file: {path}")
            if fresh or not path.exists():
                path.write_text("", encoding="utf-8")
            else:
                self._load()
            self._file = path.open("a", encoding="utf-8")
        except OSError as problem:
            self._owner.release()
            raise ResultsError(f"Cannot use results file {path}: {problem.strerror}") from None
        except BaseException:
            self._owner.release()
            raise

    def _load(self) -> None:
        try:
            data = read_regular_bytes(self.path, USER_FILE_LIMIT, "Results file")
        except UnusableInput as problem:
            raise ResultsError(str(problem)) from None
        complete = data[: data.rfind(b"\n") + 1]
        if len(complete) != len(data):
            # The last line was cut short (a crash mid-write): drop it so appends start clean.
            with self.path.open("r+b") as file:
                file.truncate(len(complete))
        self.rows.update(parse_rows(self.path, complete, "; use --fresh to start over"))

    def done(self, key: tuple[str, str], metric: str) -> CellResult | None:
        row = self.rows.get(key)
        return row if row is not None and row.metric == metric else None

    def append(self, row: CellResult) -> None:
        line = json.dumps(row.to_json(), ensure_ascii=False, default=str) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()
            self.rows[row.key] = row

    def close(self) -> None:
        with self._lock:
            self._file.close()
        self._owner.release()
