"""Did-you-mean: for a diagnostic about an unknown name, the known names spelled like it and the
span of text a quick fix replaces (the name only, even when the diagnostic covers more)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from agentscript.app.lsp.analysis import Analysis
from agentscript.app.lsp.completion import GENERATE_OPTIONS
from agentscript.app.lsp.tool_methods import MEMORY_RESOURCE_METHODS
from agentscript.lang.errors import Diagnostic

_QUOTED = re.compile(r"'([^']+)'")
_IN_SCOPE = frozenset({"UNKNOWN_IDENTIFIER", "UNKNOWN_FUNCTION", "UNKNOWN_MODEL"})
_MEMORY_METHODS = [method.name for method in MEMORY_RESOURCE_METHODS]


@dataclass(frozen=True, slots=True)
class Suggestion:
    names: list[str]
    # Code-point offsets of the misspelled name.
    start: int
    end: int


def suggest(analysis: Analysis, diagnostic: Diagnostic) -> Suggestion | None:
    named = _QUOTED.search(diagnostic.message)
    if named is None or analysis.outcome.program is None:
        return None
    wrong = named.group(1)
    start, end = diagnostic.range.start_offset, diagnostic.range.end_offset
    written = analysis.text[start:end]
    code = diagnostic.code
    if code in _IN_SCOPE and written == wrong and "." not in wrong:
        candidates = [name for name in analysis.names_at(start) if not name.startswith("__")]
        return _close(wrong, candidates, start, end)
    if code in ("UNKNOWN_FUNCTION", "UNKNOWN_MEMORY_METHOD") and "." in wrong:
        owner, method = wrong.rsplit(".", 1)
        if not written.endswith("." + method):
            return None
        candidates = (
            _MEMORY_METHODS if code == "UNKNOWN_MEMORY_METHOD" else _functions(analysis, owner)
        )
        return _close(method, candidates, end - len(method), end)
    if code == "UNKNOWN_GENERATE_OPTION" and written.startswith(wrong):
        return _close(wrong, list(GENERATE_OPTIONS), start, start + len(wrong))
    return None


def _functions(analysis: Analysis, agent: str) -> list[str]:
    """The function names of an agent of this file or of an imported one."""
    index = analysis.index
    if index is None:
        return []
    info = index.agents.get(agent)
    if info is not None:
        return [name for name in info.functions if not name.startswith("__")]
    imported = index.imports.get(agent)
    origin = imported.origin if imported is not None else None
    return [name for name in origin.functions if not name.startswith("__")] if origin else []


def _close(wrong: str, candidates: list[str], start: int, end: int) -> Suggestion | None:
    names = difflib.get_close_matches(wrong, candidates, n=3, cutoff=0.6)
    return Suggestion(names, start, end) if names else None
