"""The tool result shapes of the original's newer releases (after 0.1.0): `File.read` answers
`{ok, content}`, `File.list` `{ok, entries}` and `Env.get` `{ok, value}` where 0.1.0 answered the
bare string, list or value. Failures still raise, in both versions. A wrapper rather than a
second copy of each tool, so that the one implementation serves both versions."""

from __future__ import annotations

from typing import Any

from agentscript.providers.tools.base import Risk, SchemeTool
from agentscript.runtime.ports import ToolCall

# (scheme, method) → the field the newer result carries the 0.1.0 answer in.
WRAPPED_FIELDS = {
    ("file", "read"): "content",
    ("file", "list"): "entries",
    ("env", "get"): "value",
}


class NewerResultShapes:
    """One scheme's tools answering in the newer shapes: the 0.1.0 answer of a wrapped method
    becomes `{ok: true, FIELD: answer}`; every other method is passed through unchanged."""

    def __init__(self, scheme: str, tools: SchemeTool) -> None:
        self.scheme = scheme
        self.tools = tools

    def risk(self, request: ToolCall) -> Risk:
        return self.tools.risk(request)

    def call(self, request: ToolCall) -> Any:
        answer = self.tools.call(request)
        field = WRAPPED_FIELDS.get((self.scheme, request.method))
        return answer if field is None else {"ok": True, field: answer}
