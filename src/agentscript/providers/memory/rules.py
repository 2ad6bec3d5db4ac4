"""The memory semantics every backend shares: envelopes, the query rules and the result order.

Backends only store and fetch; what a record looks like, which records a query keeps and in
which order they come back are decided here, once, so JSONL, SQLite and PostgreSQL can never
disagree. A backend may narrow its candidates in SQL first, but the final word is `matches`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.jsjson import parse, stringify
from agentscript.runtime.values import sanitize

# An envelope as stored and returned: {id, created_at, updated_at, record}.
Envelope = dict[str, Any]

DEFAULT_LIMIT = 10
_ENVELOPE_STRINGS = ("id", "created_at", "updated_at")


def fold(text: str) -> str:
    """The one case-folding rule of the `text` filter: Python's `str.lower()`.

    It applies Unicode's full lowercase mapping (with the final-sigma rule) like JavaScript's
    `toLowerCase`, so results match the original runtime; `casefold` would also fold `ß` to
    `ss`, which JavaScript never does. Every backend folds with this function, in Python,
    never with its database's own case rules.
    """
    return text.lower()


def search_text(record: dict[str, Any]) -> str:
    """The folded text a `text` filter searches: `record.text` if it is a string, else the
    record's JSON text."""
    text = record.get("text")
    return fold(text if isinstance(text, str) else stringify(record))


def timestamp(moment: datetime | None = None) -> str:
    """ISO-8601 UTC with milliseconds and a `Z`, as JavaScript's `Date.toISOString()`."""
    moment = (moment or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def new_envelope(argument: Any) -> Envelope:
    """The envelope `add` stores and returns, or the error for a record that is not an object.

    The record is kept as its JSON round trip, so `add` returns exactly what a later `query`
    reads back, whichever backend stored it.
    """
    if not isinstance(argument, dict):
        raise ExecutionError("memory.add expects an object record")
    created = timestamp()
    return {
        "id": str(uuid.uuid4()),
        "created_at": created,
        "updated_at": created,
        "record": parse(stringify(sanitize(argument))),
    }


def is_envelope(value: Any) -> bool:
    """Whether a stored value has the envelope shape: three string fields and an object record."""
    return (
        isinstance(value, dict)
        and all(isinstance(value.get(key), str) for key in _ENVELOPE_STRINGS)
        and isinstance(value.get("record"), dict)
    )


def newest_first(envelopes: Iterable[Envelope]) -> list[Envelope]:
    """Newest `created_at` first; records from the same millisecond, last stored first.

    `envelopes` must come in storage order. Sorting is stable, so reversing first makes the
    storage order the tie-breaker, as the SQL backends' `seq DESC` does.
    """
    return sorted(reversed(list(envelopes)), key=_created_at, reverse=True)


def oldest_first(envelopes: Iterable[Envelope]) -> list[Envelope]:
    """The export order: oldest `created_at` first, then storage order."""
    return sorted(envelopes, key=_created_at)


def _created_at(envelope: Envelope) -> str:
    created: str = envelope["created_at"]
    return created


@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """A validated `query(q)` argument. Filters that are absent (or, for `kind` and `text`, not
    strings) are None and keep every record."""

    limit: int = DEFAULT_LIMIT
    kind: str | None = None
    # Already folded, ready to look for in `search_text(record)`.
    text: str | None = None
    # Each key with the JSON text its value must have in the record.
    where: tuple[tuple[str, str], ...] | None = None

    @classmethod
    def parse(cls, argument: Any) -> MemoryQuery:
        """Check a query object against the reference rules; unknown keys are ignored."""
        if not isinstance(argument, dict):
            raise ExecutionError("memory.query expects an object query")
        where = None
        if "where" in argument:
            conditions = argument["where"]
            if not isinstance(conditions, dict):
                raise ExecutionError("memory.query where must be an object")
            where = tuple(
                (str(key), stringify(sanitize(value))) for key, value in conditions.items()
            )
        kind = argument.get("kind")
        text = argument.get("text")
        return cls(
            limit=_limit(argument),
            kind=kind if isinstance(kind, str) else None,
            text=fold(text) if isinstance(text, str) else None,
            where=where,
        )

    def matches(self, record: dict[str, Any]) -> bool:
        """Whether `record` passes every filter of this query."""
        if self.kind is not None and record.get("kind") != self.kind:
            return False
        if self.text is not None and self.text not in search_text(record):
            return False
        return self.where is None or all(
            key in record and stringify(record[key]) == expected for key, expected in self.where
        )

    def select(self, ordered: Iterable[Envelope]) -> list[Envelope]:
        """The first `limit` envelopes of `ordered` whose record matches; stops reading early."""
        found: list[Envelope] = []
        for envelope in ordered:
            if self.matches(envelope["record"]):
                found.append(envelope)
                if len(found) == self.limit:
                    break
        return found


def _limit(argument: dict[str, Any]) -> int:
    """`limit`: absent means 10; anything but a positive integer (JavaScript's
    `Number.isInteger`, so `5.0` counts and `true` does not) is refused, null included."""
    if "limit" not in argument:
        return DEFAULT_LIMIT
    value = argument["limit"]
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and not value.is_integer())
        or value <= 0
    ):
        raise ExecutionError("memory.query limit must be a positive integer")
    return int(value)
