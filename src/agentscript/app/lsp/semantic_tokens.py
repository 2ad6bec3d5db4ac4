"""Semantic tokens: the lexer's tokens, with names coloured by what they name."""

from __future__ import annotations

import re

from agentscript.app.lsp.analysis import Analysis
from agentscript.app.lsp.index import AGENT, FUNCTION, LOCAL, PARAM
from agentscript.lang.errors import ParseError
from agentscript.lang.lexer import tokenize
from agentscript.lang.tokens import SHAPE_TYPE_NAMES, TokenKind

TOKEN_TYPES = [
    "keyword",
    "string",
    "number",
    "operator",
    "variable",
    "parameter",
    "function",
    "class",
    "namespace",
    "property",
    "method",
    "type",
    "comment",
]
_TYPE = {name: number for number, name in enumerate(TOKEN_TYPES)}
_COMMENT = re.compile(r"//[^\n]*")
_BY_SYMBOL_KIND = {AGENT: "class", FUNCTION: "function", PARAM: "parameter", LOCAL: "variable"}


def semantic_tokens(analysis: Analysis) -> list[int]:
    """The LSP's relative encoding: per token, line delta, start delta, length, type, 0."""
    text = analysis.outcome.parsed_text
    try:
        tokens = tokenize(text)[:-1]
    except ParseError:
        return []
    names = _name_types(analysis)
    spans: list[tuple[int, int, str]] = []
    previous_end = 0
    for position, token in enumerate(tokens):
        for comment in _COMMENT.finditer(text, previous_end, token.start):
            spans.append((comment.start(), comment.end(), "comment"))
        previous_end = token.end
        kind = _token_type(token.kind, token.value, token.start, names)
        if kind == "property" and position + 1 < len(tokens) and tokens[position + 1].symbol == "(":
            kind = "method"
        if kind is not None:
            spans.append((token.start, token.end, kind))
    for comment in _COMMENT.finditer(text, previous_end):
        spans.append((comment.start(), comment.end(), "comment"))
    return _encode(analysis, spans)


def _name_types(analysis: Analysis) -> dict[int, str]:
    """The token type of each name the index knows, by its start offset."""
    names: dict[int, str] = {}
    if analysis.index is not None:
        for occurrence in analysis.index.occurrences:
            named = occurrence.symbol.origin.kind if occurrence.symbol is not None else LOCAL
            names[occurrence.start] = _BY_SYMBOL_KIND.get(named, "namespace")
        for member in analysis.index.members:
            names[member.start] = "property"
    return names


def _token_type(kind: TokenKind, value: str, start: int, names: dict[int, str]) -> str | None:
    if kind is TokenKind.STRING:
        return "string"
    if kind is TokenKind.NUMBER:
        return "number"
    if kind is TokenKind.SYMBOL:
        return "operator" if value not in "{}()[].,:" else None
    named = names.get(start)
    if named is not None:
        return named
    if value in SHAPE_TYPE_NAMES:
        return "type"
    if kind is TokenKind.KEYWORD:
        return "keyword"
    return None


def _encode(analysis: Analysis, spans: list[tuple[int, int, str]]) -> list[int]:
    data: list[int] = []
    last_line = 0
    last_start = 0
    lines = analysis.lines
    for start, end, kind in sorted(spans):
        begin = lines.position(start)
        finish = lines.position(end)
        if finish.line != begin.line:
            continue  # a string across lines: clients take single-line tokens only
        delta_line = begin.line - last_line
        delta_start = begin.character - last_start if delta_line == 0 else begin.character
        data.extend([delta_line, delta_start, finish.character - begin.character, _TYPE[kind], 0])
        last_line, last_start = begin.line, begin.character
    return data
