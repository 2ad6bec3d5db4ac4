"""A finding of the AgentSpec validator or of the analysis of the generated source, in the
original's form: `{severity, code, path, message}`, where `path` is a JSON pointer into the
spec (`/locals/0/source/tool`) so a model that wrote the spec can fix exactly that field."""

from __future__ import annotations

from typing import Any

SpecDiagnostic = dict[str, Any]


def error(code: str, path: str, message: str) -> SpecDiagnostic:
    return {"severity": "error", "code": code, "path": path, "message": message}


def pointer(*parts: str | int) -> str:
    """The JSON pointer of a field (RFC 6901: `~` and `/` in a key are escaped)."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def passed(diagnostics: list[SpecDiagnostic]) -> bool:
    return not any(item["severity"] == "error" for item in diagnostics)


def unique(diagnostics: list[SpecDiagnostic]) -> list[SpecDiagnostic]:
    """Each finding once: two checks that see the same mistake at the same field (a bad type
    is both malformed and unsupported) report it once, in the order first found."""
    seen: set[tuple[str, str, str]] = set()
    kept: list[SpecDiagnostic] = []
    for item in diagnostics:
        key = (item["code"], item["path"], item["message"])
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept
