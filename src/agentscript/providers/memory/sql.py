"""The SQL both database backends run, written once: the fixed table, its rows and the query.

Statements are assembled from fixed fragments only; every value (namespace, kind, text, ids) is
a bound parameter, so nothing a program writes can change a statement. The table is the
reference's `memory_records` plus two columns: `seq`, the storage order that breaks ties
between records of the same millisecond, and `search_text`, the record's text folded by
`rules.fold` in Python, so the database never applies its own case rules. The SQL `WHERE`
narrows candidates; `MemoryQuery.select` decides, so the result equals the JSONL backend's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from agentscript.providers.memory.rules import Envelope, MemoryQuery, search_text
from agentscript.providers.memory.store import MemoryStoreError
from agentscript.runtime.jsjson import parse, stringify

_COLUMNS = "namespace, id, created_at, updated_at, kind, text, record_json, search_text"
_SELECTED = "id, created_at, updated_at, record_json"
# PostgreSQL text cannot hold NUL, and SQLite's string functions stop at it; neither can hold a
# lone surrogate (UTF-8 has none). The same character-for-character replacement on both sides
# of a comparison keeps every true match (and the exact check in Python, on the record itself,
# which `stringify` keeps exact, drops any false one).
_STANDIN = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class SqlDialect:
    """What differs between the two databases; everything else is shared below."""

    # Names the backend in messages: `Invalid <name> memory record '<id>'`.
    name: str
    placeholder: str
    # A condition true when `search_text` contains the parameter `{p}`.
    contains: str
    # Extra insert columns and their values, for a `seq` the database does not number itself.
    seq_column: str = ""
    seq_value: str = ""

    def insert(self) -> str:
        """Insert one row; a row whose (namespace, id) exists is left alone."""
        values = ", ".join([self.placeholder] * 8)
        return (
            f"INSERT INTO memory_records ({_COLUMNS}{self.seq_column}) "
            f"VALUES ({values}{self.seq_value}) ON CONFLICT (namespace, id) DO NOTHING"
        )

    def select(self, query: MemoryQuery) -> tuple[str, list[str]]:
        """The candidates for `query` in the result order, newest first, and their parameters.

        No `LIMIT`: the caller stops reading once `query.limit` records matched in Python.
        """
        p = self.placeholder
        conditions = [f"namespace = {p}"]
        parameters: list[str] = []
        if query.kind is not None:
            conditions.append(f"kind = {p}")
            parameters.append(_column_text(query.kind))
        if query.text:
            conditions.append(self.contains.format(p=p))
            parameters.append(_column_text(query.text))
        statement = (
            f"SELECT {_SELECTED} FROM memory_records WHERE {' AND '.join(conditions)} "
            "ORDER BY created_at DESC, seq DESC"
        )
        return statement, parameters

    def select_all(self) -> str:
        """Every row of one namespace, oldest first (the export order)."""
        p = self.placeholder
        return (
            f"SELECT {_SELECTED} FROM memory_records WHERE namespace = {p} ORDER BY created_at, seq"
        )


def row_values(namespace: str, envelope: Envelope) -> tuple[Any, ...]:
    """The insert parameters for `envelope`, in `_COLUMNS` order."""
    record = envelope["record"]
    kind = record.get("kind")
    text = record.get("text")
    return (
        namespace,
        envelope["id"],
        envelope["created_at"],
        envelope["updated_at"],
        _column_text(kind) if isinstance(kind, str) else None,
        _column_text(text) if isinstance(text, str) else None,
        stringify(record),
        search_column(record),
    )


def search_column(record: dict[str, Any]) -> str:
    """The `search_text` value of a row holding `record`."""
    return _column_text(search_text(record))


def parse_record(dialect: SqlDialect, identifier: str, record_json: str) -> dict[str, Any]:
    """The record a row's `record_json` holds, or the error naming the row."""
    try:
        record = parse(record_json)
    except ValueError as error:
        raise MemoryStoreError(
            f"Invalid {dialect.name} memory record '{identifier}': {error}"
        ) from None
    if not isinstance(record, dict):
        raise MemoryStoreError(
            f"Invalid {dialect.name} memory record '{identifier}': not an object"
        )
    return record


def envelopes(dialect: SqlDialect, rows: Iterable[tuple[Any, ...]]) -> Iterator[Envelope]:
    """Envelopes from `SELECT id, created_at, updated_at, record_json` rows, lazily."""
    for identifier, created_at, updated_at, record_json in rows:
        yield {
            "id": identifier,
            "created_at": created_at,
            "updated_at": updated_at,
            "record": parse_record(dialect, identifier, record_json),
        }


def _column_text(value: str) -> str:
    return _UNSTORABLE.sub(_STANDIN, value)
