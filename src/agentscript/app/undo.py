"""The undo use case: revert the file effects a run recorded in its trace, newest first, in one
workspace (agentscript.providers.tools.effects); a file changed since the run is left as it
is, and records of another workspace are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentscript.app.errors import AppError
from agentscript.runtime.bounded_input import MIB
from agentscript.runtime.jsjson import parse

# A trace file larger than this is refused before it is read.
MAX_TRACE_BYTES = 64 * MIB


def undo_trace_file(
    path: str | Path, workspace: str | Path | None, dry_run: bool, force: bool = False
) -> dict[str, Any]:
    """Undo the effects of the trace saved at `path` (a trace, or a whole `run` output) in
    `workspace` (default: the current directory). A dry run changes nothing; `force` also
    undoes records that carry no content hash."""
    from agentscript.providers.tools.effects import undo_trace

    trace = read_trace_file(path)
    root = Path(workspace) if workspace is not None else Path.cwd()
    return undo_trace(trace, root, dry_run=dry_run, force=force)


def read_trace_file(path: str | Path) -> list[Any]:
    from agentscript.runtime.bounded_input import UnusableInput, read_regular_text

    try:
        text = read_regular_text(Path(path), MAX_TRACE_BYTES, "Trace")
    except UnusableInput as problem:
        raise AppError(str(problem)) from None
    try:
        trace = parse(text)
    except ValueError as problem:
        raise AppError(f"Trace {path} is not valid JSON: {problem}") from None
    if isinstance(trace, dict) and isinstance(trace.get("trace"), list):
        trace = trace["trace"]  # the whole `run` output was saved
    if not isinstance(trace, list):
        raise AppError(f"Trace {path} must be a JSON list of events")
    return trace
