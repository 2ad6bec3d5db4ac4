""" "Did you mean …?" for misspelt names: the closest known name, when one is close enough."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

# How alike (difflib ratio) a known name must be to be suggested: `inptu`/`input` is 0.8,
# `strng`/`string` 0.91; unrelated short names stay below it.
CUTOFF = 0.75


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """` (did you mean 'input'?)` for the closest of `known`, or "" when none is close."""
    candidates = sorted({candidate for candidate in known if candidate != name})
    matches = difflib.get_close_matches(name, candidates, n=1, cutoff=CUTOFF)
    if not matches and len(name) >= 3:  # `a` is no misspelt `A`, `modle` is `Model`
        lowered = {candidate.lower(): candidate for candidate in candidates}
        exact = lowered.get(name.lower())
        matches = [exact] if exact else []
    return f" (did you mean '{matches[0]}'?)" if matches else ""


# Type names other languages use, and the shape type each means here.
_TYPE_SYNONYMS = {
    "integer": "number",
    "int": "number",
    "float": "number",
    "double": "number",
    "str": "string",
    "bool": "boolean",
    "object": "json",
    "dict": "json",
    "any": "json",
    "array": "list",
}


def shape_type_hint(name: str, known: Iterable[str]) -> str:
    """` (did you mean 'number'?)` for `integer` and other common type names, else the closest
    of `known` by spelling."""
    synonym = _TYPE_SYNONYMS.get(name.lower())
    if synonym is not None:
        return f" (did you mean '{synonym}'?)"
    return did_you_mean(name, known)
