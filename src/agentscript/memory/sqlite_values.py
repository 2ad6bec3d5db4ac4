"""The forms an entry's values take in a row of the SQLite store (schema 5), smaller than the
Entry's own and read back as exactly the same values.

- Times are integers, milliseconds since the epoch (6 bytes instead of 24 characters): stored
  timestamps have millisecond precision (timeline.py), so the integer orders and compares as
  the text did. One that is not in the stored form is refused, never rounded.
- An id that is a UUID (as the service makes them: lowercase, hyphenated) is its 16 bytes; any
  other id (an import may bring one) is kept as text. Blobs order as the hex text does;
  `ID_TEXT` gives SQL the text itself, where a mix of both forms must order as text.
- A kind is a small number (`KIND_CODES`): codes are stored, so they are never renumbered.
- A bucket is the number of its first day (days since the epoch) beside the entry's level
  (None for a day bucket): the key and the keys of the day, week, month and year holding that
  day are computed from it, and a bucket at any level is a range of days.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from functools import lru_cache

from agentscript.memory.entries import Kind
from agentscript.memory.errors import INVALID_ARGUMENT, MemoryServiceError
from agentscript.memory.timeline import Level, bucket_days, bucket_keys, bucket_level, bucket_of

# A UUID as `str(uuid.UUID(...))` writes it; ids of any other form are kept as text.
_UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_UUID_LENGTH = 36
_EPOCH = datetime(1970, 1, 1)
_EPOCH_DAY = date(1970, 1, 1)
_ONE_MS = timedelta(milliseconds=1)

KIND_CODES: dict[Kind, int] = {"fact": 1, "knowledge": 2, "episodic": 3, "summary": 4}
KIND_NAMES: dict[int, Kind] = {code: kind for kind, code in KIND_CODES.items()}


@lru_cache(maxsize=4096)
def stamp_text(milliseconds: int) -> str:
    """A stored time as the Entry holds it (`2026-05-03T09:15:00.000Z`)."""
    return _text_of(milliseconds)


def _text_of(milliseconds: int) -> str:
    moment = _EPOCH + timedelta(milliseconds=milliseconds)
    return moment.isoformat(timespec="milliseconds") + "Z"


# The first and last moments a stored timestamp can name (years 1 to 9999).
_FIRST = (datetime.min - _EPOCH) // _ONE_MS
_LAST = (datetime.max - _EPOCH) // _ONE_MS


@lru_cache(maxsize=4096)
def stamp_milliseconds(text: str, field: str = "timestamp") -> int:
    """The stored form of a timestamp; a MemoryServiceError naming `field` when `text` is
    not a stored timestamp (which could not be read back the same)."""
    try:
        moment = datetime.fromisoformat(text.removesuffix("Z"))
    except (AttributeError, ValueError):
        moment = None
    if moment is None or moment.tzinfo is not None or not text.endswith("Z"):
        raise _not_stored(field, text)
    milliseconds = (moment - _EPOCH) // _ONE_MS
    if stamp_text(milliseconds) != text:
        raise _not_stored(field, text)
    return milliseconds


def bound_milliseconds(text: str) -> int:
    """A `since`/`until` bound, which filters compare as text with the stored timestamps
    (`2026-05-01` is a bound too), as the first stored time whose text is not below it: a
    timestamp is at or after `text` exactly when its time is at or after this one. Stored
    timestamps all have the same length, so their text grows with their time and the first
    one is found by bisection."""
    try:
        return stamp_milliseconds(text)
    except MemoryServiceError:
        pass
    low, high = _FIRST, _LAST + 1
    while low < high:
        middle = (low + high) // 2
        if _text_of(middle) >= text:
            high = middle
        else:
            low = middle + 1
    return low


def _not_stored(field: str, text: object) -> MemoryServiceError:
    return MemoryServiceError(
        INVALID_ARGUMENT,
        f"{field} {text!r} is not a stored timestamp (2026-05-04T09:15:00.000Z)",
        field,
    )


def stored_id(identifier: str) -> bytes | str:
    """An id as stored: a UUID's 16 bytes, any other id as it is."""
    if len(identifier) == _UUID_LENGTH and _UUID_TEXT.fullmatch(identifier):
        return bytes.fromhex(identifier.replace("-", ""))
    return identifier


def id_text(stored: bytes | str) -> str:
    if not isinstance(stored, bytes):
        return stored
    digits = stored.hex()
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def id_text_sql(column: str) -> str:
    """SQL giving the id text of a stored id: what orderings break ties by."""
    digits = f"lower(hex({column}))"
    parts = " || '-' || ".join(
        f"substr({digits}, {start}, {length})"
        for start, length in ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))
    )
    return f"(CASE WHEN typeof({column}) = 'blob' THEN {parts} ELSE {column} END)"


@lru_cache(maxsize=4096)
def bucket_day(bucket: str, level: Level | None) -> int:
    """The stored form of an entry's bucket: the number of its first day. The bucket must be
    of the entry's level (a day for every entry but a summary)."""
    wanted = level or "day"
    if bucket_level(bucket) != wanted:
        raise MemoryServiceError(
            INVALID_ARGUMENT, f"bucket {bucket!r} is not a {wanted} bucket", "bucket"
        )
    first, _ = bucket_days(bucket)
    return (first - _EPOCH_DAY).days


@lru_cache(maxsize=4096)
def bucket_text(day: int, level: Level | None) -> str:
    """The bucket key of an entry whose bucket starts on `day` at `level`."""
    return bucket_of(level or "day", _EPOCH_DAY + timedelta(days=day))


@lru_cache(maxsize=4096)
def day_keys(day: int) -> dict[Level, str]:
    """The keys of the day, week, month and year holding `day` (a bucket's first day)."""
    return bucket_keys(_EPOCH_DAY + timedelta(days=day))


def bucket_range(level: Level, key: str) -> tuple[int, int] | None:
    """The first days that put an entry in bucket `key` at `level`, as a half-open range;
    None when `key` is no bucket of that level (then no entry is in it)."""
    if bucket_level(key) != level:
        return None
    first, stop = bucket_days(key)
    return (first - _EPOCH_DAY).days, (stop - _EPOCH_DAY).days
