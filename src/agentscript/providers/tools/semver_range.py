"""Whether an installed package's version satisfies the range `agentscript.npm.json` asks for:
npm's range forms that registries use (`^2.3`, `~1.2.0`, `1.x`, `>=1 <3`, `1.2.3`, `*`, `a || b`).
Pre-release versions match only an exact range, as npm's default does."""

from __future__ import annotations

import re

_VERSION = re.compile(r"^\s*v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?\s*$")
_PART = re.compile(r"^(\^|~|>=|<=|>|<|=)?\s*v?([0-9xX*]+)(?:\.([0-9xX*]+))?(?:\.([0-9xX*]+))?$")

Version = tuple[int, int, int]


def satisfies(version: str, wanted: str) -> bool:
    """Whether `version` (from package.json) is in the range `wanted`; False when either
    cannot be read."""
    parsed = _VERSION.match(version)
    if parsed is None:
        return False
    have: Version = (int(parsed[1]), int(parsed[2]), int(parsed[3]))
    if parsed[4] is not None:  # a pre-release: only its exact version matches
        return wanted.strip().lstrip("=v") == version.strip().lstrip("v")
    return any(_all(have, alternative.split()) for alternative in wanted.split("||"))


def _all(have: Version, parts: list[str]) -> bool:
    return all(_one(have, part) for part in parts) if parts else True


def _one(have: Version, part: str) -> bool:
    matched = _PART.match(part)
    if matched is None:
        return False
    operator = matched[1] or ""
    numbers = [None if n is None or n in "xX*" else int(n) for n in matched.group(2, 3, 4)]
    if numbers[0] is None:
        return True  # `*`, `x`: any version
    known = _leading(numbers)
    low: Version = (known[0], known[1] if len(known) > 1 else 0, known[2] if len(known) > 2 else 0)
    if operator in ("", "="):
        return have[: len(known)] == tuple(known)
    if operator == "^":
        first = next((i for i, n in enumerate(low) if n != 0), len(known) - 1)
        upper = _bump(low, min(first, len(known) - 1))
        return low <= have < upper
    if operator == "~":
        upper = _bump(low, 1 if len(known) > 1 else 0)
        return low <= have < upper
    return {">=": have >= low, ">": have > low, "<=": have <= low, "<": have < low}[operator]


def _leading(numbers: list[int | None]) -> list[int]:
    """The numbers before the first wildcard (`1.x.3` reads as `1`)."""
    known: list[int] = []
    for number in numbers:
        if number is None:
            break
        known.append(number)
    return known


def _bump(version: Version, index: int) -> Version:
    """The first version past `version` at position `index` (`^1.2.3` → 2.0.0 at 0)."""
    bumped = [*version[:index], version[index] + 1, 0, 0][:3]
    return (bumped[0], bumped[1], bumped[2])
