"""Completion: what may be written at the cursor.

After a dot, the members of what is before it; inside a shape, the shape types; at a key of a
`generate({ … })`, its options; after `import`, the resource kinds; elsewhere the keywords and
the names in scope there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentscript.app.lsp.analysis import Analysis
from agentscript.app.lsp.index import (
    AGENT,
    FUNCTION,
    LOCAL,
    PARAM,
    DocumentIndex,
    Symbol,
)
from agentscript.app.lsp.members import FIELD, METHOD, members_of, signature
from agentscript.app.lsp.tool_methods import ToolCatalog
from agentscript.lang.shape_types import type_text as value_type_text
from agentscript.lang.tokens import CONFIG_KEYS, IMPORT_KINDS, KEYWORDS, SHAPE_TYPE_NAMES

# Later-form words that are names to the parser but start statements to a person.
_LATER_WORDS = ("max", "parallel", "as", "one", "of", "selected", "empty")
GENERATE_OPTIONS = {
    "input": "the instruction (required)",
    "attempts": "how many answers may be tried against the shape (a positive integer)",
    "limit": "a budget for the prompt, e.g. 2k",
    "max_output": "the most the model may write, e.g. 500",
    "temperature": "sampling temperature, e.g. 0.2",
    "think": "true, false, or 'auto' | 'low' | 'medium' | 'high'",
    "strict": "whether extra fields fail the shape",
    "debug": "record the whole prompt in the trace",
}

_MEMBER = re.compile(r"([A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*)\.([A-Za-z_][\w-]*)?$")
_IMPORT_KIND = re.compile(r"^\s*import\s+\w*$")
_IMPORT_URI = re.compile(r"^\s*import\s+(\w+)\s+[A-Za-z_][\w-]*\s+from\s+[\"'][^\"']*$")
_SHAPE_TYPE = re.compile(r"(?:[A-Za-z_][\w-]*:?\s+|list\[)\w*$")
_OPTION_KEY = re.compile(r"(?:^|[{,])\s*\w*$")
# Braces outside strings and comments (the strings and comments match first and are skipped).
_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|//[^\n]*|[{}]')
# `func(input {`: the shape of a parameter.
_PARAM_BEFORE_SHAPE = re.compile(r"(?:func\s*[\w-]*\s*\(|,)\s*[A-Za-z_][\w-]*$")
_SHAPE = "shape"
_OPTIONS = "options"


@dataclass(frozen=True, slots=True)
class Completion:
    label: str
    kind: str  # keyword, variable, parameter, function, agent, import, method, field, type, option
    detail: str = ""


def complete(analysis: Analysis, offset: int, tools: ToolCatalog) -> list[Completion]:
    text = analysis.text
    line_start = text.rfind("\n", 0, offset) + 1
    prefix = text[line_start:offset]
    index = analysis.index
    uri = _IMPORT_URI.match(prefix)
    if uri is not None:
        return [Completion(choice, "value", detail) for choice, detail in tools.import_uris(uri[1])]
    if _in_string(prefix):
        return []
    member = _MEMBER.search(prefix)
    if member is not None:
        return _members(index, offset, member.group(1).split("."), tools) if index else []
    if _IMPORT_KIND.match(prefix):
        return [Completion(kind, "keyword", "import kind") for kind in IMPORT_KINDS]
    inside = _brace_context(text, offset)
    if inside == _SHAPE and _SHAPE_TYPE.search(prefix):
        return [Completion(name, "type", "shape type") for name in sorted(SHAPE_TYPE_NAMES)]
    if inside == _OPTIONS and _OPTION_KEY.search(prefix):
        return [Completion(name, "option", detail) for name, detail in GENERATE_OPTIONS.items()]
    return _keywords() + (_names(index, offset) if index is not None else [])


def _in_string(prefix: str) -> bool:
    """Whether the line's text before the cursor ends inside a string (or a comment)."""
    quote: str | None = None
    escaped = False
    for position, char in enumerate(prefix):
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif prefix.startswith("//", position):
            return True
    return quote is not None


def _members(
    index: DocumentIndex, offset: int, names: list[str], tools: ToolCatalog
) -> list[Completion]:
    scope = index.scope_at(offset)
    root = scope.lookup(names[0]) if scope is not None else None
    if root is None:
        root = index.imports.get(names[0]) or _agent_symbol(index, names[0])
    if root is None:
        return []
    kinds = {FIELD: "field", METHOD: "method", FUNCTION: "function"}
    return [
        Completion(member.name, kinds.get(member.kind, "field"), member.detail)
        for member in members_of(root, tuple(names[1:]), tools)
    ]


def _agent_symbol(index: DocumentIndex, name: str) -> Symbol | None:
    info = index.agents.get(name)
    return info.symbol if info is not None else None


def _brace_context(text: str, offset: int) -> str | None:
    """What the innermost `{` open at `offset` starts: a shape, generate options, or other.
    Read from the text, so it works while the line being typed does not parse."""
    opened: list[int] = []
    for token in _BRACKETS.finditer(text, 0, offset):
        char = token.group()
        if char == "{":
            opened.append(token.start())
        elif char == "}" and opened:
            opened.pop()
    if not opened:
        return None
    before = text[: opened[-1]].rstrip()
    if before.endswith("generate("):
        return _OPTIONS
    if before.endswith(("->", "return")) or _PARAM_BEFORE_SHAPE.search(before):
        return _SHAPE
    return None


def _keywords() -> list[Completion]:
    words = sorted(KEYWORDS - SHAPE_TYPE_NAMES) + list(_LATER_WORDS) + sorted(CONFIG_KEYS)
    return [Completion(word, "keyword") for word in words]


def _names(index: DocumentIndex, offset: int) -> list[Completion]:
    scope = index.scope_at(offset)
    if scope is None:
        return []
    found: list[Completion] = []
    for name, symbol in scope.visible(offset).items():
        if name.startswith("__"):
            continue
        found.append(Completion(name, _kind(symbol), _detail(symbol)))
    return found


def _kind(symbol: Symbol) -> str:
    kind = symbol.origin.kind
    if kind in (LOCAL, PARAM, FUNCTION, AGENT):
        return {LOCAL: "variable", PARAM: "parameter", FUNCTION: "function", AGENT: "agent"}[kind]
    return "import"


def _detail(symbol: Symbol) -> str:
    origin = symbol.origin
    if origin.kind == FUNCTION:
        return signature(origin)
    if origin.shape is not None:
        return value_type_text(origin.shape)
    if symbol.uri is not None:
        return f"{symbol.kind} from {symbol.uri}"
    return origin.kind
