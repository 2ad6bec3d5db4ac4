"""Go to definition and find references, across `import agent` and `import file` files."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from agentscript.app.lsp.analysis import Analysis
from agentscript.app.lsp.index import FILE, DocumentIndex, Symbol
from agentscript.app.lsp.members import resolve_member
from agentscript.app.lsp.tool_methods import ToolCatalog
from agentscript.runtime.errors import LoadError
from agentscript.runtime.files import resolve_import_path

_NAME = re.compile(r"[A-Za-z_](?:[A-Za-z0-9_]|-(?=[A-Za-z0-9_]))*")


def is_name(text: str) -> bool:
    """Whether `text` can name a variable, function or agent (the lexer's identifier rule)."""
    return _NAME.fullmatch(text) is not None


@dataclass(frozen=True, slots=True)
class Place:
    """A span in a file: code-point offsets into the file's text."""

    path: str | None
    start: int
    end: int


def symbol_at(analysis: Analysis, offset: int, tools: ToolCatalog) -> Symbol | None:
    """The declared thing the name at `offset` refers to (an agent's function after a dot too)."""
    index = analysis.index
    if index is None:
        return None
    occurrence = index.occurrence_at(offset)
    if occurrence is not None:
        return occurrence.symbol
    member = index.member_at(offset)
    if member is not None and member.root is not None:
        found = resolve_member(member.root, member.chain, tools)
        if found is not None:
            return found.symbol
    return None


def definition(analysis: Analysis, offset: int, tools: ToolCatalog) -> Place | None:
    symbol = symbol_at(analysis, offset, tools)
    if symbol is None:
        return None
    if symbol.kind == FILE and symbol.uri is not None and symbol.path is not None:
        try:
            target = resolve_import_path(symbol.uri, FILE, Path(symbol.path).parent)
        except LoadError:
            return None
        return Place(str(target), 0, 0)
    origin = symbol.origin
    return Place(origin.path, origin.start, origin.end)


def references(
    symbol: Symbol, indexes: Iterable[DocumentIndex], tools: ToolCatalog, declaration: bool
) -> list[Place]:
    """Every place in `indexes` that names `symbol` (its declaration too when asked)."""
    key = symbol.origin.key
    places: list[Place] = []
    seen: set[tuple[str | None, int]] = set()

    def add(path: str | None, start: int, end: int) -> None:
        if (path, start) not in seen:
            seen.add((path, start))
            places.append(Place(path, start, end))

    for index in indexes:
        for occurrence in index.occurrences:
            found = occurrence.symbol
            if found is None or found.origin.key != key:
                continue
            if occurrence.is_declaration and found.target is None and not declaration:
                continue
            add(index.path, occurrence.start, occurrence.end)
        for member in index.members:
            if member.root is None:
                continue
            resolved = resolve_member(member.root, member.chain, tools)
            named = resolved.symbol if resolved is not None else None
            if named is not None and named.origin.key == key:
                add(index.path, member.start, member.end)
    return places
