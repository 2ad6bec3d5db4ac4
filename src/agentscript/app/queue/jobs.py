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

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentscript.app.errors import AppError


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
    attempt), with the program checked first: a program with errors is refused at submit."""
    from agentscript.app.programs import check, load, program_digest

    path = Path(program_path).resolve()
    program = load(path)
    errors = [d for d in check(program) if d.severity == "error"]
    if errors:
        raise AppError("; ".join(d.format() for d in errors))
    return RunJob(str(path), program_digest(program), input_value, **options)


def changed_since_submit(job: RunJob) -> str | None:
    """Why the job's program may not run now (it changed or went away), or None."""
    from agentscript.app.programs import load, program_digest

    try:
        digest = program_digest(load(job.program))
    except (OSError, AppError) as problem:
        return f"the program {job.program} cannot be read now: {problem}"
    except Exception as problem:  # a parse error: the file changed into something else
        return f"the program {job.program} no longer loads: {problem}"
    if digest != job.digest:
        return (
            f"the program {job.program} changed since the run was submitted; submit it again "
            "to run the new text (a queued run never mixes two versions)"
        )
    return None
