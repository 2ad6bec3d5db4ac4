"""Finding the JSON in a model's text answer (reference §4.1).

Tried in order: the whole text, each fenced block (```json or ```), then the first balanced
`{…}` object (string-aware). If none parses, ModelOutputError says so with a short snippet;
that is the one provider failure the interpreter repairs by asking again.
"""

from __future__ import annotations

import re
from typing import Any

from agentscript.runtime.errors import ModelOutputError
from agentscript.runtime.jsjson import parse
from agentscript.runtime.partial_json import JsonScanner

_FENCE = re.compile(r"```(?:json)?[^\n]*\n?(.*?)```", re.DOTALL | re.IGNORECASE)
_SNIPPET_LIMIT = 160


def snippet(text: str) -> str:
    """Whitespace collapsed, trimmed, at most 160 characters (157 + `...`)."""
    collapsed = " ".join(text.split())
    if len(collapsed) <= _SNIPPET_LIMIT:
        return collapsed
    return collapsed[: _SNIPPET_LIMIT - 3] + "..."


def extract_json(text: str) -> Any:
    """The first JSON value found in `text`; raise ModelOutputError if there is none."""
    for candidate in _candidates(text):
        try:
            return parse(candidate)
        except ValueError:
            continue
    raise ModelOutputError(f"LLM provider did not return JSON: {snippet(text)}")


def complete_json(text: str) -> bool:
    """Whether the whole text, or a fenced block of it, is JSON: an answer cut off mid-JSON
    may still hold a balanced fragment (`{"a": {"b": 1}, "c": [` holds `{"b": 1}`), which
    `extract_json` would find but which is not the answer."""
    for candidate in _whole_candidates(text):
        try:
            parse(candidate)
        except ValueError:
            continue
        return True
    return False


def _whole_candidates(text: str) -> list[str]:
    """The whole text and each fenced block of it."""
    return [text.strip(), *(match.group(1).strip() for match in _FENCE.finditer(text))]


def _candidates(text: str) -> list[str]:
    candidates = _whole_candidates(text)
    balanced = _first_balanced_object(text)
    if balanced is not None:
        candidates.append(balanced)
    return [candidate for candidate in candidates if candidate]


def _first_balanced_object(text: str) -> str | None:
    start = text.find("{")
    while start != -1:
        depth = 0
        scanner = JsonScanner()
        for index in range(start, len(text)):
            char = text[index]
            if not scanner.structural(char):
                continue
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    return text[start : index + 1]
        start = text.find("{", start + 1)
    return None
