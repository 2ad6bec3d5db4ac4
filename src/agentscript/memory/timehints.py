"""Explicit dates in a recall query, read as soft windows on the entries' event days.

"What did we decide in March 2026?" names a time; an entry whose event happened then is more
likely the answer. Only absolute dates are read (`2026-03-14`, `14 March 2026`, `March 14,
2026`, `March 2026`, `in March`, `2026`); relative ones (`last week`) are left alone, because
the query cannot say what they are relative to. A window never filters: recall multiplies the
score of an entry inside it by a bounded factor. Memories about a period are written during
it or soon after, so a window reaches `AFTER_DAYS` past its end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from agentscript.memory.text import normalise

AFTER_DAYS = 7
_MONTH_NAMES = (
    "january february march april may june july august september october november december"
).split()
MONTHS = {name: number for number, name in enumerate(_MONTH_NAMES, start=1)}
MONTHS.update({name[:3]: number for name, number in list(MONTHS.items())})
MONTHS["sept"] = 9

_M = (
    r"(january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
)
_D = r"(\d{1,2})(?:st|nd|rd|th)?"
_Y = r"((?:19|20)\d{2})"
# Most specific first; a match hides its text from the later patterns.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ymd", re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")),
    ("dmy", re.compile(rf"\b{_D} (?:of )?{_M},? {_Y}\b")),
    ("mdy", re.compile(rf"\b{_M} {_D},? {_Y}\b")),
    ("my", re.compile(rf"\b{_M},? {_Y}\b")),
    ("md", re.compile(rf"\b{_M} {_D}\b")),
    ("dm", re.compile(rf"\b{_D} (?:of )?{_M}\b")),
    # A bare month name only after a preposition: `may` alone is usually the verb.
    ("m", re.compile(rf"\b(?:in|during|since|until|before|after|of|early|late|mid) {_M}\b")),
    ("y", re.compile(rf"\b{_Y}\b")),
)


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """Local days from `first` to `last` inclusive; with `any_year`, the years of `first` and
    `last` are placeholders and the window recurs every year."""

    first: date
    last: date
    any_year: bool = False

    def holds(self, first: date, last: date) -> bool:
        """Whether a span of days overlaps the window extended by AFTER_DAYS."""
        if not self.any_year:
            return first <= self.last + timedelta(days=AFTER_DAYS) and last >= self.first
        return any(
            self._in_year(year).holds(first, last) for year in range(first.year - 1, last.year + 1)
        )

    def _in_year(self, year: int) -> TimeWindow:
        return TimeWindow(_safe_date(year, self.first), _safe_date(year, self.last))


def _safe_date(year: int, template: date) -> date:
    """`template`'s month and day in `year`; 29 February becomes the 28th in other years."""
    day = template.day
    while True:
        try:
            return date(year, template.month, day)
        except ValueError:
            day -= 1


def time_windows(query: str) -> list[TimeWindow]:
    """The windows named in `query`, in order of appearance, invalid dates skipped."""
    text = normalise(query)
    found: list[tuple[int, TimeWindow]] = []
    for shape, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            window = _window(shape, match.groups())
            if window is not None:
                found.append((match.start(), window))
            text = text[: match.start()] + " " * len(match[0]) + text[match.end() :]
    return [window for _, window in sorted(found, key=lambda item: item[0])]


def _window(shape: str, groups: tuple[str | None, ...]) -> TimeWindow | None:
    values = [group for group in groups if group is not None]
    try:
        if shape == "ymd":
            day = date(int(values[0]), int(values[1]), int(values[2]))
            return TimeWindow(day, day)
        if shape == "dmy":
            day = date(int(values[2]), MONTHS[values[1]], int(values[0]))
            return TimeWindow(day, day)
        if shape == "mdy":
            day = date(int(values[2]), MONTHS[values[0]], int(values[1]))
            return TimeWindow(day, day)
        if shape == "my":
            return _month(int(values[1]), MONTHS[values[0]], any_year=False)
        if shape == "md":
            day = date(2000, MONTHS[values[0]], int(values[1]))
            return TimeWindow(day, day, any_year=True)
        if shape == "dm":
            day = date(2000, MONTHS[values[1]], int(values[0]))
            return TimeWindow(day, day, any_year=True)
        if shape == "m":
            return _month(2000, MONTHS[values[0]], any_year=True)
        year = int(values[0])
        return TimeWindow(date(year, 1, 1), date(year, 12, 31))
    except ValueError:
        return None


def _month(year: int, month: int, *, any_year: bool) -> TimeWindow:
    following = date(year + month // 12, month % 12 + 1, 1)
    return TimeWindow(date(year, month, 1), following - timedelta(days=1), any_year)
