"""Trace helpers for tests: compare traces without the timings that differ between runs."""

from __future__ import annotations

from typing import Any


def without_timings(value: Any) -> Any:
    """A copy of trace JSON with every `duration_ms` removed, nested events included."""
    if isinstance(value, list):
        return [without_timings(item) for item in value]
    if isinstance(value, dict):
        return {key: without_timings(item) for key, item in value.items() if key != "duration_ms"}
    return value
