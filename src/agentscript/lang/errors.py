"""Positions, ranges and the two error kinds of the front end.

A ParseError stops parsing at the first problem; a Diagnostic is one finding of the checker.
Both carry 1-based line:column positions so every message can say exactly where.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Literal


@dataclass(slots=True)
class Position:
    """A point in source text: 1-based line and column, 0-based offset (UTF-16 units, as 0.1.0)."""

    line: int
    column: int
    offset: int

    def to_json(self) -> dict[str, int]:
        return {"line": self.line, "column": self.column, "offset": self.offset}


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


class SourceMap:
    """Turns code-point offsets into Positions for one source text.

    Positions are computed only when asked for (errors, `parse` output), which keeps the scanner
    and parser fast. Columns and offsets count UTF-16 units, like the original.
    """

    __slots__ = ("_astral", "_line_starts", "_source")

    def __init__(self, source: str) -> None:
        self._source = source
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", source)]
        self._astral = _ASTRAL.search(source) is not None

    def line_of(self, offset: int) -> int:
        return bisect_right(self._line_starts, offset)

    def position(self, offset: int) -> Position:
        line = bisect_right(self._line_starts, offset)
        line_start = self._line_starts[line - 1]
        if not self._astral:
            return Position(line, offset - line_start + 1, offset)
        column = _utf16_len(self._source[line_start:offset]) + 1
        return Position(line, column, _utf16_len(self._source[:offset]))


def _utf16_len(text: str) -> int:
    return len(text) + len(_ASTRAL.findall(text))


class SourceRange:
    """A span of source text between two code-point offsets, positioned on demand."""

    __slots__ = ("end_offset", "source_map", "start_offset")

    def __init__(self, source_map: SourceMap, start_offset: int, end_offset: int) -> None:
        self.source_map = source_map
        self.start_offset = start_offset
        self.end_offset = end_offset

    @property
    def start(self) -> Position:
        return self.source_map.position(self.start_offset)

    @property
    def end(self) -> Position:
        return self.source_map.position(self.end_offset)

    def to(self, other: SourceRange) -> SourceRange:
        """From the start of this range to the end of `other`."""
        return SourceRange(self.source_map, self.start_offset, other.end_offset)

    def to_json(self) -> dict[str, dict[str, int]]:
        return {"start": self.start.to_json(), "end": self.end.to_json()}

    def __repr__(self) -> str:
        start = self.start
        return f"SourceRange({start.line}:{start.column})"


class ParseError(Exception):
    """A lexical or syntax error. `str()` is the 0.1.0 text: `<message> at <line>:<column>`."""

    def __init__(self, message: str, position: Position, path: str | None = None) -> None:
        super().__init__(f"{message} at {position.line}:{position.column}")
        self.bare_message = message
        self.position = position
        self.path = path

    def located(self) -> str:
        """`<message> at <file>:<line>:<column>` when the file is known (the CLI form)."""
        if self.path is None:
            return str(self)
        return f"{self.bare_message} at {self.path}:{self.position.line}:{self.position.column}"


Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding of the checker, with the code and exact message text of reference §3.1."""

    code: str
    message: str
    range: SourceRange
    severity: Severity = "error"
    path: str | None = None

    def format(self) -> str:
        """`ERROR CODE at L:C: message`, the 0.1.0 SemanticError line."""
        start = self.range.start
        return f"{self.severity.upper()} {self.code} at {start.line}:{start.column}: {self.message}"

    def format_located(self) -> str:
        """`ERROR CODE at file:L:C: message`, the CLI form that names the file."""
        if self.path is None:
            return self.format()
        start = self.range.start
        return (
            f"{self.severity.upper()} {self.code} at {self.path}:{start.line}:{start.column}: "
            f"{self.message}"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "range": self.range.to_json(),
        }


class SemanticError(Exception):
    """Raised when a program with error diagnostics is about to run; one line per diagnostic."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__("\n".join(d.format() for d in diagnostics))
        self.diagnostics = diagnostics
