"""`file://workspace`: read, list, write, patch and undo files inside the workspace jail.

Writes and patches are atomic and return effect records; `File.undo(effects)` reverts them
newest first. Read results are the 0.1.0 ones: `read` gives the text, `list` the entry names.
"""

from __future__ import annotations

from typing import Any

from agentscript.providers.tools.base import Risk, object_argument, required_string
from agentscript.providers.tools.effects import file_effect, undo_effects
from agentscript.providers.tools.workspace import Workspace
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall

_READS = frozenset({"read", "list"})
_METHODS = "read, list, write, patch, undo"


class FileTools:
    """The `file` scheme. The URI's host part is ignored: every File tool works in the jail."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def risk(self, request: ToolCall) -> Risk:
        return "read" if request.method in _READS else "effect"

    def call(self, request: ToolCall) -> Any:
        method = request.method
        if method == "read":
            arguments = object_argument(request, "File.read")
            return self.workspace.read_text(required_string(arguments, "path", "File.read"))
        if method == "list":
            arguments = object_argument(request, "File.list")
            return self.workspace.list_names(required_string(arguments, "path", "File.list"))
        if method == "write":
            return self.write(request)
        if method == "patch":
            return self.patch(request)
        if method == "undo":
            if len(request.args) != 1 or not isinstance(request.args[0], list):
                raise ExecutionError("File.undo expects a list of effects")
            return undo_effects(self.workspace, request.args[0])
        raise ExecutionError(f"Unsupported file method '{method}'. Supported: {_METHODS}")

    def write(self, request: ToolCall) -> dict[str, Any]:
        arguments = object_argument(request, "File.write")
        path = self.workspace.relative(required_string(arguments, "path", "File.write"))
        content = required_string(arguments, "content", "File.write")
        existed = self.workspace.exists(path)
        previous = self.workspace.read_bytes(path) if existed else None
        data = _utf8(content, "File.write.content")
        created = self.workspace.write_bytes(path, data)
        effect = file_effect(
            self.workspace, request.tool_name, "write", path, existed, previous, data
        )
        if created:
            # Undo removes these again (when empty), so a created file leaves nothing behind.
            effect["created_dirs"] = created
        return {"ok": True, "effects": [effect]}

    def patch(self, request: ToolCall) -> dict[str, Any]:
        arguments = object_argument(request, "File.patch")
        path = self.workspace.relative(required_string(arguments, "path", "File.patch"))
        search = required_string(arguments, "search", "File.patch")
        replace = arguments.get("replace")
        if not isinstance(replace, str):
            raise ExecutionError("File.patch.replace is required")
        previous = self.workspace.read_bytes(path)
        text = previous.decode("utf-8", errors="replace")
        if search not in text:
            return {"ok": False, "error": "patch search text not found", "effects": []}
        patched = _utf8(text.replace(search, replace, 1), "File.patch.replace")
        self.workspace.write_bytes(path, patched)
        effect = file_effect(
            self.workspace, request.tool_name, "patch", path, True, previous, patched
        )
        return {"ok": True, "effects": [effect]}


def _utf8(text: str, label: str) -> bytes:
    """`text` as the bytes of a UTF-8 file; a lone surrogate (from `"\\ud800"` in JSON) has no
    UTF-8 form, so it is refused with the argument's name instead of a codec error."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as problem:
        bad = ord(text[problem.start])
        raise ExecutionError(
            f"{label} is not valid Unicode: a lone surrogate (U+{bad:04X}) at character "
            f"{problem.start + 1}"
        ) from None
