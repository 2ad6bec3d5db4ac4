"""What a remember decides on: the active entry holding its key, or the twin its text merges
into (an unkeyed entry of the same kind and normalised title, the oldest first).

One remember asks the store for them (`AskedEach`). A batch asks once for every item
(`KnownForBatch`): one query for all its keys, one for all its titles, then keeps the answers
current as its own items are written, so each item sees the items before it exactly as the
same remembers one by one would, without a query of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from agentscript.memory.entries import MERGING_KINDS, Entry, Kind
from agentscript.memory.store import EntryFilter, StoreReader, StoreTransaction


class Existing(Protocol):
    def keyed(self, scope: str, key: str) -> Entry | None:
        """The active entry of `scope` with `key`."""
        ...

    def twin(self, scope: str, kind: Kind, title_norm: str) -> Entry | None:
        """The oldest active unkeyed entry of `scope` of `kind` with this normalised title."""
        ...

    def written(self, entry: Entry) -> None:
        """`entry` was just inserted or replaced in the transaction."""
        ...


class AskedEach:
    """Existing entries read from the transaction at each question."""

    def __init__(self, reader: StoreTransaction) -> None:
        self._reader = reader

    def keyed(self, scope: str, key: str) -> Entry | None:
        return self._reader.active_with_key(scope, key)

    def twin(self, scope: str, kind: Kind, title_norm: str) -> Entry | None:
        return _first(
            self._reader.select(
                EntryFilter(scopes=(scope,), kinds=(kind,), title_norm=title_norm, keyed=False),
                order="created",
                descending=False,
                limit=1,
            )
        )

    def written(self, entry: Entry) -> None:
        """Nothing to keep: the next question reads the transaction again."""


class KnownForBatch:
    """Existing entries for a batch of candidates, read once (per scope) before any is
    written, then kept as the batch writes."""

    def __init__(self, reader: StoreReader, candidates: Sequence[Entry]) -> None:
        self._keyed: dict[tuple[str, str], Entry] = {}
        self._twins: dict[tuple[str, str, str], Entry] = {}
        for scope in dict.fromkeys(candidate.scope for candidate in candidates):
            mine = [candidate for candidate in candidates if candidate.scope == scope]
            keys = tuple({c.key for c in mine if c.key is not None})
            if keys:
                for entry in reader.select(EntryFilter(scopes=(scope,), keys=keys)):
                    self._keyed[(scope, entry.key or "")] = entry
            merging = [c for c in mine if c.key is None and c.kind in MERGING_KINDS]
            if merging:
                found = reader.select(
                    EntryFilter(
                        scopes=(scope,),
                        kinds=tuple({c.kind for c in merging}),
                        title_norms=tuple({c.title_norm for c in merging}),
                        keyed=False,
                    ),
                    order="created",
                    descending=False,
                )
                for entry in found:
                    self._twins.setdefault((scope, entry.kind, entry.title_norm), entry)

    def keyed(self, scope: str, key: str) -> Entry | None:
        return self._keyed.get((scope, key))

    def twin(self, scope: str, kind: Kind, title_norm: str) -> Entry | None:
        return self._twins.get((scope, kind, title_norm))

    def written(self, entry: Entry) -> None:
        if entry.key is not None:
            slot = (entry.scope, entry.key)
            if entry.active:
                self._keyed[slot] = entry
            elif slot in self._keyed and self._keyed[slot].id == entry.id:
                del self._keyed[slot]
        elif entry.kind in MERGING_KINDS and entry.active:
            title = (entry.scope, entry.kind, entry.title_norm)
            known = self._twins.get(title)
            if known is None or known.id == entry.id:
                self._twins[title] = entry


def _first(entries: list[Entry]) -> Entry | None:
    return entries[0] if entries else None
