"""The memory rules of reference §4.4, pinned once and run against JSONL, SQLite and PostgreSQL.

Every test here takes the `backend` fixture, so the three backends must agree on envelopes,
filters, order, limits and error texts, including case-insensitive matching beyond ASCII.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from agentscript.app.memory_resources import export, import_records
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.jsjson import stringify

if TYPE_CHECKING:
    from memory_support import MemoryBackend

pytest_plugins = ["memory_support"]

UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
ISO_MS_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def texts(envelopes: list[dict[str, Any]]) -> list[Any]:
    return [envelope["record"].get("text") for envelope in envelopes]


def records_of(envelopes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [envelope["record"] for envelope in envelopes]


# ---------------------------------------------------------------------- add


def test_add_returns_the_stored_envelope(backend: MemoryBackend) -> None:
    envelope = backend.add({"kind": "lesson", "text": "Be brief", "score": 2.0})
    assert set(envelope) == {"id", "created_at", "updated_at", "record"}
    assert UUID4.match(envelope["id"])
    assert ISO_MS_UTC.match(envelope["created_at"])
    assert envelope["updated_at"] == envelope["created_at"]
    assert envelope["record"] == {"kind": "lesson", "text": "Be brief", "score": 2}
    assert backend.query({}) == [envelope]


def test_add_refuses_a_record_that_is_not_an_object(backend: MemoryBackend) -> None:
    for record in ["text", 3, None, [1, 2]]:
        with pytest.raises(ExecutionError, match=r"^memory\.add expects an object record$"):
            backend.add(record)
    assert backend.query({}) == []


def test_records_keep_nested_values_and_key_order(backend: MemoryBackend) -> None:
    record = {"z": 1, "a": {"y": [1, "two", None, True], "b": {}}, "ünï": "cödé ✓ 🙂"}
    backend.add(record)
    (stored,) = backend.query({})
    assert stringify(stored["record"]) == stringify(record)


# ---------------------------------------------------------------------- order and limit


def test_query_returns_newest_first_with_a_default_limit_of_ten(backend: MemoryBackend) -> None:
    for index in range(12):
        backend.add({"text": f"r{index}"})
    assert texts(backend.query({})) == [f"r{index}" for index in range(11, 1, -1)]


def test_records_of_the_same_millisecond_come_last_stored_first(
    backend: MemoryBackend, same_millisecond: None
) -> None:
    for index in range(6):
        backend.add({"kind": "k" if index % 2 else "other", "text": f"r{index}"})
    assert texts(backend.query({"limit": 6})) == ["r5", "r4", "r3", "r2", "r1", "r0"]
    assert texts(backend.query({"kind": "k"})) == ["r5", "r3", "r1"]


@pytest.mark.parametrize("limit", [1, 3, 3.0, 100])
def test_limit_caps_the_result(backend: MemoryBackend, limit: float) -> None:
    for index in range(5):
        backend.add({"text": f"r{index}"})
    assert texts(backend.query({"limit": limit})) == ["r4", "r3", "r2", "r1", "r0"][: int(limit)]


@pytest.mark.parametrize("limit", [0, -1, 1.5, "3", True, None, [], {}])
def test_limit_must_be_a_positive_integer(backend: MemoryBackend, limit: Any) -> None:
    with pytest.raises(ExecutionError, match=r"^memory\.query limit must be a positive integer$"):
        backend.query({"limit": limit})


def test_query_refuses_an_argument_that_is_not_an_object(backend: MemoryBackend) -> None:
    for argument in ["lesson", 10, None, []]:
        with pytest.raises(ExecutionError, match=r"^memory\.query expects an object query$"):
            backend.query(argument)


def test_unknown_query_keys_are_ignored(backend: MemoryBackend) -> None:
    backend.add({"text": "kept"})
    assert texts(backend.query({"order": "oldest", "offset": 5, "sql": "DROP"})) == ["kept"]


# ---------------------------------------------------------------------- kind


def test_kind_must_equal_the_record_kind(backend: MemoryBackend) -> None:
    backend.add({"kind": "lesson", "text": "a"})
    backend.add({"kind": "Lesson", "text": "b"})
    backend.add({"kind": ["lesson"], "text": "c"})
    backend.add({"text": "d"})
    assert texts(backend.query({"kind": "lesson"})) == ["a"]
    assert backend.query({"kind": "less"}) == []


def test_a_kind_that_is_not_a_string_is_ignored(backend: MemoryBackend) -> None:
    backend.add({"kind": "lesson", "text": "a"})
    backend.add({"kind": 3, "text": "b"})
    assert texts(backend.query({"kind": 3})) == ["b", "a"]


# ---------------------------------------------------------------------- text


def test_text_is_a_case_insensitive_substring_of_record_text(backend: MemoryBackend) -> None:
    backend.add({"text": "Use SHORT sentences"})
    backend.add({"text": "unrelated", "note": "short"})
    assert texts(backend.query({"text": "short sent"})) == ["Use SHORT sentences"]


@pytest.mark.parametrize(
    ("stored", "needle"),
    [
        ("ÄRGER mit Öl", "ärger"),
        ("ärger mit öl", "ÄRGER MIT"),
        ("ПРИВЕТ МИР", "привет"),
        ("привет мир", "МИР"),
        ("ΣΊΣΥΦΟΣ", "σίσυφος"),  # final sigma, as JavaScript's toLowerCase
        ("ÉCOLE", "école"),
        ("300\u212a heat", "300k"),  # KELVIN SIGN lowercases to an ASCII k
        ("GROẞE Straße", "große"),  # capital sharp s
        ("ＦＵＬＬ width", "ｆｕｌｌ"),
    ],
)
def test_text_folds_case_beyond_ascii(backend: MemoryBackend, stored: str, needle: str) -> None:
    backend.add({"text": stored})
    backend.add({"text": "something else"})
    assert texts(backend.query({"text": needle})) == [stored]


def test_text_folding_follows_lower_not_casefold(backend: MemoryBackend) -> None:
    backend.add({"text": "Straße"})
    assert backend.query({"text": "strasse"}) == []
    backend.add({"text": "İstanbul"})  # lowercases to i + COMBINING DOT ABOVE
    assert backend.query({"text": "istanbul"}) == []
    assert texts(backend.query({"text": "i̇stanbul"})) == ["İstanbul"]


def test_text_searches_the_record_json_when_text_is_not_a_string(
    backend: MemoryBackend,
) -> None:
    backend.add({"kind": "note", "title": "Über Alles"})
    backend.add({"text": 42, "tags": ["Needle"]})
    backend.add({"text": "plain", "title": "Über"})
    assert records_of(backend.query({"text": "über"})) == [{"kind": "note", "title": "Über Alles"}]
    assert records_of(backend.query({"text": '["needle"]'})) == [{"text": 42, "tags": ["Needle"]}]
    assert records_of(backend.query({"text": '"kind":"note"'})) == [
        {"kind": "note", "title": "Über Alles"}
    ]


def test_text_that_is_not_a_string_is_ignored_and_empty_text_matches_all(
    backend: MemoryBackend,
) -> None:
    backend.add({"text": "a"})
    backend.add({"other": 1})
    assert len(backend.query({"text": 5})) == 2
    assert len(backend.query({"text": ""})) == 2


def test_text_treats_sql_wildcards_literally(backend: MemoryBackend) -> None:
    backend.add({"text": "100% sure"})
    backend.add({"text": "a_b"})
    backend.add({"text": "axb and 100 sure"})
    assert texts(backend.query({"text": "100%"})) == ["100% sure"]
    assert texts(backend.query({"text": "a_b"})) == ["a_b"]
    assert texts(backend.query({"text": "\\"})) == []


def test_text_finds_nul_characters(backend: MemoryBackend) -> None:
    backend.add({"text": "before\x00after", "kind": "nul\x00kind"})
    backend.add({"text": "before\ufffdafter"})
    assert texts(backend.query({"text": "e\x00a"})) == ["before\x00after"]
    assert texts(backend.query({"kind": "nul\x00kind"})) == ["before\x00after"]


def test_lone_surrogates_are_stored_and_found_exactly(backend: MemoryBackend) -> None:
    """Issue 13, finding 12: no store may die of a lone surrogate (`"\\ud800"` in JSON)."""
    backend.add({"text": "before\ud800after", "kind": "k\udfff"})
    backend.add({"text": "before\ufffdafter", "kind": "k\ufffd"})
    assert texts(backend.query({"text": "e\ud800a"})) == ["before\ud800after"]
    assert texts(backend.query({"kind": "k\udfff"})) == ["before\ud800after"]
    assert texts(backend.query({"kind": "k\ufffd"})) == ["before\ufffdafter"]


# ---------------------------------------------------------------------- where


def test_where_requires_each_key_with_a_json_equal_value(backend: MemoryBackend) -> None:
    backend.add({"text": "a", "score": 1, "tags": ["x", "y"], "flag": None})
    backend.add({"text": "b", "score": 1.0, "tags": ["y", "x"]})
    backend.add({"text": "c", "score": "1"})
    assert texts(backend.query({"where": {"score": 1}})) == ["b", "a"]
    assert texts(backend.query({"where": {"score": 1, "tags": ["x", "y"]}})) == ["a"]
    assert texts(backend.query({"where": {"flag": None}})) == ["a"]
    assert texts(backend.query({"where": {"score": "1"}})) == ["c"]
    assert texts(backend.query({"where": {}})) == ["c", "b", "a"]


def test_where_compares_objects_key_order_sensitively(backend: MemoryBackend) -> None:
    backend.add({"text": "ab", "meta": {"a": 1, "b": 2}})
    backend.add({"text": "ba", "meta": {"b": 2, "a": 1}})
    assert texts(backend.query({"where": {"meta": {"a": 1, "b": 2}}})) == ["ab"]
    assert texts(backend.query({"where": {"meta": {"b": 2, "a": 1}}})) == ["ba"]


@pytest.mark.parametrize("where", ["score", 1, None, [1], True])
def test_where_must_be_an_object(backend: MemoryBackend, where: Any) -> None:
    with pytest.raises(ExecutionError, match=r"^memory\.query where must be an object$"):
        backend.query({"where": where})


def test_filters_combine_and_the_limit_applies_after_filtering(
    backend: MemoryBackend,
) -> None:
    for index in range(30):
        backend.add({"kind": "lesson" if index % 3 == 0 else "note", "text": f"Tip {index}"})
        backend.add({"kind": "lesson", "text": f"other {index}", "round": index % 2})
    found = backend.query({"kind": "lesson", "text": "TIP", "limit": 4})
    assert texts(found) == ["Tip 27", "Tip 24", "Tip 21", "Tip 18"]
    found = backend.query({"kind": "lesson", "where": {"round": 1}, "limit": 2})
    assert texts(found) == ["other 29", "other 27"]


# ---------------------------------------------------------------------- stores


def test_query_on_a_store_that_does_not_exist_is_empty(backend: MemoryBackend) -> None:
    assert backend.query({"kind": "lesson"}) == []
    if backend.name != "postgres":
        assert list(backend.root.iterdir()) == []


def test_namespaces_are_isolated(sql_backend: MemoryBackend) -> None:
    sql_backend.add({"kind": "lesson", "text": "in a"}, namespace="a")
    sql_backend.add({"kind": "lesson", "text": "in b"}, namespace="b")
    assert texts(sql_backend.query({"kind": "lesson"}, namespace="a")) == ["in a"]
    assert texts(sql_backend.query({"text": "in"}, namespace="b")) == ["in b"]
    assert sql_backend.query({}, namespace="c") == []


def test_export_is_oldest_first_and_import_keeps_ids_and_skips_duplicates(
    backend: MemoryBackend,
) -> None:
    first = backend.add({"text": "one"})
    second = backend.add({"text": "two"})
    exported = list(export(backend.uri()))
    assert exported == [first, second]
    older = {**first, "id": "imported-1", "created_at": "2020-01-01T00:00:00.000Z"}
    lines = [stringify(envelope) for envelope in [*exported, older, older]]
    counts = import_records(backend.uri(), lines)
    assert (counts.added, counts.skipped) == (1, 3)
    assert [envelope["id"] for envelope in backend.query({})] == [
        second["id"],
        first["id"],
        "imported-1",
    ]


@pytest.mark.parametrize("other", ["sqlite", "postgres"])
def test_every_backend_returns_identical_envelopes_for_identical_records(
    open_backend: Callable[[str], MemoryBackend], other: str, same_millisecond: None
) -> None:
    """The same records imported into JSONL and `other` answer every query identically,
    ids and timestamps included."""
    jsonl, compared = open_backend("jsonl"), open_backend(other)
    records = [
        {"kind": "lesson", "text": "Keep ÜBER short", "n": 1},
        {"kind": "lesson", "text": "σίσυφος rolls", "n": 2, "meta": {"a": 1}},
        {"kind": "note", "title": "Über", "n": 3},
        {"kind": "note", "text": None, "n": 1.0, "meta": {"a": 1}},
        {"text": "ΣΊΣΥΦΟΣ", "n": 4},
        {"kind": "lesson", "text": "300\u212a", "n": 5},
        {"kind": "lesson", "text": "100% a_b", "n": 6},
    ]
    queries: list[dict[str, Any]] = [
        {},
        {"limit": 2},
        {"kind": "lesson"},
        {"kind": "note", "limit": 1},
        {"text": "über"},
        {"text": "σίσυφοσ"},
        {"text": "ΣΊΣΥΦΟΣ"},
        {"text": "300k"},
        {"text": "%"},
        {"text": '"n":1'},
        {"where": {"n": 1}},
        {"where": {"meta": {"a": 1}}, "kind": "note"},
        {"kind": "lesson", "text": "s", "limit": 1},
    ]
    for record in records:
        jsonl.add(record)
    import_records(compared.uri(), [stringify(envelope) for envelope in export(jsonl.uri())])
    for query in queries:
        assert compared.query(query) == jsonl.query(query), query
