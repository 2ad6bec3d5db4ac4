"""`sh://find`, `sh://grep`, `sh://sed`, `sh://read-range`: the shell tools, in-process.

No shell and no subprocess runs a command: the tools walk the workspace jail themselves, so
arguments can never become a command line. `sh://sh`, `bash`, `zsh`, `fish` are forbidden and
any other command is unsupported. The method name is ignored (`Grep.run`, `Grep.search` are the
same call), as in the original. Every call is bounded: globs match in linear time (globs.py),
output is capped (output_caps.py), the walk stops when the run's time is up or it is
interrupted, and regular-expression grep runs in a worker process (regex_search.py).
`read-range` is the original's later name for `sed` (the same arguments and result), so both
are one method here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from agentscript.providers.tools.base import (
    Risk,
    object_argument,
    optional_string,
    positive_integer,
    required_string,
)
from agentscript.providers.tools.globs import Glob
from agentscript.providers.tools.output_caps import Collector
from agentscript.providers.tools.regex_search import regex_matches
from agentscript.providers.tools.tool_uris import supported_command
from agentscript.providers.tools.workspace import Workspace
from agentscript.runtime.budgets import CallDeadline
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall

GREP_MAX_FILE_BYTES = 1024 * 1024
_LINES = re.compile(r"\r?\n")


class ShellTools:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def risk(self, request: ToolCall) -> Risk:
        """Every supported command only reads. A forbidden or unknown one fails here, before
        the approval gate would ask anyone about a call that can never run."""
        supported_command(request.uri)
        return "read"

    def call(self, request: ToolCall) -> Any:
        command = supported_command(request.uri)
        if command == "find":
            return self.find(request)
        if command == "grep":
            return self.grep(request)
        return self.read_range(request, "Sed.run" if command == "sed" else "ReadRange.run")

    def find(self, request: ToolCall) -> dict[str, Any]:
        arguments = object_argument(request, "Find.run")
        path = required_string(arguments, "path", "Find.run")
        name = optional_string(arguments, "name")
        kind = optional_string(arguments, "type")
        found = Collector(positive_integer(arguments, "max"))
        matcher = Glob.compile(name, "Find.run.name") if name is not None else None
        for entry in self.workspace.walk(path):
            request.deadline.check()
            if (kind == "file" and entry.is_dir) or (kind == "dir" and not entry.is_dir):
                continue
            if matcher is not None and not matcher.search(entry.path):
                continue
            if not found.add(entry.path, entry.path):
                break
        return found.result("files")

    def grep(self, request: ToolCall) -> dict[str, Any]:
        arguments = object_argument(request, "Grep.run")
        path = required_string(arguments, "path", "Grep.run")
        pattern = required_string(arguments, "pattern", "Grep.run")
        include = optional_string(arguments, "include")
        limit = positive_integer(arguments, "max")
        matcher = Glob.compile(include, "Grep.run.include") if include else None
        files = self._searchable_files(path, matcher, request.deadline)
        if arguments.get("regex") is True:
            matches, truncated = regex_matches(pattern, files, limit, request.deadline)
            answer: dict[str, Any] = {"ok": True, "matches": matches}
            if truncated:
                answer["truncated"] = True
            return answer
        return _substring_matches(pattern, files, limit).result("matches")

    def _searchable_files(
        self, path: str, include: Glob | None, deadline: CallDeadline
    ) -> Iterator[tuple[str, str]]:
        """Files under `path` matching `include`, skipping those over 1 MiB and anything the
        jail refuses to read (hard links, devices)."""
        for entry in self.workspace.walk(path):
            deadline.check()
            if entry.is_dir or (include is not None and not include.search(entry.path)):
                continue
            if self.workspace.size(entry) > GREP_MAX_FILE_BYTES:
                continue
            try:
                yield entry.path, self.workspace.read_text(entry, limit=GREP_MAX_FILE_BYTES)
            except ExecutionError:
                continue

    def read_range(self, request: ToolCall, call: str) -> dict[str, Any]:
        """Up to `max` lines of a workspace file from line `start`; `call` names the call in
        argument errors as the original does (`Sed.run`, `ReadRange.run`)."""
        arguments = object_argument(request, call)
        path = required_string(arguments, "path", call)
        start = positive_integer(arguments, "start", default=1)
        limit = positive_integer(arguments, "max")
        lines = _LINES.split(self.workspace.read_text(path))
        chosen = Collector(limit)
        for line in lines[start - 1 : start - 1 + limit]:
            shown = chosen.cut_line(line)
            if not chosen.add(shown, shown + "\n"):
                break
        answer: dict[str, Any] = {
            "ok": True,
            "text": "\n".join(chosen.items),
            "start": start,
            "end": start + len(chosen.items) - 1,
        }
        if chosen.truncated:
            answer["truncated"] = True
        return answer


def _substring_matches(pattern: str, files: Iterator[tuple[str, str]], limit: int) -> Collector:
    found = Collector(limit)
    for path, text in files:
        for number, line in enumerate(_LINES.split(text), start=1):
            if pattern in line:
                shown = found.cut_line(line)
                if not found.add({"path": path, "line": number, "text": shown}, path + shown):
                    return found
    return found
