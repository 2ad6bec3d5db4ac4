"""Moving entries between databases: which entries an export holds, and how an import adds
them (ids, scopes, times and versions kept) without touching what is already stored.

The file format (one JSON entry per line, checked field by field) belongs to the application
layer (agentscript.app.memory_transfer); these are the service's rules for the entries.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from agentscript.memory.entries import Entry, check_size
from agentscript.memory.errors import CONFLICT, MemoryServiceError
from agentscript.memory.scopes import parse_scope
from agentscript.memory.service import MemoryService
from agentscript.memory.store import EntryFilter, StoreConflict


def export_scopes(
    service: MemoryService, scope: str | None = None, every_scope: bool = False
) -> tuple[str, ...]:
    """The scopes an export covers: every scope in the database, one scope, or (neither) the
    scopes the service's workspace reads."""
    if every_scope:
        return tuple(count.scope for count in service.store.scopes())
    if scope is not None:
        return (parse_scope(scope),)
    return service.scopes_for(None).read


def export_entries(service: MemoryService, scopes: tuple[str, ...]) -> Iterator[Entry]:
    """Every entry of `scopes`, archived and superseded ones too, oldest first."""
    return service.store.export(scopes) if scopes else iter(())


class ImportConflict(MemoryServiceError):
    """An imported entry clashes with a stored one, or holds a known secret (code
    `contains_secret`); `number` says which of the input's."""

    def __init__(self, number: int, message: str, code: str = CONFLICT) -> None:
        super().__init__(code, message)
        self.number = number


def import_entries(service: MemoryService, entries: Sequence[tuple[int, Entry]]) -> tuple[int, int]:
    """Insert `entries` (numbered as the input numbers them) as they are; returns (added,
    skipped). All are written in one transaction, so a conflict (an active entry of the same
    key or summary bucket with another id) imports nothing. Ids the database already holds,
    in any scope, and ids repeated in the input are skipped. An entry holding a secret the
    service knows imports nothing either: credentials are never remembered, imported ones
    neither; nor does one larger than `remember` takes (max_entry_bytes)."""
    for number, entry in entries:
        try:
            service.refuse_secrets_in(entry)
            # What `remember` refuses as too large, an import refuses too.
            check_size(entry, service.config.max_entry_bytes)
        except MemoryServiceError as refused:
            raise ImportConflict(number, refused.message, refused.code) from None
    known = {count.scope for count in service.store.scopes()}
    added = skipped = 0
    seen: set[str] = set()
    with service.store.transaction() as tx:
        for number, entry in entries:
            scopes = tuple(sorted(known | {entry.scope}))
            held = tx.select(EntryFilter(scopes=scopes, ids=(entry.id,), archived=None), limit=1)
            if entry.id in seen or held:
                skipped += 1
                continue
            try:
                tx.insert(entry)
            except StoreConflict as conflict:
                raise ImportConflict(number, conflict.message) from None
            seen.add(entry.id)
            known.add(entry.scope)
            added += 1
    return added, skipped
