"""What a SqliteStore's write transactions keep from one to the next, so a remember does not
ask the file again what the previous one just wrote: the numbers of scope and session names,
the active entries of each scope, each session's latest entries (its linked context), the ids
of postings' shapes and how many postings wait in the index's tail, and whether the file holds
ids that are not UUIDs.

Each of these is a statement a remember would otherwise run. They stay exact because they are
trusted only while nothing else has changed the file: SQLite's `PRAGMA data_version` changes
exactly when another connection (any process) has committed since this one last looked, and it
is read inside the write transaction, after the lock is taken, so no commit can slip in
between. A transaction that rolls back leaves the state it changed behind (the store drops it),
and the store's own writes outside transactions that touch what is kept (a rebuild, a scrub)
drop it too, as does a new connection (data_version is one connection's count); a transaction
that re-indexes an entry (a replace, a delete) forgets the tail's count. Each map is bounded;
one grown past its bound is emptied when a transaction ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentscript.memory.sqlite_postings import KnownIndex

# Bounds of what is kept (entries of each map): a host writes to few scopes and sessions at a
# time; shapes repeat (a few thousand at 100,000 chat turns).
MAX_NAMES = 4_096
MAX_SESSIONS = 1_024
MAX_SHAPES = 65_536


@dataclass(slots=True)
class WriteState:
    """Valid for the file as it was at `data_version` (None: not yet read)."""

    data_version: int | None = None
    # (table, name) → the number memory_scopes or memory_sessions gives the name.
    numbers: dict[tuple[str, str], int] = field(default_factory=dict)
    # scope → its active entries as memory_scope_counts holds them.
    active: dict[str, int] = field(default_factory=dict)
    # (scope, session) → (seq, body) of its latest episodic entries, nearest first.
    recent: dict[tuple[str, str], list[tuple[int, str]]] = field(default_factory=dict)
    # The text index's shapes' ids and the postings waiting in its tail.
    index: KnownIndex = field(default_factory=KnownIndex)
    # Whether memory_meta notes ids stored as text (None: not yet read).
    text_ids: bool | None = None

    def trim(self) -> None:
        """Empty the maps grown past their bounds (between transactions only: inside one,
        `recent` stands for session tails not yet written)."""
        for kept, bound in (
            (self.numbers, MAX_NAMES),
            (self.active, MAX_NAMES),
            (self.recent, MAX_SESSIONS),
            (self.index.shapes, MAX_SHAPES),
        ):
            if len(kept) > bound:
                kept.clear()
