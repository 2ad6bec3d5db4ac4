"""The stored forms of the SQLite store's values read back exactly, and order as the values."""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentscript.memory import MemoryServiceError
from agentscript.memory.entries import KINDS
from agentscript.memory.sqlite_values import (
    KIND_CODES,
    KIND_NAMES,
    bound_milliseconds,
    bucket_day,
    bucket_range,
    bucket_text,
    day_keys,
    id_text,
    id_text_sql,
    stamp_milliseconds,
    stamp_text,
    stored_id,
)
from agentscript.memory.timeline import (
    LEVELS,
    Level,
    bucket_keys,
    bucket_of,
    format_timestamp,
)

moments = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
)


@given(moments)
def test_a_timestamp_reads_back_as_it_was_written(moment: datetime) -> None:
    text = format_timestamp(moment)
    assert stamp_text(stamp_milliseconds(text)) == text


@given(moments, moments)
def test_stored_times_order_as_the_timestamps(first: datetime, second: datetime) -> None:
    a, b = format_timestamp(first), format_timestamp(second)
    assert (a < b) == (stamp_milliseconds(a) < stamp_milliseconds(b))


@pytest.mark.parametrize(
    "text",
    ["2026-05-04T09:15:00Z", "2026-05-04T09:15:00.000+00:00", "2026-05-04 09:15:00.000Z", "x"],
)
def test_a_timestamp_not_in_the_stored_form_is_refused_never_rounded(text: str) -> None:
    with pytest.raises(MemoryServiceError, match=r"created_at .* is not a stored timestamp"):
        stamp_milliseconds(text, "created_at")


@given(moments, st.text(alphabet="0123456789-:TZ. ", max_size=26))
def test_a_bound_of_any_text_keeps_the_text_comparison(moment: datetime, bound: str) -> None:
    """`since`/`until` bounds compare with stored timestamps as text (a bare day is a bound):
    the stored form of a bound keeps every answer."""
    text = format_timestamp(moment)
    assert (text >= bound) == (stamp_milliseconds(text) >= bound_milliseconds(bound))


def test_bounds_of_days_and_beyond_every_timestamp() -> None:
    assert stamp_text(bound_milliseconds("2026-05-01")) == "2026-05-01T00:00:00.000Z"
    assert stamp_text(bound_milliseconds("2026-02-3")) == "2026-03-01T00:00:00.000Z"
    assert bound_milliseconds("") == stamp_milliseconds("0001-01-01T00:00:00.000Z")
    assert bound_milliseconds("a") == stamp_milliseconds("9999-12-31T23:59:59.999Z") + 1


@given(st.uuids())
def test_a_uuid_is_its_sixteen_bytes_and_orders_as_its_text(identifier: uuid.UUID) -> None:
    stored = stored_id(str(identifier))
    assert stored == identifier.bytes and id_text(stored) == str(identifier)


@pytest.mark.parametrize("identifier", ["note-1", "6F9619FF-8B86-D011-B42D-00C04FC964FF", ""])
def test_any_other_id_is_kept_as_text(identifier: str) -> None:
    assert stored_id(identifier) == identifier and id_text(identifier) == identifier


def test_sql_orders_stored_ids_of_both_forms_as_their_text() -> None:
    ids = [str(uuid.uuid4()) for _ in range(50)] + ["0-first", "7", "b", "zz", "Upper"]
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE t (id BLOB)")
    connection.executemany("INSERT INTO t VALUES (?)", [(stored_id(i),) for i in ids])
    ordered = connection.execute(f"SELECT id FROM t ORDER BY {id_text_sql('id')}").fetchall()
    assert [id_text(stored) for (stored,) in ordered] == sorted(ids)


def test_every_kind_has_a_code_that_reads_back() -> None:
    assert set(KIND_CODES) == set(KINDS)
    assert all(KIND_NAMES[KIND_CODES[kind]] == kind for kind in KINDS)


@given(st.dates(min_value=date(2, 1, 1), max_value=date(9998, 1, 1)), st.sampled_from(LEVELS))
def test_a_bucket_is_its_first_day(day: date, level: Level) -> None:
    key = bucket_of(level, day)
    entry_level = None if level == "day" else level
    first = bucket_day(key, entry_level)
    assert bucket_text(first, entry_level) == key
    # The buckets holding its first day, and the range of first days each bucket holds.
    assert day_keys(first) == bucket_keys(date(1970, 1, 1) + timedelta(days=first))
    for parent in LEVELS:
        days = bucket_range(parent, day_keys(first)[parent])
        assert days is not None and days[0] <= first < days[1]


def test_a_bucket_of_another_level_is_refused_and_holds_nothing() -> None:
    with pytest.raises(MemoryServiceError, match="is not a day bucket"):
        bucket_day("2026-W09", None)
    with pytest.raises(MemoryServiceError, match="is not a week bucket"):
        bucket_day("2026-02-23", "week")
    assert bucket_range("week", "2026-02-23") is None
