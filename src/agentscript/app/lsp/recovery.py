"""Parse what can be parsed of a document that does not parse.

The parser stops at its first error. An editor still wants the outline, hover and completion for
the rest, so the document is parsed again with the offending line blanked out (spaces, so every
offset stays where it was) and, when the error is at the end, with the missing closing braces
added after the text. A few rounds recover the usual states of a file being typed: a half-written
line, an unclosed block. The first error is the one reported; the recovered tree is only read.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentscript.lang import ast
from agentscript.lang.errors import ParseError
from agentscript.lang.parser import parse_program

# Rounds of blanking before giving up; each round costs one parse.
MAX_ROUNDS = 12


@dataclass(frozen=True, slots=True)
class ParseOutcome:
    """The program (as written, or recovered), and the parse error when there was one."""

    program: ast.Program | None
    error: ParseError | None
    # The text the program was parsed from: the document, or it with lines blanked.
    parsed_text: str


def parse_with_recovery(text: str, path: str | None) -> ParseOutcome:
    try:
        return ParseOutcome(parse_program(text, path), None, text)
    except ParseError as first:
        error = first
    attempt = text
    problem = error
    for _ in range(MAX_ROUNDS):
        attempt = _repaired(attempt, problem)
        try:
            return ParseOutcome(parse_program(attempt, path), error, attempt)
        except ParseError as again:
            problem = again
    return ParseOutcome(None, error, text)


def _repaired(text: str, problem: ParseError) -> str:
    """`text` with the line of `problem` blanked, or with a `}` added when the parser ran out
    of text inside a block."""
    offset = min(_code_points(text, problem.position.offset), len(text))
    if offset >= len(text.rstrip()):
        return text + "\n}"
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    if line_end < 0:
        line_end = len(text)
    line = text[line_start:line_end]
    if not line.strip():
        return text + "\n}"
    return text[:line_start] + _blank(line) + text[line_end:]


def _blank(line: str) -> str:
    """Spaces in place of the line's characters, keeping its brace balance so the blocks around
    it still close: an opening brace the line had is kept."""
    kept = "".join(char if char in "{}" else " " for char in line)
    if kept.count("{") > kept.count("}") and kept.strip() != line.strip():
        return kept
    return " " * len(line)


def _code_points(text: str, utf16_offset: int) -> int:
    """The code-point offset of a position the parser gave in UTF-16 units."""
    if text.isascii():
        return utf16_offset
    units = 0
    for index, char in enumerate(text):
        if units >= utf16_offset:
            return index
        units += 2 if ord(char) > 0xFFFF else 1
    return len(text)
