"""Trace comparisons that ignore how long steps took (a replayed run takes its own time)."""

from __future__ import annotations

from typing import Any

# The keys of trace data that measure time rather than say what happened.
TIMING_KEYS = frozenset({"duration_ms"})


def without_timings(value: Any) -> Any:
    """A copy of JSON data without its timing keys, at any depth."""
    if isinstance(value, dict):
        return {key: without_timings(item) for key, item in value.items() if key not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timings(item) for item in value]
    return value
