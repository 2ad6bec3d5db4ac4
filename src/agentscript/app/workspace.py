"""A workspace and its stores: journal, memory service, profiles and autonomy ledger.

A use case asks the workspace for what it needs; each store is opened on first use, once, and
`close` closes all of them, in reverse order. The memory service is always the
memory.yml-configured one (agentscript.app.memory_service), and its reads first learn from the
runs waiting in the workspace's journal (agentscript.app.learning).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from agentscript.app.errors import AppError

if TYPE_CHECKING:
    from agentscript.app.learning import LearningBeforeReads
    from agentscript.learn.autonomy_ledger import Ledger
    from agentscript.learn.journal import Journal
    from agentscript.learn.profile import ProfileStore
    from agentscript.memory.service import MemoryService


class Workspace:
    """The directory `root` (which must exist: a typo must not start a new journal or memory
    scope) with its stores; `database` is the memory database (None: the default one)."""

    def __init__(
        self,
        root: str | Path | None,
        *,
        database: str | Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        from agentscript.learn.journal import journal_folder

        # None: the workspace root around the current folder, by the rule `run` journals by.
        self.root = journal_folder(root)
        if not self.root.is_dir():
            raise AppError(f"Workspace {self.root} is not a directory")
        self.database = database
        self.environ = environ
        self._journal: Journal | None = None
        self._memories: dict[Path, MemoryService] = {}
        self._profiles: ProfileStore | None = None
        self._ledger: Ledger | None = None
        self._learning: list[LearningBeforeReads] = []

    @classmethod
    def current(cls, root: str | Path | None, database: str | Path | None = None) -> Workspace:
        """`root`, or the workspace root around the current folder when it is None."""
        return cls(root, database=database)

    @property
    def journal(self) -> Journal:
        if self._journal is None:
            from agentscript.learn.journal import Journal

            self._journal = Journal.for_workspace(self.root)
        return self._journal

    def memory(self, scope_root: str | Path | None = None) -> MemoryService:
        """The configured memory service whose workspace scope is `scope_root` (default: this
        workspace; a run recorded here may name the workspace it ran in)."""
        where = Path(scope_root) if scope_root is not None else self.root
        service = self._memories.get(where)
        if service is None:
            from agentscript.app.learning import LearningBeforeReads
            from agentscript.app.memory_service import open_memory_service, read_tool_links

            service = open_memory_service(where, database=self.database, environ=self.environ)
            read_tool_links(service, self.root)
            journals = [self.root] + ([where] if where != self.root else [])
            learning = LearningBeforeReads(service, journals, self.database)
            self._learning.append(learning)
            self._memories[where] = service
            learning.catch_up()
        return service

    @property
    def problems(self) -> list[str]:
        """What went wrong learning from the runs that waited (the reads went on)."""
        return [problem for hook in self._learning for problem in hook.problems]

    @property
    def profiles(self) -> ProfileStore:
        if self._profiles is None:
            from agentscript.learn.profile import ProfileStore

            self._profiles = ProfileStore(self.root)
        return self._profiles

    @property
    def ledger(self) -> Ledger:
        if self._ledger is None:
            from agentscript.learn.autonomy_ledger import Ledger

            self._ledger = Ledger.for_workspace(self.root)
        return self._ledger

    def close(self) -> None:
        """Close every store that was opened (the profiles and the ledger hold nothing open)."""
        services, self._memories = list(self._memories.values()), {}
        for service in reversed(services):
            service.close()
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    def __enter__(self) -> Workspace:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
