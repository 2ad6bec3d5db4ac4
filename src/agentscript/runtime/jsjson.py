"""JSON text exactly as JavaScript's JSON.stringify writes it, and string lengths in UTF-16 units.

Prompts, budgets and equality in AgentScript are defined on this text, so it must match the
original byte for byte: `": "` separators, two-space indent, `[]`/`{}` for empty containers,
no ASCII escaping, integral numbers without `.0`, JavaScript's rules for exponents.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_encode_json_string = json.JSONEncoder(ensure_ascii=False).encode
# A surrogate code point in a Python string is always unpaired; JavaScript (ES2019+) writes it
# as a six-character escape (backslash, u, four hex digits), which also keeps the text
# encodable as UTF-8.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _encode_string(text: str) -> str:
    encoded = _encode_json_string(text)
    return encoded if text.isascii() else escape_lone_surrogates(encoded)


def escape_lone_surrogates(text: str) -> str:
    """`text` with each lone surrogate written as its six-character JSON escape. In JSON text
    that is lossless (it parses back to the same string); in any text it makes the string
    encodable as UTF-8, which every file and database needs."""
    if not _LONE_SURROGATE.search(text):
        return text
    return _LONE_SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


# Below 2**53 every integer is exact in a double, so its decimal digits are what JavaScript prints.
_EXACT_INTEGER_LIMIT = 2**53


def utf16_length(text: str) -> int:
    """Length of `text` in UTF-16 code units (JavaScript's `string.length`)."""
    if text.isascii():
        return len(text)
    return len(text) + len(_ASTRAL.findall(text))


def utf16_prefix(text: str, units: int) -> str:
    """The longest prefix of `text` that fits in `units` UTF-16 code units.

    JavaScript would split a surrogate pair at the boundary; we keep whole characters instead.
    """
    if text.isascii() or not _ASTRAL.search(text):
        return text[:units]
    count = 0
    for index, char in enumerate(text):
        count += 2 if ord(char) > 0xFFFF else 1
        if count > units:
            return text[:index]
    return text


def format_number(value: float) -> str:
    """JavaScript's `String(number)`."""
    if isinstance(value, bool):
        raise TypeError("booleans are not numbers here")
    if isinstance(value, int):
        if abs(value) < _EXACT_INTEGER_LIMIT:
            return str(value)
        try:
            value = float(value)
        except OverflowError:  # past a double: what JavaScript would hold
            value = math.inf if value > 0 else -math.inf
    if math.isnan(value) or math.isinf(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < _EXACT_INTEGER_LIMIT:
        return str(int(value))
    digits, exponent = _shortest_digits(value)
    sign = "-" if value < 0 else ""
    count = len(digits)
    point = exponent + 1  # position of the decimal point after the first `point` digits
    if count <= point <= 21:
        return sign + digits + "0" * (point - count)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * (-point) + digits
    mantissa = digits[0] + ("." + digits[1:] if count > 1 else "")
    exp = point - 1
    return f"{sign}{mantissa}e{'+' if exp > 0 else '-'}{abs(exp)}"


def _shortest_digits(value: float) -> tuple[str, int]:
    """Shortest round-trip digits of |value| and the decimal exponent of the first digit."""
    text = repr(abs(value))
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    leading_zeros = len(whole + fraction) - len(digits)
    exponent += len(whole) - 1 - leading_zeros
    return digits.rstrip("0") or "0", exponent


def stringify(value: Any, indent: int | None = None) -> str:
    """`JSON.stringify(value)` or, with an indent, `JSON.stringify(value, null, indent)`.

    `value` must already be JSON-safe (see values.sanitize). Non-finite numbers become null.
    """
    parts: list[str] = []
    _write(value, parts, "" if indent is None else "\n", " " * (indent or 0))
    return "".join(parts)


def _write(value: Any, out: list[str], newline: str, step: str) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_encode_string(value))
    elif isinstance(value, int | float):
        out.append(
            "null"
            if isinstance(value, float) and not math.isfinite(value)
            else format_number(value)
        )
    elif isinstance(value, list):
        if not value:
            out.append("[]")
            return
        inner = newline + step if newline else ""
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            out.append(inner)
            _write(item, out, inner, step)
        out.append(newline + "]" if newline else "]")
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = newline + step if newline else ""
        separator = ": " if newline else ":"
        out.append("{")
        for index, (key, item) in enumerate(value.items()):
            if index:
                out.append(",")
            out.append(inner)
            out.append(_encode_string(str(key)))
            out.append(separator)
            _write(item, out, inner, step)
        out.append(newline + "}" if newline else "}")
    else:
        raise TypeError(f"not JSON-safe: {type(value).__name__}")


# JSON nested deeper than this is refused: no real input nests so deep, and the code that walks
# values (sanitising, printing, comparing) recurses, so it must never meet a value that deep.
MAX_JSON_DEPTH = 256
# Strings (skipped whole, so brackets inside them do not count) and brackets.
_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def parse(text: str) -> Any:
    """JSON.parse: like json.loads but without NaN/Infinity, which JavaScript rejects, and
    without values nested deeper than MAX_JSON_DEPTH (a ValueError, like any bad JSON)."""
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH:
        _check_depth(text)
    return json.loads(text, parse_constant=_reject_constant, parse_int=_parse_int)


# A whole number with more digits than this is past what a double holds (about 1.8e308):
# refused (a float literal that large reads as Infinity, as JSON.parse reads it).
_MAX_INT_DIGITS = 309


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        raise ValueError(f"Number {text[:20]}… ({len(text)} digits) is too large for JSON")
    return int(text)


def _check_depth(text: str) -> None:
    depth = 0
    for match in _STRUCTURE.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise ValueError(
                    f"JSON is nested deeper than {MAX_JSON_DEPTH} levels "
                    f"(at character {match.start() + 1})"
                )
        elif token in "]}":
            depth -= 1


def _reject_constant(name: str) -> Any:
    raise ValueError(f"Unexpected token '{name}' in JSON")
