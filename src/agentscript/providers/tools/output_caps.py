"""How much one shell-tool call may return: matches, bytes, and the length of one line.

A program's `max` asks for up to that many results, but no call returns more than MAX_RESULTS
of them, more than MAX_OUTPUT_BYTES of text in all, or a line longer than MAX_LINE_CHARS (cut,
ending in "…"). A result cut by one of these caps says `truncated: true`; one that stopped at
the program's own `max` does not, as in the original. Only the standard library is imported:
the regex worker process collects its matches with the same class.
"""

from __future__ import annotations

from typing import Any

MAX_RESULTS = 10_000
MAX_OUTPUT_BYTES = 1024 * 1024
MAX_LINE_CHARS = 4096
ELLIPSIS = "…"


class Collector:
    """Results of one call, up to the program's `limit` and the caps. `add` returns False when
    nothing more should be collected."""

    def __init__(self, limit: int, max_bytes: int = MAX_OUTPUT_BYTES) -> None:
        # Past MAX_RESULTS the call goes on until one more result shows that the cap cut it.
        self.capped = limit > MAX_RESULTS
        self.limit = min(limit, MAX_RESULTS)
        self.max_bytes = max_bytes
        self.items: list[Any] = []
        self.size = 0
        self.truncated = False

    def add(self, item: Any, text: str) -> bool:
        """Keep `item`, whose text (path and line) is `text`, unless a cap is reached."""
        if len(self.items) >= self.limit:
            self.truncated = self.truncated or self.capped
            return False
        size = len(text.encode("utf-8", errors="surrogatepass"))
        if self.size + size > self.max_bytes:
            self.truncated = True
            return False
        self.items.append(item)
        self.size += size
        return self.capped or len(self.items) < self.limit

    def cut_line(self, line: str) -> str:
        """`line`, cut to MAX_LINE_CHARS (the result then says truncated)."""
        if len(line) <= MAX_LINE_CHARS:
            return line
        self.truncated = True
        return line[: MAX_LINE_CHARS - 1] + ELLIPSIS

    def result(self, key: str) -> dict[str, Any]:
        """`{ok: true, <key>: items}`, with `truncated: true` when a cap cut it."""
        answer: dict[str, Any] = {"ok": True, key: self.items}
        if self.truncated:
            answer["truncated"] = True
        return answer
