"""Document formatting through the program formatter (lang/source_formatter.py)."""

from __future__ import annotations

from lsprotocol import types

from agentscript.app.lsp.analysis import Analysis
from agentscript.lang.errors import ParseError
from agentscript.lang.source_formatter import FormatRefused, format_source


def format_edits(analysis: Analysis) -> list[types.TextEdit] | None:
    """One edit replacing the whole text, none when it is already formatted, None when the
    document cannot be formatted (it does not parse)."""
    try:
        formatted = format_source(analysis.text, analysis.path)
    except (ParseError, FormatRefused):
        return None
    if formatted == analysis.text:
        return []
    return [types.TextEdit(range=analysis.lines.range(0, len(analysis.text)), new_text=formatted)]
