"""How much a workspace's runs use each tool, read from the task graph's tool links.

Every learned run strengthens the link between each pair of tools it called one after the
other (Hebbian, graph.TaskGraph.ingest) and links fade with time. `Memory.experiences` reads
them through the memory service's `ToolUsage` port (memory/experience_text.py): of two equally
reinforced lessons, the one about tools the workspace's runs use together now ranks first. The
journal is opened on the first question only, and only when the workspace has one: reading
memory never creates a journal.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentscript.learn.journal import Journal


class JournalToolUsage:
    """The `ToolUsage` of the journal at `path` (tool names compared without case, as
    experience tags keep them)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._journal: Journal | None = None

    def strength(self, tool: str) -> float:
        journal = self._open()
        if journal is None:
            return 0.0
        wanted = tool.lower()
        return sum(
            weight
            for link, weight in journal.graph.tool_links()
            if wanted in (link.first.lower(), link.second.lower())
        )

    def _open(self) -> Journal | None:
        if self._journal is None and self.path.is_file():
            from agentscript.learn.journal import Journal

            self._journal = Journal.open(self.path)
        return self._journal

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None
