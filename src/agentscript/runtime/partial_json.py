"""What a JSON text cut short says so far: the partial object a streamed answer stands for.

A model streams its answer in pieces; an application shows the fields as they arrive. The text
is read up to its last complete part: an open string is closed where it stops, open arrays and
objects are closed, and what cannot be read yet (a key without its value, a dangling comma, a
literal or number cut in two) is left out. Nothing is guessed: every value returned is a prefix
of the value the whole answer holds (strings may be shorter, lists and objects may have fewer
entries).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

_OPENERS = {"{": "}", "[": "]"}


def partial_json(text: str) -> Any:
    """The value `text` holds so far; None when nothing can be read yet."""
    for prefix, followed in _prefixes(text):
        closers = _closers(prefix)
        open_end = not followed and not closers.startswith('"')
        if not prefix or (open_end and (prefix[-1].isalnum() or prefix[-1] in ".+-")):
            continue  # a number or literal may go on: it is read once something follows it
        try:
            value = json.loads(prefix + closers)
        except ValueError:
            continue
        return _whole_characters(value) if closers.startswith('"') else value
    return None


def _whole_characters(value: Any) -> Any:
    """The value with the string that was cut (the last one) rid of half a surrogate pair:
    `\\ud83d` without its partner is not a character yet."""
    if isinstance(value, str):
        return value[:-1] if value and "\ud800" <= value[-1] <= "\udbff" else value
    if isinstance(value, list) and value:
        return [*value[:-1], _whole_characters(value[-1])]
    if isinstance(value, dict) and value:
        last = next(reversed(value))
        return {**value, last: _whole_characters(value[last])}
    return value


class JsonScanner:
    """Walks JSON text one character at a time and says which characters are structure
    (outside every string; the quotes themselves are not), tracking strings and escapes."""

    def __init__(self) -> None:
        self.in_string = False
        self.escaped = False

    def structural(self, char: str) -> bool:
        if self.in_string:
            if self.escaped:
                self.escaped = False
            elif char == "\\":
                self.escaped = True
            elif char == '"':
                self.in_string = False
            return False
        if char == '"':
            self.in_string = True
            return False
        return True


def _prefixes(text: str) -> Iterator[tuple[str, bool]]:
    """`text`, then shorter prefixes ending before each structural character (outside strings),
    from the last one back: each drops one more unfinished piece. With each, whether something
    followed it in the text (then a number or literal at its end is whole)."""
    yield text.rstrip(), False
    scanner = JsonScanner()
    cuts = []
    for index, char in enumerate(text):
        if not scanner.structural(char):
            continue
        if char in ",:":
            cuts.append(index)
        elif char in _OPENERS:
            cuts.append(index + 1)
    for cut in reversed(cuts):
        yield text[:cut].rstrip(), True


def _closers(prefix: str) -> str:
    """What closes `prefix`: a quote for an open string (unless it ends inside an escape:
    then the caller tries a shorter prefix), then the brackets of every open array and object."""
    scanner = JsonScanner()
    stack: list[str] = []
    for char in prefix:
        if not scanner.structural(char):
            continue
        if char in _OPENERS:
            stack.append(_OPENERS[char])
        elif char in "}]" and stack:
            stack.pop()
    open_string = scanner.in_string and not scanner.escaped
    return ('"' if open_string else "") + "".join(reversed(stack))
