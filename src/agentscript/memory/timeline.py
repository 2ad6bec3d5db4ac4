"""Clocks, timestamps and time buckets: the one place that decides what "when" means.

Stored timestamps are UTC, ISO-8601 with milliseconds (`2026-05-03T09:15:00.000Z`), so they sort
as text. Buckets are calendar units in the clock's *local* time: day `YYYY-MM-DD`, ISO week
`YYYY-Www` (weeks start on Monday; week 1 holds the year's first Thursday), month `YYYY-MM`, year
`YYYY`. `since`/`until` filters are read with the same clock, so a bare `2026-05-03` means that
local day both in a filter and in a bucket. Nothing here reads text for relative dates.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import Literal, Protocol

from agentscript.memory.errors import INVALID_ARGUMENT, MemoryServiceError

Level = Literal["day", "week", "month", "year"]
LEVELS: tuple[Level, ...] = ("day", "week", "month", "year")
# What a summary of each level is made from: day summaries from raw episodic entries (None).
CHILD_LEVEL: dict[Level, Level | None] = {
    "day": None,
    "week": "day",
    "month": "week",
    "year": "month",
}

_DAY = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_WEEK = re.compile(r"(\d{4})-W(\d{2})")
_MONTH = re.compile(r"(\d{4})-(\d{2})")
_YEAR = re.compile(r"(\d{4})")
_MONTH_NAMES = (
    "January February March April May June July August September October November December"
).split()
# Timestamps are stored with millisecond precision, so "up to and including t" is "< t + 1 ms".
_ONE_MS = timedelta(milliseconds=1)
_ONE_MICROSECOND = timedelta(microseconds=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Clock(Protocol):
    """The source of "now" and of the local time zone that buckets are counted in.

    Injected into the service so tests can freeze time and choose a zone, and so bucket
    boundaries and `since`/`until` filters can never disagree about which day it is.
    """

    def now(self) -> datetime:
        """The current moment, timezone-aware."""
        ...

    def to_local(self, moment: datetime) -> datetime:
        """An aware moment as an aware local time (the wall clock the user sees)."""
        ...

    def from_local(self, wall: datetime) -> datetime:
        """A naive local wall-clock time as an aware UTC moment."""
        ...


class SystemClock:
    """The machine's clock; local time is the system zone, or `zone` when given."""

    def __init__(self, zone: tzinfo | None = None) -> None:
        self.zone = zone

    def now(self) -> datetime:
        return datetime.now(UTC)

    def to_local(self, moment: datetime) -> datetime:
        # astimezone() without a zone applies the system's rules for that instant (DST-aware).
        return moment.astimezone(self.zone) if self.zone else moment.astimezone()

    def from_local(self, wall: datetime) -> datetime:
        local = wall.replace(tzinfo=self.zone) if self.zone else wall.astimezone()
        return local.astimezone(UTC)


class FixedClock:
    """A clock that stands still until told to move: for tests and for replaying old data."""

    def __init__(self, moment: datetime, zone: tzinfo = UTC) -> None:
        self.moment = _aware(moment, zone)
        self.zone = zone

    def now(self) -> datetime:
        return self.moment

    def to_local(self, moment: datetime) -> datetime:
        return moment.astimezone(self.zone)

    def from_local(self, wall: datetime) -> datetime:
        return wall.replace(tzinfo=self.zone).astimezone(UTC)

    def set(self, moment: datetime) -> None:
        self.moment = _aware(moment, self.zone)

    def advance(self, delta: timedelta) -> None:
        self.moment = self.moment + delta


def _aware(moment: datetime, zone: tzinfo) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=zone)


# ------------------------------------------------------------------------------ timestamps


def format_timestamp(moment: datetime) -> str:
    """An aware moment as stored: UTC, milliseconds, `Z` suffix."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").removesuffix("+00:00") + "Z"


def parse_timestamp(text: str) -> datetime:
    """A stored timestamp back as an aware UTC moment."""
    return datetime.fromisoformat(text).astimezone(UTC)


def moment_microseconds(moment: datetime) -> int:
    """An aware moment as whole microseconds since the epoch: exact, as a datetime counts
    whole microseconds, so the difference of two is the moments' timedelta to the
    microsecond (ranking computes ages from these without building datetimes)."""
    return (moment - _EPOCH) // _ONE_MICROSECOND


def timestamp_microseconds(text: str) -> int:
    """A stored timestamp as `moment_microseconds` of `parse_timestamp`."""
    return moment_microseconds(parse_timestamp(text))


def resolve_moment(
    value: str | datetime | date, clock: Clock, *, field: str, end: bool = False
) -> datetime:
    """A user-given time as an aware UTC moment, read in the clock's local time.

    Accepts an aware or naive datetime (naive = local), a date or a bucket key (`2026-05-03`,
    `2026-W18`, `2026-05`, `2026`: the bucket's local start, or its end when `end`), or an
    ISO-8601 datetime string. With `end`, a datetime is made inclusive by returning the next
    millisecond, so every result can be used as a half-open bound.
    """
    if isinstance(value, datetime):
        moment = value.astimezone(UTC) if value.tzinfo else clock.from_local(value)
        return moment + _ONE_MS if end else moment
    if isinstance(value, date):
        value = value.isoformat()
    if not isinstance(value, str) or not value.strip():
        raise MemoryServiceError(
            INVALID_ARGUMENT, f"{field} must be a date, a bucket key or an ISO-8601 time", field
        )
    text = value.strip()
    if bucket_level(text) is not None:
        start, stop = bucket_bounds(text, clock)
        return stop if end else start
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise MemoryServiceError(
            INVALID_ARGUMENT,
            f"{field} {text!r} is not a date (2026-05-03), a bucket key (2026-W18, 2026-05, "
            "2026) or an ISO-8601 time (2026-05-03T09:15:00Z)",
            field,
        ) from None
    return resolve_moment(parsed, clock, field=field, end=end)


# -------------------------------------------------------------------------------- buckets


def bucket_of(level: Level, day: date) -> str:
    """The key of the `level` bucket that holds the local `day`."""
    if level == "day":
        return day.isoformat()
    if level == "week":
        iso = day.isocalendar()
        return f"{iso.year:04d}-W{iso.week:02d}"
    if level == "month":
        return f"{day.year:04d}-{day.month:02d}"
    return f"{day.year:04d}"


def bucket_keys(day: date) -> dict[Level, str]:
    """Every level's bucket key for one local day."""
    return {level: bucket_of(level, day) for level in LEVELS}


def local_day(moment: datetime, clock: Clock) -> date:
    """The local calendar day of an aware moment."""
    return clock.to_local(moment).date()


def bucket_level(key: str) -> Level | None:
    """The level of a well-formed bucket key, or None when `key` is not one."""
    try:
        _bucket_days(key)
    except ValueError:
        return None
    if _DAY.fullmatch(key):
        return "day"
    if _WEEK.fullmatch(key):
        return "week"
    return "month" if _MONTH.fullmatch(key) else "year"


def require_bucket(key: str, level: Level | None = None, *, field: str = "bucket") -> Level:
    """The level of `key`; a MemoryServiceError when it is malformed or of another level."""
    found = bucket_level(key) if isinstance(key, str) else None
    if found is None:
        raise MemoryServiceError(
            INVALID_ARGUMENT,
            f"{field} {key!r} is not a bucket key (2026-05-03, 2026-W18, 2026-05 or 2026)",
            field,
        )
    if level is not None and found != level:
        raise MemoryServiceError(
            INVALID_ARGUMENT, f"{field} {key!r} is a {found} bucket, not a {level} bucket", field
        )
    return found


def bucket_days(key: str) -> tuple[date, date]:
    """The bucket's first local day and the day after its last one (half-open)."""
    return _bucket_days(key)


def _bucket_days(key: str) -> tuple[date, date]:
    if match := _DAY.fullmatch(key):
        first = date(int(match[1]), int(match[2]), int(match[3]))
        return first, first + timedelta(days=1)
    if match := _WEEK.fullmatch(key):
        first = date.fromisocalendar(int(match[1]), int(match[2]), 1)
        return first, first + timedelta(days=7)
    if match := _MONTH.fullmatch(key):
        year, month = int(match[1]), int(match[2])
        first = date(year, month, 1)
        return first, date(year + month // 12, month % 12 + 1, 1)
    if match := _YEAR.fullmatch(key):
        year = int(match[1])
        if year < 1 or year > 9998:
            raise ValueError(f"year out of range: {key}")
        return date(year, 1, 1), date(year + 1, 1, 1)
    raise ValueError(f"not a bucket key: {key}")


def bucket_bounds(key: str, clock: Clock) -> tuple[datetime, datetime]:
    """The bucket as a half-open range of aware UTC moments, local midnight to local midnight."""
    first, stop = _bucket_days(key)
    return (
        clock.from_local(datetime.combine(first, datetime.min.time())),
        clock.from_local(datetime.combine(stop, datetime.min.time())),
    )


@lru_cache(maxsize=4096)
def bucket_start_keys(key: str) -> dict[Level, str]:
    """The keys of the buckets that hold this bucket's first day.

    A bucket belongs to the parent its first day falls in: week 2026-W01 (which starts on
    2025-12-29) rolls into month 2025-12 and year 2025. Stores index summaries by these keys.
    Remembered for recent keys (every write asks): callers never change the dict.
    """
    return bucket_keys(_bucket_days(key)[0])


def previous_bucket(key: str) -> str:
    """The bucket just before `key`, at the same level."""
    level = require_bucket(key)
    first, _ = _bucket_days(key)
    return bucket_of(level, first - timedelta(days=1))


def bucket_label(key: str) -> str:
    """A human label: `Sunday 3 May 2026`, `week 18 of 2026 (27 Apr – 3 May)`, `May 2026`."""
    level = require_bucket(key)
    first, stop = _bucket_days(key)
    if level == "day":
        return f"{first:%A} {first.day} {_MONTH_NAMES[first.month - 1]} {first.year}"
    if level == "week":
        last = stop - timedelta(days=1)
        week = first.isocalendar()
        return (
            f"week {week.week} of {week.year} ({first.day} {_MONTH_NAMES[first.month - 1][:3]}"
            f" – {last.day} {_MONTH_NAMES[last.month - 1][:3]})"
        )
    if level == "month":
        return f"{_MONTH_NAMES[first.month - 1]} {first.year}"
    return str(first.year)
