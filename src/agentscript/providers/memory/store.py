"""What a memory backend must do, and how it reports that its data cannot be used.

A store keeps envelopes in storage order and answers queries through `rules`; it never makes
envelopes or decides what matches. Every store is safe to share between threads.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from agentscript.providers.memory.rules import Envelope, MemoryQuery
from agentscript.runtime.errors import AgentScriptError


class MemoryStoreError(AgentScriptError):
    """The stored data or the database cannot be used (a corrupt line, a refused connection).

    Deliberately not an ExecutionError: the interpreter then prefixes the message with
    `Memory <Name>.<op> (<uri>) failed:`, which names the resource the data belongs to.
    """


class MemoryStore(Protocol):
    def add(self, envelope: Envelope) -> None:
        """Store one new envelope durably; return only once it would survive a crash."""
        ...

    def query(self, query: MemoryQuery) -> list[Envelope]:
        """The matching envelopes, newest first, at most `query.limit` of them."""
        ...

    def export(self) -> Iterator[Envelope]:
        """Every envelope, oldest first."""
        ...

    def import_envelopes(self, envelopes: list[Envelope]) -> int:
        """Store the envelopes whose id is not stored yet, in order; return how many."""
        ...

    def close(self) -> None: ...
