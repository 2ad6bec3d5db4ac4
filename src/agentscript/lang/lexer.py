"""The scanner: source text to tokens carrying code-point offsets.

Tokens carry offsets only; a SourceMap turns an offset into a 1-based line:column (in UTF-16
units, as the original counted) when an error or the `parse` output needs one. Newlines are not
tokens; the parser asks the map for line numbers where a later form depends on line breaks.
"""

from __future__ import annotations

import re

from agentscript.lang.errors import ParseError, SourceMap
from agentscript.lang.tokens import KEYWORDS, Token, TokenKind

# A hyphen continues an identifier only when a name character follows it: `step-1` stays one
# identifier (0.1.0), while `x -= 1`, `x-=1` and `a - b` read as operators.
_TOKEN = re.compile(
    r"""
    (?P<skip>(?:[ \t\r\n]+|//[^\n]*)+)
  | (?P<name>[A-Za-z_](?:[A-Za-z0-9_]|-(?=[A-Za-z0-9_]))*)
  | (?P<number>[0-9]+(?:\.[0-9]+)?(?:[A-Za-z_][A-Za-z0-9_]*)?)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<symbol>->|==|!=|<=|>=|\+=|-=|[{}()\[\].,:=!<>*+\-/|])
  | (?P<error>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_SKIP, _NAME, _NUMBER, _STRING, _SYMBOL = (
    _TOKEN.groupindex[name] for name in ("skip", "name", "number", "string", "symbol")
)

# Escapes are \n \r \t \\ \" \'; any other escaped character stands for itself.
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t"}
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)


def tokenize(source: str, path: str | None = None) -> list[Token]:
    """Split `source` into tokens ending with an EOF token; raise ParseError on bad input."""
    tokens: list[Token] = []
    append = tokens.append
    keywords = KEYWORDS
    identifier, keyword, number, string, symbol = (
        TokenKind.IDENTIFIER,
        TokenKind.KEYWORD,
        TokenKind.NUMBER,
        TokenKind.STRING,
        TokenKind.SYMBOL,
    )
    for found in _TOKEN.finditer(source):
        group = found.lastindex
        if group == _SKIP:
            continue
        text = found.group()
        if group == _NAME:
            kind = keyword if text in keywords else identifier
        elif group == _SYMBOL:
            kind = symbol
        elif group == _NUMBER:
            kind = number
        elif group == _STRING:
            kind = string
            text = _ESCAPE.sub(_unescape, text[1:-1]) if "\\" in text else text[1:-1]
        else:
            raise _lexical_error(source, found.start(), path)
        append(Token(kind, text, found.start(), found.end()))
    append(Token(TokenKind.EOF, "", len(source), len(source)))
    return tokens


def _unescape(match: re.Match[str]) -> str:
    char = match.group(1)
    return _ESCAPES.get(char, char)


def _lexical_error(source: str, offset: int, path: str | None) -> ParseError:
    """The error for the character at `offset`, which no token rule accepted."""
    positions = SourceMap(source)
    char = source[offset]
    if char in "\"'":
        # A quote no string rule matched: the string runs to the end of the source.
        if _ends_inside_escape(source, offset):
            return ParseError(
                "Unterminated escape sequence", positions.position(len(source) - 1), path
            )
        return ParseError("Unterminated string literal", positions.position(offset), path)
    return ParseError(f"Unexpected character '{char}'", positions.position(offset), path)


def _ends_inside_escape(source: str, quote: int) -> bool:
    backslashes = len(source) - len(source.rstrip("\\"))
    return len(source) - backslashes > quote and backslashes % 2 == 1
