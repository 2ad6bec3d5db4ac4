"""Clocks, timestamps, buckets and the time hints of queries."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from agentscript.memory import FixedClock, MemoryServiceError
from agentscript.memory.timehints import time_windows
from agentscript.memory.timeline import (
    bucket_bounds,
    bucket_keys,
    bucket_label,
    bucket_level,
    bucket_start_keys,
    format_timestamp,
    local_day,
    moment_microseconds,
    parse_timestamp,
    previous_bucket,
    require_bucket,
    resolve_moment,
    timestamp_microseconds,
)

PARIS = ZoneInfo("Europe/Paris")
TOKYO = ZoneInfo("Asia/Tokyo")


def test_timestamps_are_utc_with_milliseconds_and_sort_as_text() -> None:
    moment = datetime(2026, 5, 3, 11, 15, 2, 345678, tzinfo=PARIS)
    assert format_timestamp(moment) == "2026-05-03T09:15:02.345Z"
    assert parse_timestamp("2026-05-03T09:15:02.345Z") == datetime(
        2026, 5, 3, 9, 15, 2, 345000, tzinfo=UTC
    )
    assert format_timestamp(datetime(2026, 1, 1, tzinfo=UTC)) < "2026-01-01T00:00:00.001Z"


@pytest.mark.parametrize(
    ("day", "week"),
    [
        (date(2026, 1, 1), "2026-W01"),
        (date(2025, 12, 29), "2026-W01"),
        (date(2027, 1, 1), "2026-W53"),
        (date(2021, 1, 3), "2020-W53"),
        (date(2026, 5, 4), "2026-W19"),
        (date(2026, 5, 3), "2026-W18"),
    ],
)
def test_iso_weeks_cross_year_boundaries(day: date, week: str) -> None:
    assert bucket_keys(day)["week"] == week


def test_bucket_keys_of_a_day() -> None:
    assert bucket_keys(date(2026, 5, 3)) == {
        "day": "2026-05-03",
        "week": "2026-W18",
        "month": "2026-05",
        "year": "2026",
    }


def test_a_week_belongs_to_the_month_and_year_of_its_monday() -> None:
    assert bucket_start_keys("2026-W01") == {
        "day": "2025-12-29",
        "week": "2026-W01",
        "month": "2025-12",
        "year": "2025",
    }


def test_bucket_levels_and_malformed_keys() -> None:
    assert [bucket_level(key) for key in ("2026-05-03", "2026-W18", "2026-05", "2026")] == [
        "day",
        "week",
        "month",
        "year",
    ]
    for bad in ("2026-13", "2026-02-30", "2026-W54", "2025-W53", "26", "2026-5-3", "May"):
        assert bucket_level(bad) is None
    with pytest.raises(MemoryServiceError, match="is a week bucket, not a day bucket"):
        require_bucket("2026-W18", "day")


def test_bucket_bounds_are_local_midnights() -> None:
    clock = FixedClock(datetime(2026, 5, 3, tzinfo=UTC), PARIS)
    start, end = bucket_bounds("2026-05-03", clock)
    assert start == datetime(2026, 5, 2, 22, 0, tzinfo=UTC)
    assert end == datetime(2026, 5, 3, 22, 0, tzinfo=UTC)
    start, end = bucket_bounds("2026-W01", clock)
    assert start == datetime(2025, 12, 28, 23, 0, tzinfo=UTC)
    assert (end - start).days == 7


def test_month_and_year_bounds_span_daylight_saving_changes() -> None:
    clock = FixedClock(datetime(2026, 5, 3, tzinfo=UTC), PARIS)
    start, end = bucket_bounds("2026-03", clock)
    assert start == datetime(2026, 2, 28, 23, 0, tzinfo=UTC)
    assert end == datetime(2026, 3, 31, 22, 0, tzinfo=UTC)


def test_previous_bucket_at_every_level() -> None:
    assert previous_bucket("2026-03-01") == "2026-02-28"
    assert previous_bucket("2026-W01") == "2025-W52"
    assert previous_bucket("2026-01") == "2025-12"
    assert previous_bucket("2026") == "2025"


def test_labels() -> None:
    assert bucket_label("2026-05-03") == "Sunday 3 May 2026"
    assert bucket_label("2026-W18") == "week 18 of 2026 (27 Apr – 3 May)"
    assert bucket_label("2026-05") == "May 2026"
    assert bucket_label("2026") == "2026"


def test_local_day_uses_the_clock_zone() -> None:
    late = datetime(2026, 5, 3, 20, 0, tzinfo=UTC)
    assert local_day(late, FixedClock(late, TOKYO)) == date(2026, 5, 4)
    assert local_day(late, FixedClock(late, UTC)) == date(2026, 5, 3)


def test_since_and_until_read_days_and_buckets_in_local_time() -> None:
    clock = FixedClock(datetime(2026, 5, 3, tzinfo=UTC), TOKYO)
    assert resolve_moment("2026-05-03", clock, field="since") == datetime(
        2026, 5, 2, 15, 0, tzinfo=UTC
    )
    assert resolve_moment("2026-05-03", clock, field="until", end=True) == datetime(
        2026, 5, 3, 15, 0, tzinfo=UTC
    )
    assert resolve_moment("2026-05", clock, field="until", end=True) == datetime(
        2026, 5, 31, 15, 0, tzinfo=UTC
    )
    naive = resolve_moment("2026-05-03T10:00", clock, field="since")
    assert naive == datetime(2026, 5, 3, 1, 0, tzinfo=UTC)
    aware = resolve_moment("2026-05-03T10:00:00Z", clock, field="until", end=True)
    assert format_timestamp(aware) == "2026-05-03T10:00:00.001Z"


def test_unreadable_times_name_the_field() -> None:
    clock = FixedClock(datetime(2026, 5, 3, tzinfo=UTC))
    with pytest.raises(MemoryServiceError, match="since 'last tuesday' is not a date") as error:
        resolve_moment("last tuesday", clock, field="since")
    assert error.value.field == "since"


def test_time_hints_read_absolute_dates_only() -> None:
    windows = time_windows("What did we decide on 14 March 2026, in May 2025 and in 2024?")
    assert [(w.first, w.last, w.any_year) for w in windows] == [
        (date(2026, 3, 14), date(2026, 3, 14), False),
        (date(2025, 5, 1), date(2025, 5, 31), False),
        (date(2024, 1, 1), date(2024, 12, 31), False),
    ]
    assert time_windows("What may we do last week?") == []
    assert time_windows("October 13, 2023")[0].first == date(2023, 10, 13)
    assert time_windows("2026-02-30 is not a day") == []


def test_a_month_without_a_year_recurs_and_reaches_a_week_past_its_end() -> None:
    (june,) = time_windows("camping in June")
    assert june.any_year
    assert june.holds(date(2023, 6, 20), date(2023, 6, 20))
    assert june.holds(date(2019, 7, 5), date(2019, 7, 5))
    assert not june.holds(date(2023, 7, 9), date(2023, 7, 9))
    assert not june.holds(date(2023, 5, 31), date(2023, 5, 31))


@pytest.mark.parametrize(
    ("now", "then"),
    [
        ("2030-01-01T00:00:00.000Z", "2023-05-08T13:56:00.000Z"),
        ("2026-05-03T09:15:00.123Z", "2026-05-03T09:15:00.124Z"),
        ("2026-05-03T09:15:00.000Z", "1969-12-31T23:59:59.999Z"),
        ("9999-12-31T23:59:59.999Z", "0001-01-01T00:00:00.000Z"),
    ],
)
def test_ages_in_microseconds_are_the_timedelta_s_seconds(now: str, then: str) -> None:
    """Ranking's recency takes ages from integer microseconds: the same float as the
    datetimes' timedelta.total_seconds(), to the last bit."""
    moment = parse_timestamp(now)
    seconds = (moment_microseconds(moment) - timestamp_microseconds(then)) / 1_000_000
    assert seconds == (moment - parse_timestamp(then)).total_seconds()
    assert moment_microseconds(datetime(1970, 1, 1, tzinfo=UTC)) == 0
