"""Diagnostics as the editor shows them: the checker's code and exact range, related locations
for duplicates (where the first one is), and did-you-mean suggestions that quick fixes apply."""

from __future__ import annotations

import re
from typing import Any

from lsprotocol import converters, types

from agentscript.app.lsp.analysis import Analysis
from agentscript.app.lsp.positions import lsp_range
from agentscript.app.lsp.suggestions import suggest
from agentscript.lang import ast
from agentscript.lang.errors import Diagnostic

SOURCE = "agentscript"
# Turns the quick fix's span into JSON for the diagnostic's data, and back.
_RANGE = converters.get_converter()
_DUPLICATES = frozenset(
    {"DUPLICATE_AGENT", "DUPLICATE_FUNCTION", "DUPLICATE_IMPORT", "DUPLICATE_PARAM"}
)
_QUOTED = re.compile(r"'([^']+)'")
_ARGUMENT_COUNT = "INVALID_ARGUMENT_COUNT"


def to_lsp(analysis: Analysis, uri: str) -> list[types.Diagnostic]:
    return [_converted(analysis, uri, diagnostic) for diagnostic in analysis.diagnostics]


def _converted(analysis: Analysis, uri: str, diagnostic: Diagnostic) -> types.Diagnostic:
    data: dict[str, Any] | None = None
    suggestion = suggest(analysis, diagnostic)
    message = diagnostic.message
    if suggestion is not None:
        replace = analysis.lines.range(suggestion.start, suggestion.end)
        data = {"suggestions": suggestion.names, "replace": _RANGE.unstructure(replace)}
        if "did you mean" not in message.lower():
            message += f" (did you mean '{suggestion.names[0]}'?)"
    return types.Diagnostic(
        range=lsp_range(diagnostic.range),
        message=message,
        severity=types.DiagnosticSeverity.Error
        if diagnostic.severity == "error"
        else types.DiagnosticSeverity.Warning,
        code=diagnostic.code,
        source=SOURCE,
        related_information=_related(analysis, uri, diagnostic),
        data=data,
    )


def _related(
    analysis: Analysis, uri: str, diagnostic: Diagnostic
) -> list[types.DiagnosticRelatedInformation] | None:
    """For a duplicate: where the name was first declared. For a call with the wrong number of
    arguments: the function's declaration, when it is in this file."""
    if diagnostic.code == _ARGUMENT_COUNT and analysis.index is not None:
        return _declared_function(analysis, uri, diagnostic)
    if diagnostic.code not in _DUPLICATES or analysis.index is None:
        return None
    named = _QUOTED.search(diagnostic.message)
    if named is None:
        return None
    name = named.group(1)
    offset = diagnostic.range.start_offset
    for occurrence in analysis.index.occurrences:
        if occurrence.is_declaration and occurrence.name == name and occurrence.start < offset:
            return [
                types.DiagnosticRelatedInformation(
                    location=types.Location(
                        uri=uri, range=analysis.lines.range(occurrence.start, occurrence.end)
                    ),
                    message=f"'{name}' is first declared here",
                )
            ]
    return None


def _declared_function(
    analysis: Analysis, uri: str, diagnostic: Diagnostic
) -> list[types.DiagnosticRelatedInformation] | None:
    named = _QUOTED.search(diagnostic.message)
    if named is None or "." not in named.group(1) or analysis.index is None:
        return None
    agent, function = named.group(1).split(".", 1)
    info = analysis.index.agents.get(agent)
    declared = info.functions.get(function) if info is not None else None
    if declared is None or not isinstance(declared.declaration, ast.FuncDecl):
        return None
    count = len(declared.declaration.params)
    return [
        types.DiagnosticRelatedInformation(
            location=types.Location(
                uri=uri, range=analysis.lines.range(declared.start, declared.end)
            ),
            message=f"'{named.group(1)}' is declared here with {count} parameter(s)",
        )
    ]


def quick_fixes(uri: str, diagnostics: list[types.Diagnostic]) -> list[types.CodeAction]:
    """One code action per suggestion of each diagnostic the editor sent."""
    actions: list[types.CodeAction] = []
    for diagnostic in diagnostics:
        data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
        try:
            replace = _RANGE.structure(data["replace"], types.Range)
        except (KeyError, TypeError, ValueError):
            replace = diagnostic.range  # a diagnostic published without its span
        for suggestion in data.get("suggestions", []):
            actions.append(
                types.CodeAction(
                    title=f"Change to '{suggestion}'",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    is_preferred=suggestion == data["suggestions"][0],
                    edit=types.WorkspaceEdit(
                        changes={uri: [types.TextEdit(range=replace, new_text=suggestion)]}
                    ),
                )
            )
    return actions
