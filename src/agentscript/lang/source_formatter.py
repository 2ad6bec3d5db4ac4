"""The program formatter: canonical layout for a whole source file, comments kept.

formatter.py gives the canonical text of one expression (what `use` records); this module lays
out a file. Line breaks are kept where the author put them, because the grammar reads them (a
`use … as` label runs to the end of its line, an untyped shape field ends at one). What changes is
the layout inside and around lines: four spaces per open bracket line, one space between tokens
where the house style has one (`a = b`, `{ x }`, `f(x, y)`, `key: value`), no trailing spaces,
at most one blank line in a row, one newline at the end. Comments stay where they were.

The result must mean exactly what the input meant: `format_source` re-parses its output and
compares the trees, and refuses (raises FormatRefused) rather than return a changed program.
"""

from __future__ import annotations

import re
from typing import Any

from agentscript.lang.errors import SourceMap
from agentscript.lang.lexer import tokenize
from agentscript.lang.parser import parse_program
from agentscript.lang.tokens import Token, TokenKind

INDENT = "    "

_OPENERS = frozenset("{([")
_CLOSERS = frozenset("})]")
_COMMENT = re.compile(r"//[^\n]*")
# Tokens after which `-` is binary (a value ended) rather than unary. Keywords serve as names
# too (`input`), so they count as well, except the operator words.
_VALUE_END_KINDS = frozenset({TokenKind.IDENTIFIER, TokenKind.NUMBER, TokenKind.STRING})
# Words after which `(` or `[` starts a value instead of a call or an index.
_WORDS_BEFORE_VALUE = frozenset({"if", "return", "use", "until", "in", "and", "or", "not", "max"})


class FormatRefused(Exception):
    """The formatted text would not parse to the same program; the input is left as it is."""


def format_source(source: str, path: str | None = None) -> str:
    """`source` in canonical layout. Raises ParseError when it does not parse, FormatRefused
    when layout alone cannot be changed without changing the program."""
    before = parse_program(source, path)
    formatted = _Layout(source).text()
    try:
        after = parse_program(formatted, path)
    except Exception as problem:  # a layout bug must never cost the user their program
        raise FormatRefused(f"formatting would break the program: {problem}") from None
    if _shape(before.to_json()) != _shape(after.to_json()):
        raise FormatRefused("formatting would change the program's meaning")
    return formatted


def _shape(data: Any) -> Any:
    """A syntax tree's JSON without positions, for comparing two layouts of one program."""
    if isinstance(data, dict):
        return {
            key: _shape(value) for key, value in data.items() if not key.lower().endswith("range")
        }
    if isinstance(data, list):
        return [_shape(item) for item in data]
    return data


class _Layout:
    def __init__(self, source: str) -> None:
        self.source = source
        self.map = SourceMap(source)
        self.tokens = tokenize(source)[:-1]  # without EOF
        # Line numbers of the lines that opened each bracket still open.
        self.open_lines: list[int] = []

    def text(self) -> str:
        lines: list[str] = []
        previous_end = 0
        row: list[Token] = []
        for token in self.tokens:
            gap = self.source[previous_end : token.start]
            if row and "\n" in gap:
                lines.extend(self.render(row, _COMMENT.search(gap.split("\n", 1)[0])))
                row = []
                comments_and_blanks = gap.split("\n", 1)[1]
                lines.extend(self.between_lines(comments_and_blanks))
            elif not row:
                lines.extend(self.between_lines(gap))
            row.append(token)
            previous_end = token.end
        tail = self.source[previous_end:]
        if row:
            lines.extend(self.render(row, _COMMENT.search(tail.split("\n", 1)[0])))
            tail = tail.split("\n", 1)[1] if "\n" in tail else ""
        lines.extend(self.between_lines(tail))
        return _squeeze_blank_lines(lines)

    def between_lines(self, gap: str) -> list[str]:
        """Comment lines and blank lines between two rows of code, at the current depth."""
        out: list[str] = []
        for raw in gap.split("\n"):
            stripped = raw.strip()
            out.append(self.indent(len(self.open_lines_distinct())) + stripped if stripped else "")
        # A gap's last piece is the indentation before the next token, not a line.
        return out[:-1]

    def open_lines_distinct(self) -> list[int]:
        distinct: list[int] = []
        for line in self.open_lines:
            if not distinct or distinct[-1] != line:
                distinct.append(line)
        return distinct

    def indent(self, depth: int) -> str:
        return INDENT * depth

    def render(self, row: list[Token], trailing_comment: re.Match[str] | None) -> list[str]:
        """One row of tokens (a source line, or several when a string spans lines)."""
        depth = self.track_brackets(row)
        parts: list[str] = []
        previous: Token | None = None
        for position, token in enumerate(row):
            if previous is not None:
                if _is_label_start(row, position):
                    parts.append(" " + self.source[token.start : row[-1].end])
                    break
                parts.append(" " if _spaced(previous, token, row, position) else "")
            parts.append(self.source[token.start : token.end])
            previous = token
        text = self.indent(depth) + "".join(parts)
        if trailing_comment is not None:
            text += " " + trailing_comment.group().rstrip()
        return text.split("\n")

    def track_brackets(self, row: list[Token]) -> int:
        """Open and close the row's brackets; the row's depth is what is open once the closers
        that start it are closed."""
        line = self.map.line_of(row[0].start)
        index = 0
        while index < len(row) and row[index].symbol in _CLOSERS:
            if self.open_lines:
                self.open_lines.pop()
            index += 1
        depth = len(self.open_lines_distinct())
        for token in row[index:]:
            if token.symbol in _OPENERS:
                self.open_lines.append(line)
            elif token.symbol in _CLOSERS and self.open_lines:
                self.open_lines.pop()
        return depth


def _spaced(left: Token, right: Token, row: list[Token], position: int) -> bool:
    """Whether one space separates `left` and `right` (adjacent tokens on one line)."""
    ls, rs = left.symbol, right.symbol
    if rs in (",", ".", ":") or ls == ".":
        return False
    if ls in ("(", "[") or rs in (")", "]"):
        return False
    if ls == "{":
        return rs != "}"
    if rs == "{" or ls == "}" or rs == "}":
        return True
    if rs in ("(", "["):
        # A call or an index attaches; after an operator or a statement word it is a value.
        return (ls is not None and ls not in _CLOSERS) or left.value in _WORDS_BEFORE_VALUE
    # A unary minus attaches to its operand.
    return not (ls == "-" and _is_unary(row, position - 1))


def _ends_value(token: Token) -> bool:
    if token.kind in _VALUE_END_KINDS:
        return True
    if token.kind is TokenKind.KEYWORD:
        return token.value in ("true", "false", "none")
    return token.symbol in _CLOSERS


def _is_unary(row: list[Token], position: int) -> bool:
    """Whether the `-` at `position` negates what follows (nothing that ends a value is before
    it on the line)."""
    return position == 0 or not _ends_value(row[position - 1])


def _is_label_start(row: list[Token], position: int) -> bool:
    """`as` after a `use` (or a `use one of` block's `}`) starts a label, which is copied as
    written: the parser keeps its words and the gaps between them."""
    token = row[position - 1]
    if not token.is_word("as"):
        return False
    return row[0].is_word("use") or row[0].symbol == "}"


def _squeeze_blank_lines(lines: list[str]) -> str:
    out: list[str] = []
    for line in lines:
        if line == "" and (not out or out[-1] == ""):
            continue
        out.append(line.rstrip())
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n" if out else ""
