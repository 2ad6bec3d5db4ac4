"""The feedback use case: how a run went, applied to what it taught (agentscript.learn.feedback)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from agentscript.app.workspace import Workspace

if TYPE_CHECKING:
    from agentscript.learn.feedback import FeedbackReport


def give_feedback(
    workspace: str | Path,
    reference: str,
    verdict: Literal["good", "bad"],
    note: str | None = None,
    database: str | Path | None = None,
) -> FeedbackReport:
    """Apply `verdict` (and `note`) to the run `reference` of the workspace's journal, in the
    memory of the workspace the run ran in."""
    from agentscript.learn.feedback import apply_feedback

    with Workspace(workspace, database=database) as place:
        found = place.journal.resolve(reference)
        service = place.memory(found.workspace)
        return apply_feedback(place.journal, service, found.run_id, verdict, note)
