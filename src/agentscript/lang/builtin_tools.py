"""The methods of the built-in tool schemes, as the language defines them: pure data, so the
checker (which imports nothing outside lang/) and the language server read one table.

How a scheme treats a method it does not have decides what the checker says: `file://` and
`env://` refuse it at run time (an error before the run), `sh://` ignores the method name and
runs its command (a warning: the program still runs, as in the original), `http(s)://` sends the
name as the HTTP verb (nothing to say).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Unknown = Literal["refused", "ignored"]
REFUSED: Unknown = "refused"
IGNORED: Unknown = "ignored"


@dataclass(frozen=True, slots=True)
class BuiltinMethods:
    names: tuple[str, ...]
    unknown: Unknown


BUILTIN_TOOL_METHODS: dict[str, BuiltinMethods] = {
    "file": BuiltinMethods(("read", "list", "write", "patch", "undo"), REFUSED),
    "env": BuiltinMethods(("get",), REFUSED),
    "sh": BuiltinMethods(("run",), IGNORED),
}


def builtin_methods(uri: str) -> BuiltinMethods | None:
    """The table entry for a tool URI's scheme; None when its methods are not fixed."""
    return BUILTIN_TOOL_METHODS.get(uri.split(":", 1)[0].lower()) if ":" in uri else None
