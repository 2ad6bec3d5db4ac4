"""JavaScript-exact JSON text: `String(number)`, `JSON.stringify` layouts, JSON.parse rules and
UTF-16 string lengths, which budgets, prompts and equality are defined on."""

from __future__ import annotations

from typing import Any

import pytest

from agentscript.runtime.jsjson import (
    format_number,
    parse,
    stringify,
    utf16_length,
    utf16_prefix,
)


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (-5, "-5"),
        (1.5, "1.5"),
        (0.5, "0.5"),
        (-0.001, "-0.001"),
        (0.1 + 0.2, "0.30000000000000004"),
        (123456.789, "123456.789"),
        (1e15, "1000000000000000"),
        (1e20, "100000000000000000000"),
        (1.2345678901234568e20, "123456789012345680000"),
        (1e21, "1e+21"),
        (-1e21, "-1e+21"),
        (10**21, "1e+21"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (1e-6, "0.000001"),
        (0.000001234, "0.000001234"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (1.23e-18, "1.23e-18"),
        (5e-324, "5e-324"),
        (2**53, "9007199254740992"),
        # Integers beyond 2**53 print as the double they become.
        (2**53 + 1, "9007199254740992"),
        (12345678901234567890, "12345678901234567000"),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
    ],
)
def test_numbers_print_like_javascript(number: float, text: str) -> None:
    assert format_number(number) == text


def test_booleans_are_not_numbers() -> None:
    with pytest.raises(TypeError):
        format_number(True)


NESTED = {"a": [1, {"b": []}, {}], "s": "x", "n": None, "t": True, "f": 2.0}


def test_compact_layout() -> None:
    assert stringify(NESTED) == '{"a":[1,{"b":[]},{}],"s":"x","n":null,"t":true,"f":2}'


def test_pretty_layout_with_two_space_indent() -> None:
    assert stringify(NESTED, 2) == (
        "{\n"
        '  "a": [\n'
        "    1,\n"
        "    {\n"
        '      "b": []\n'
        "    },\n"
        "    {}\n"
        "  ],\n"
        '  "s": "x",\n'
        '  "n": null,\n'
        '  "t": true,\n'
        '  "f": 2\n'
        "}"
    )


@pytest.mark.parametrize(("value", "text"), [([], "[]"), ({}, "{}"), ("", '""'), (None, "null")])
def test_empty_and_scalar_values(value: Any, text: str) -> None:
    assert stringify(value, 2) == text
    assert stringify(value) == text


def test_key_order_is_insertion_order() -> None:
    assert stringify({"z": 1, "a": 2}) == '{"z":1,"a":2}'


@pytest.mark.parametrize(
    ("text", "json_text"),
    [
        ("é ü 😀", '"é ü 😀"'),
        ("/", '"/"'),
        ('"\\', '"\\"\\\\"'),
        ("\n\t\r\b\f", '"\\n\\t\\r\\b\\f"'),
        ("\u0001\u001f", '"\\u0001\\u001f"'),
        ("\u2028", '"\u2028"'),
        # Unpaired surrogates are escaped (well-formed JSON.stringify).
        ("a\ud800b", '"a\\ud800b"'),
        ("\udc00", '"\\udc00"'),
    ],
)
def test_strings_are_escaped_like_javascript(text: str, json_text: str) -> None:
    assert stringify(text) == json_text
    assert stringify({text: 1}) == "{" + json_text + ":1}"


def test_unpaired_surrogates_keep_the_text_encodable() -> None:
    stringify(["\ud83d"], 2).encode("utf-8")


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_numbers_become_null(number: float) -> None:
    assert stringify([number]) == "[null]"


def test_non_json_values_are_refused() -> None:
    with pytest.raises(TypeError):
        stringify({"x": object()})


def test_parse_is_json_parse() -> None:
    assert parse('{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "[NaN]", "{'a': 1}", ""])
def test_parse_rejects_what_javascript_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse(text)


@pytest.mark.parametrize(
    ("text", "length"), [("", 0), ("abc", 3), ("é", 1), ("😀", 2), ("a😀b😀", 6)]
)
def test_lengths_count_utf16_units(text: str, length: int) -> None:
    assert utf16_length(text) == length


@pytest.mark.parametrize(
    ("text", "units", "prefix"),
    [("abcdef", 3, "abc"), ("abc", 10, "abc"), ("a😀b", 2, "a"), ("a😀b", 3, "a😀"), ("😀", 0, "")],
)
def test_prefix_never_splits_a_character(text: str, units: int, prefix: str) -> None:
    assert utf16_prefix(text, units) == prefix


def test_parse_refuses_json_nested_deeper_than_the_limit() -> None:
    from agentscript.runtime.jsjson import MAX_JSON_DEPTH, parse

    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert parse(at_limit) is not None
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_JSON_DEPTH} levels"):
        parse("[" + at_limit + "]")
    # Brackets inside strings (escaped quotes included) are text, not nesting.
    text = '["' + '\\"[' * 1000 + '"]'
    assert parse(text) == ['"[' * 1000]
