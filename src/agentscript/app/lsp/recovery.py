"""Parse what can be parsed of a document that does not parse.

The parser stops at its first error. An editor still wants the outline, hover and completion for
the rest, so the document is parsed again with a suspect line blanked out (spaces, so every
offset stays where it was) or, when the error is at the end, with a closing brace added after
the text; of the repairs tried in a round, the one the parser gets furthest with is kept. A few
rounds recover the usual states of a file being typed: a half-written line, an unclosed call or
block. The first error is the one reported; the recovered tree is only read.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from agentscript.lang import ast
from agentscript.lang.errors import ParseError
from agentscript.lang.parser import parse_program

# Rounds of repair before giving up; each round costs up to three parses.
MAX_ROUNDS = 8
# How many lines back an unclosed `(` or `[` is looked for.
_LOOKBACK = 20
# How a line that stops inside an expression ends.
_UNFINISHED = (".", ",", "=", "(", "[", "+", "-", "*", "/", "<", ">", ":", "->")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')


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
    attempt, problem = text, error
    for _ in range(MAX_ROUNDS):
        best: tuple[int, str, ParseError] | None = None
        for candidate in _repairs(attempt, problem):
            try:
                return ParseOutcome(parse_program(candidate, path), error, candidate)
            except ParseError as again:
                progress = _code_points(candidate, again.position.offset)
                if best is None or progress > best[0]:
                    best = (progress, candidate, again)
        if best is None:
            break
        _, attempt, problem = best
    return ParseOutcome(None, error, text)


def _repairs(text: str, problem: ParseError) -> list[str]:
    """Texts that may parse further: with `}` added when the parser ran out of text inside a
    block; else with one line blanked — the error's, the code line before it (an error often
    shows on the token after the mistake), or the nearest line before it that leaves a `(` or
    `[` open (a call or list not closed swallows the lines after it)."""
    offset = min(_code_points(text, problem.position.offset), len(text))
    if offset >= len(text.rstrip()):
        return [text + "\n}"]
    starts = [0] + [index + 1 for index, char in enumerate(text) if char == "\n"]
    lines = text.split("\n")
    at = bisect_right(starts, offset) - 1
    chosen = [at]
    before = next((n for n in range(at - 1, -1, -1) if lines[n].strip()), None)
    if before is not None:
        # A line ending in the middle of an expression is the likelier mistake: try it first.
        unfinished = _code(lines[before]).rstrip().endswith(_UNFINISHED)
        chosen.insert(0 if unfinished else 1, before)
    unbalanced = next(
        (n for n in range(at, max(at - _LOOKBACK, -1), -1) if _leaves_open(lines[n])), None
    )
    if unbalanced is not None and unbalanced not in chosen:
        chosen.append(unbalanced)
    repairs: list[str] = []
    for number in chosen:
        if lines[number].strip():
            blanked = [*lines[:number], _blank(lines[number]), *lines[number + 1 :]]
            repairs.append("\n".join(blanked))
    return repairs or [text + "\n}"]


def _code(line: str) -> str:
    """The line without its strings and comment."""
    return _STRING.sub('""', line).split("//", 1)[0]


def _leaves_open(line: str) -> bool:
    code = _code(line)
    return code.count("(") > code.count(")") or code.count("[") > code.count("]")


def _blank(line: str) -> str:
    """Spaces in place of the line's characters, keeping an opening brace the line leaves open
    so the blocks around it still close (unless braces are all that is left of it)."""
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
