"""What a queued run is, and how a worker carries it out from the journal.

A job is plain JSON (it is stored by the queue and read by another process, maybe on another
machine): the program's path and the digest of all its files at submit time, the input, the
workspace, and the run's budgets. The queue (DBOS) owns when and where a job runs; the run
journal owns what a run did. A worker runs each attempt of a job under a run id the queue
recorded for it, so when a worker dies mid-run, the worker that takes the job over finds the
dead attempt in the journal and resumes it (app/resume.py): answered model calls are not sent
again and tools with effects do not run again, except for a call in flight at the kill, which
may be sent once more (the same guarantee and the same honest exception as `runs resume`).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscript.app.errors import AppError

if TYPE_CHECKING:
    from agentscript.lang import ast


@dataclass(frozen=True, slots=True)
class RunJob:
    program: str
    digest: str
    input: Any
    workspace: str | None = None
    max_calls: int | None = None
    max_tokens: int | None = None
    max_seconds: float | None = None
    # Which case of an input file this is (its line), for the results.
    label: str = ""
    # As `agentscript run`'s options: `--model` values, `use one of` picks, the entry point.
    models: list[str] = field(default_factory=list)
    variants: dict[str, str] = field(default_factory=dict)
    agent: str | None = None
    function: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunJob:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**known)


@dataclass(slots=True)
class JobOutcome:
    """How a job ended: `ok` with its value, or the error; the journal's run ids of each attempt
    (more than one when a worker died and another took over) and what the last one spent."""

    ok: bool
    value: Any = None
    error: str | None = None
    runs: list[str] = field(default_factory=list)
    # What the last attempt spent: model calls, input and output tokens, seconds.
    usage: dict[str, float | int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def pin(program_path: str | Path, input_value: Any, **options: Any) -> RunJob:
    """A job for `program_path` as its files read now (their digest is checked before every
    attempt, program_for), with the program checked first: a program with errors is refused
    at submit."""
    from agentscript.app.programs import check, load, program_digest

    path = Path(program_path).resolve()
    program = load(path)
    errors = [d for d in check(program) if d.severity == "error"]
    if errors:
        raise AppError("; ".join(d.format() for d in errors))
    return RunJob(str(path), program_digest(program), input_value, **options)


def new_job_id(now: float) -> str:
    """A queued run's id, chosen at submit: the journal's run id form (it sorts by submit time)
    with a longer random part, because a submit may name a thousand runs in one second and the
    queue takes a second job under a known id for the first. The job's first attempt is
    journaled under this very id, so `runs show ID` reads what `submit` printed."""
    from agentscript.learn.journal import new_run_id

    return f"{new_run_id(now)}{os.urandom(3).hex()}"


def attempt_run_id(job_id: str, number: int) -> str:
    """The journal's run id of the job's `number`th attempt: the job's own id, then `ID-2`,
    `ID-3`… A replayed job walks the same ids, so it finds the attempts before it."""
    return job_id if number == 1 else f"{job_id}-{number}"


# The programs this process loaded for jobs, by path: the file signatures they were read at,
# their digest and the program. A worker runs the same few programs thousands of times; a file
# whose size, inode or modification time changed is read again. The oldest go past KEPT.
KEPT_PROGRAMS = 64
_loaded: dict[str, tuple[tuple[tuple[str, int, int, int], ...], str, ast.Program]] = {}
_loaded_lock = threading.Lock()


def program_for(job: RunJob) -> ast.Program | str:
    """The job's program as it was submitted, or why it may not run now (it changed or went
    away): a queued run never mixes two versions."""
    loaded = _load(job.program)
    if isinstance(loaded, str):
        return loaded
    digest, program = loaded
    if digest != job.digest:
        return (
            f"the program {job.program} changed since the run was submitted; submit it again "
            "to run the new text (a queued run never mixes two versions)"
        )
    return program


def _load(path: str) -> tuple[str, ast.Program] | str:
    """The program at `path` and its digest, from this process's cache while its files are
    unchanged, or why it cannot be read. What is kept was read whole before any of its files
    changed (each file older than the reading, and the same after the digest as before), so a
    cached program is the text its digest names."""
    from agentscript.app.programs import load, program_digest, program_files
    from agentscript.runtime.errors import LoadError

    with _loaded_lock:
        cached = _loaded.get(path)
    if cached is not None and _signatures([name for name, *_ in cached[0]]) == cached[0]:
        return cached[1], cached[2]
    started = time.time_ns()
    try:
        program = load(path)
        files = program_files(program)
        before = _signatures(files)
        digest = program_digest(program)
    except (OSError, AppError, LoadError) as problem:
        return f"the program {path} cannot be read now: {problem}"
    except Exception as problem:  # a parse error: the file changed into something else
        return f"the program {path} no longer loads: {problem}"
    settled = all(modified < started for *_, modified in before)
    if before and settled and before == _signatures(files):
        with _loaded_lock:
            _loaded.pop(path, None)
            _loaded[path] = (before, digest, program)
            while len(_loaded) > KEPT_PROGRAMS:
                del _loaded[next(iter(_loaded))]
    return digest, program


def _signatures(paths: list[str]) -> tuple[tuple[str, int, int, int], ...]:
    """Each file's path, size, inode and modification time (nanoseconds); empty when one is
    gone. A file rewritten in place changes its time or size; one replaced, its inode."""
    found = []
    for path in paths:
        try:
            status = os.stat(path)
        except OSError:
            return ()
        found.append((path, status.st_size, status.st_ino, status.st_mtime_ns))
    return tuple(found)
