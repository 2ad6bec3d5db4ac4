"""Binary and unary operators on runtime values (0.1.0 equality plus the later arithmetic).

`and`/`or` are not here: they short-circuit, so the interpreter evaluates them itself.
Each function raises ValueError with the user-facing message; the caller adds the location.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentscript.runtime.values import concat_text, equals, is_number, normalise_number


def _numbers(operator: str, left: Any, right: Any) -> tuple[float, float]:
    if not (is_number(left) and is_number(right)):
        raise ValueError(f"operator '{operator}' requires number operands")
    return left, right


def _add(left: Any, right: Any) -> Any:
    if isinstance(left, str) or isinstance(right, str):
        return concat_text(left) + concat_text(right)
    a, b = _numbers("+", left, right)
    return normalise_number(a + b)


def _subtract(left: Any, right: Any) -> Any:
    a, b = _numbers("-", left, right)
    return normalise_number(a - b)


def _multiply(left: Any, right: Any) -> Any:
    a, b = _numbers("*", left, right)
    return normalise_number(a * b)


def _divide(left: Any, right: Any) -> Any:
    a, b = _numbers("/", left, right)
    if b == 0:
        raise ValueError("operator '/' cannot divide by zero")
    return normalise_number(a / b)


def _compare(operator: str, test: Callable[[float, float], bool]) -> Callable[[Any, Any], bool]:
    def compare(left: Any, right: Any) -> bool:
        a, b = _numbers(operator, left, right)
        return test(a, b)

    return compare


BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "==": equals,
    "!=": lambda left, right: not equals(left, right),
    "+": _add,
    "-": _subtract,
    "*": _multiply,
    "/": _divide,
    "<": _compare("<", lambda a, b: a < b),
    "<=": _compare("<=", lambda a, b: a <= b),
    ">": _compare(">", lambda a, b: a > b),
    ">=": _compare(">=", lambda a, b: a >= b),
}


def negate(value: Any) -> Any:
    if not is_number(value):
        raise ValueError("operator '-' requires number operands")
    return normalise_number(-value)
