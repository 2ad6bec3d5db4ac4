"""The MCP server's stdin, with lone surrogates caught before the SDK sees them.

JSON may escape a lone surrogate (`"\\ud800"`), which is not text: the SDK's parser refuses the
whole line, and the request then gets no reply at all, so a host waits for nothing. Here each
line holding one is read with Python's parser (which accepts it), the lone surrogates are
replaced by U+FFFD so the SDK can read the line, and a `tools/call` is marked in its `_meta`
(LONE_SURROGATE_META, naming the field): the memory server answers it with the error a lone
surrogate gets everywhere else in the service (`invalid_argument`, by field) instead of
storing the replacement.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

# Where a marked request's first lone surrogate was: "arguments.text", say.
LONE_SURROGATE_META = "agentscript/lone_surrogate"
_LONE = re.compile("[\ud800-\udfff]")


def guard_line(line: str) -> str:
    """`line` as the SDK can parse it: unchanged unless it escapes a lone surrogate."""
    if "\\ud" not in line.lower():
        return line
    try:
        message = json.loads(line)
    except ValueError:
        return line  # not JSON: the SDK answers that itself
    found: list[str] = []
    cleaned = _clean(message, "", found)
    if not found:
        return line
    if isinstance(cleaned, dict) and cleaned.get("method") == "tools/call":
        params = cleaned.setdefault("params", {})
        if isinstance(params, dict):
            meta = params.setdefault("_meta", {})
            if isinstance(meta, dict):
                meta[LONE_SURROGATE_META] = found[0].removeprefix("params.")
    return json.dumps(cleaned, ensure_ascii=False) + ("\n" if line.endswith("\n") else "")


def _clean(value: Any, path: str, found: list[str]) -> Any:
    if isinstance(value, str):
        if _LONE.search(value):
            found.append(path)
            return _LONE.sub("\ufffd", value)
        return value
    if isinstance(value, list):
        return [_clean(item, f"{path}[{index}]", found) for index, item in enumerate(value)]
    if isinstance(value, dict):
        return {
            _clean(key, path, found): _clean(item, f"{path}.{key}" if path else key, found)
            for key, item in value.items()
        }
    return value


class GuardedLines:
    """An async stream of lines (what the SDK's stdio server iterates), each guarded."""

    def __init__(self, lines: Any) -> None:
        self._lines = lines

    def __aiter__(self) -> AsyncIterator[str]:
        return self._guarded()

    async def _guarded(self) -> AsyncIterator[str]:
        async for line in self._lines:
            yield guard_line(line)


def lone_surrogate_error(field: str) -> dict[str, Any]:
    """The tool answer for a call whose `field` held a lone surrogate: what the service says
    of one anywhere else (`invalid_argument`, naming the field)."""
    from agentscript.memory.errors import INVALID_ARGUMENT, MemoryServiceError

    name = field.removeprefix("arguments.") or "arguments"
    message = f"{name} contains a lone surrogate; text must be valid Unicode"
    return {"error": MemoryServiceError(INVALID_ARGUMENT, message, name).to_dict()}
