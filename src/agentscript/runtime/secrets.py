"""The redaction set of one run: every secret the run knows, and the one way to hide them.

A run learns secrets from its start (the provider keys it may send, passwords in the URIs it
imports or connects to) and while it runs (an environment secret the user allowed, a password
in a URL a program builds). Everything the run writes down goes through the same set: the
trace, the model recording, the journal, error messages and memory writes. A secret is hidden
in every form it can take in those texts: as written, percent-encoded (URLs, form bodies) and
JSON-escaped (once and twice: a JSON string inside a JSON document), in object keys as well as
values. Texts shorter than MIN_LENGTH are not taken as secrets: hiding every "abc" would
garble ordinary text, so such a short password is not protected (docs/security.md says so).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus

REDACTED = "[REDACTED]"
MIN_LENGTH = 4
_PERCENT_ESCAPE = re.compile(r"%[0-9A-F]{2}")


def secret_forms(secret: str) -> set[str]:
    """The ways `secret` can appear in text we write."""
    encoded = {quote(secret, safe=""), quote(secret), quote_plus(secret)}
    encoded |= {_PERCENT_ESCAPE.sub(lambda m: m.group(0).lower(), form) for form in encoded}
    forms = {secret} | encoded
    for form in list(forms):
        once = _json_body(form, ascii_only=False)
        forms |= {once, _json_body(form, ascii_only=True), _json_body(once, ascii_only=False)}
    return {form for form in forms if form}


def _json_body(text: str, ascii_only: bool) -> str:
    return json.dumps(text, ensure_ascii=ascii_only)[1:-1]


class SecretSet:
    """The secrets of one run. Safe to share between threads; adding is idempotent."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self._lock = threading.Lock()
        self._secrets: list[str] = []
        self._pattern: re.Pattern[str] | None = None
        for secret in secrets:
            self.add(secret)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __len__(self) -> int:
        return len(self._secrets)

    def add(self, secret: str | None) -> bool:
        """Learn `secret`; True when it is new (and long enough to be one)."""
        if not isinstance(secret, str) or len(secret) < MIN_LENGTH:
            return False
        with self._lock:
            if secret in self._secrets:
                return False
            self._secrets.append(secret)
            forms = set().union(*(secret_forms(known) for known in self._secrets))
            # Longest first, so a form that contains another is hidden whole.
            ordered = sorted(forms, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(form) for form in ordered))
        return True

    def update(self, secrets: Iterable[str | None]) -> None:
        for secret in secrets:
            self.add(secret)

    def scrub_text(self, text: str) -> str:
        pattern = self._pattern
        return text if pattern is None else pattern.sub(REDACTED, text)

    def scrub(self, value: Any) -> Any:
        """A copy of JSON data with every secret hidden, in object keys too."""
        pattern = self._pattern
        if pattern is None:
            return value
        return _scrub(value, pattern)

    def found_in(self, value: Any) -> bool:
        """Whether any secret, in any of its forms, occurs in `value` (keys included)."""
        pattern = self._pattern
        return pattern is not None and _found(value, pattern)


def _scrub(value: Any, pattern: re.Pattern[str]) -> Any:
    if isinstance(value, str):
        return pattern.sub(REDACTED, value)
    if isinstance(value, list | tuple):
        return [_scrub(item, pattern) for item in value]
    if isinstance(value, dict):
        return {
            (pattern.sub(REDACTED, key) if isinstance(key, str) else key): _scrub(item, pattern)
            for key, item in value.items()
        }
    return value


def _found(value: Any, pattern: re.Pattern[str]) -> bool:
    if isinstance(value, str):
        return pattern.search(value) is not None
    if isinstance(value, list | tuple):
        return any(_found(item, pattern) for item in value)
    if isinstance(value, dict):
        return any(
            (isinstance(key, str) and pattern.search(key) is not None) or _found(item, pattern)
            for key, item in value.items()
        )
    return False
