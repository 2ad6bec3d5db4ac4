"""Offsets in our source (code points) to and from LSP positions (0-based, UTF-16 units)."""

from __future__ import annotations

from bisect import bisect_right

from lsprotocol import types

from agentscript.lang.errors import SourceRange


class LineIndex:
    """Line starts of one text, for turning LSP positions into code-point offsets and back."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        for index, char in enumerate(text):
            if char == "\n":
                self.starts.append(index + 1)

    def offset(self, position: types.Position) -> int:
        """The code-point offset of an LSP position (clamped to the text)."""
        if position.line >= len(self.starts):
            return len(self.text)
        start = self.starts[position.line]
        end = self.starts[position.line + 1] - 1 if position.line + 1 < len(self.starts) else None
        line = self.text[start:end]
        units = 0
        for index, char in enumerate(line):
            if units >= position.character:
                return start + index
            units += 2 if ord(char) > 0xFFFF else 1
        return start + len(line)

    def position(self, offset: int) -> types.Position:
        line = bisect_right(self.starts, offset) - 1
        start = self.starts[line]
        prefix = self.text[start:offset]
        return types.Position(line=line, character=len(prefix) + _astral_count(prefix))

    def range(self, start: int, end: int) -> types.Range:
        return types.Range(start=self.position(start), end=self.position(end))


def _astral_count(text: str) -> int:
    return sum(1 for char in text if ord(char) > 0xFFFF) if not text.isascii() else 0


def lsp_range(where: SourceRange) -> types.Range:
    """A SourceRange (1-based lines and UTF-16 columns) as an LSP range."""
    start, end = where.start, where.end
    return types.Range(
        start=types.Position(line=start.line - 1, character=start.column - 1),
        end=types.Position(line=end.line - 1, character=end.column - 1),
    )
