"""The undo use case: revert the file effects a run recorded in its trace, newest first
(agentscript.providers.tools.effects); a file changed since the run is left as it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentscript.app.errors import AppError
from agentscript.runtime.jsjson import parse


def undo_trace_file(
    path: str | Path, workspace: str | Path | None, dry_run: bool
) -> dict[str, Any]:
    """Undo the effects of the trace saved at `path` (a trace, or a whole `run` output);
    `workspace` roots records that do not name theirs. A dry run changes nothing."""
    from agentscript.providers.tools.effects import undo_trace

    trace = read_trace_file(path)
    return undo_trace(trace, default_root=str(workspace) if workspace else None, dry_run=dry_run)


def read_trace_file(path: str | Path) -> list[Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as problem:
        raise AppError(f"Cannot read trace {path}: {problem.strerror}") from None
    try:
        trace = parse(text)
    except ValueError as problem:
        raise AppError(f"Trace {path} is not valid JSON: {problem}") from None
    if isinstance(trace, dict) and isinstance(trace.get("trace"), list):
        trace = trace["trace"]  # the whole `run` output was saved
    if not isinstance(trace, list):
        raise AppError(f"Trace {path} must be a JSON list of events")
    return trace
