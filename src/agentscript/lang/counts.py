"""Counts written as literals: `repeat * N`, `for x in xs < N`, `loop … max N`, `attempts: N`.

A count is used as a loop bound or a retry limit, so one beyond MAX_COUNT is a typo or an attack,
never a plan; the parser and the checker refuse it with a located error. The checks work on the
digits, because int() refuses texts of more than 4300 digits with a bare ValueError.
"""

from __future__ import annotations

MAX_COUNT = 1_000_000_000


def count_fits(digits: str) -> bool:
    """Whether a string of digits is a count of at most MAX_COUNT (checked on the text, since
    int() refuses texts of more than 4300 digits)."""
    significant = digits.lstrip("0")
    return len(significant) <= len(str(MAX_COUNT)) and int(significant or "0") <= MAX_COUNT


def too_large_count(digits: str) -> str:
    """The message for a count over the limit, without echoing thousands of digits."""
    shown = digits if len(digits) <= 20 else f"{digits[:12]}… ({len(digits)} digits)"
    return f"Count {shown} is too large"
