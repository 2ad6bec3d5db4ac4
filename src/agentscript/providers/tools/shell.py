"""`sh://find`, `sh://grep`, `sh://sed`: the three shell tools, implemented in-process.

No shell and no subprocess runs a command: the tools walk the workspace jail themselves, so
arguments can never become a command line. `sh://sh`, `bash`, `zsh`, `fish` are forbidden and
any other command is unsupported. The method name is ignored (`Grep.run`, `Grep.search` are the
same call), as in the original. Regular-expression grep runs the pattern in a separate worker
process with a time cap, because a pathological pattern cannot be interrupted in-process.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

from agentscript.providers.tools.base import (
    Risk,
    object_argument,
    optional_string,
    positive_integer,
    required_string,
)
from agentscript.providers.tools.workspace import Workspace
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall

FORBIDDEN = frozenset({"sh", "bash", "zsh", "fish"})
SUPPORTED = ("find", "grep", "sed")
GREP_MAX_FILE_BYTES = 1024 * 1024
REGEX_TIMEOUT_SECONDS = 5.0
REGEX_MAX_PATTERN = 1000
# Text handed to one regex worker; beyond it the remaining files are not searched.
REGEX_MAX_TOTAL_BYTES = 64 * 1024 * 1024
_LINES = re.compile(r"\r?\n")


def shell_command(uri: str) -> str:
    """The command a `sh://` URI names: its host, else its path (`sh:grep`, `sh:///grep`)."""
    rest = uri.split(":", 1)[1] if ":" in uri else uri
    return rest.lstrip("/").split("/", 1)[0].split("?", 1)[0]


def glob_pattern(glob: str) -> re.Pattern[str]:
    """The original's glob: `*` → `.*` (may cross `/`), `?` → `.`, matched at a path end."""
    body = "".join(
        ".*" if char == "*" else "." if char == "?" else re.escape(char) for char in glob
    )
    return re.compile(f"(^|/){body}$")


def supported_command(uri: str) -> str:
    """The command of a `sh://` URI; ExecutionError for a shell (forbidden: it would run
    command strings) or a command this tool does not implement."""
    command = shell_command(uri)
    if command in FORBIDDEN:
        raise ExecutionError(f"Forbidden shell tool '{command}'")
    if command not in SUPPORTED:
        raise ExecutionError(
            f"Unsupported shell tool '{command}'. Supported: {', '.join(SUPPORTED)}"
        )
    return command


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
        return self.sed(request)

    def find(self, request: ToolCall) -> dict[str, Any]:
        arguments = object_argument(request, "Find.run")
        path = required_string(arguments, "path", "Find.run")
        name = optional_string(arguments, "name")
        kind = optional_string(arguments, "type")
        limit = positive_integer(arguments, "max")
        matcher = glob_pattern(name) if name is not None else None
        files: list[str] = []
        for entry in self.workspace.walk(path):
            if len(files) >= limit:
                break
            if (kind == "file" and entry.is_dir) or (kind == "dir" and not entry.is_dir):
                continue
            if matcher is not None and not matcher.search(entry.path):
                continue
            files.append(entry.path)
        return {"ok": True, "files": files}

    def grep(self, request: ToolCall) -> dict[str, Any]:
        arguments = object_argument(request, "Grep.run")
        path = required_string(arguments, "path", "Grep.run")
        pattern = required_string(arguments, "pattern", "Grep.run")
        include = optional_string(arguments, "include")
        limit = positive_integer(arguments, "max")
        use_regex = arguments.get("regex") is True
        files = self._searchable_files(path, glob_pattern(include) if include else None)
        if use_regex:
            matches = _regex_matches(pattern, _bounded(files, REGEX_MAX_TOTAL_BYTES), limit)
        else:
            matches = _substring_matches(pattern, files, limit)
        return {"ok": True, "matches": matches}

    def _searchable_files(
        self, path: str, include: re.Pattern[str] | None
    ) -> Iterator[tuple[str, str]]:
        """Files under `path` matching `include`, skipping those over 1 MiB and anything the
        jail refuses to read (hard links, devices)."""
        for entry in self.workspace.walk(path):
            if entry.is_dir or (include is not None and not include.search(entry.path)):
                continue
            if self.workspace.size(entry.path) > GREP_MAX_FILE_BYTES:
                continue
            try:
                yield entry.path, self.workspace.read_text(entry.path, limit=GREP_MAX_FILE_BYTES)
            except ExecutionError:
                continue

    def sed(self, request: ToolCall) -> dict[str, Any]:
        arguments = object_argument(request, "Sed.run")
        path = required_string(arguments, "path", "Sed.run")
        start = positive_integer(arguments, "start", default=1)
        limit = positive_integer(arguments, "max")
        lines = _LINES.split(self.workspace.read_text(path))
        chosen = lines[start - 1 : start - 1 + limit]
        return {
            "ok": True,
            "text": "\n".join(chosen),
            "start": start,
            "end": start + len(chosen) - 1,
        }


def _bounded(files: Iterator[tuple[str, str]], total: int) -> list[tuple[str, str]]:
    chosen: list[tuple[str, str]] = []
    size = 0
    for path, text in files:
        size += len(text)
        if size > total:
            break
        chosen.append((path, text))
    return chosen


def _substring_matches(
    pattern: str, files: Iterator[tuple[str, str]], limit: int
) -> list[dict[str, Any]]:
    matches: list[dict[str, Any]] = []
    for path, text in files:
        for number, line in enumerate(_LINES.split(text), start=1):
            if pattern in line:
                matches.append({"path": path, "line": number, "text": line})
                if len(matches) >= limit:
                    return matches
    return matches


def _regex_matches(pattern: str, files: list[tuple[str, str]], limit: int) -> list[dict[str, Any]]:
    if len(pattern) > REGEX_MAX_PATTERN:
        raise ExecutionError(
            f"Grep.run regex pattern is longer than {REGEX_MAX_PATTERN} characters"
        )
    try:
        re.compile(pattern)
    except re.error as problem:
        raise ExecutionError(f"Grep.run regex pattern is invalid: {problem}") from None
    job = json.dumps({"pattern": pattern, "max": limit, "files": files})
    try:
        finished = subprocess.run(
            [sys.executable, "-m", "agentscript.providers.tools.regex_worker"],
            input=job,
            capture_output=True,
            text=True,
            timeout=REGEX_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ExecutionError(
            f"Grep.run regex search took longer than {REGEX_TIMEOUT_SECONDS:g} seconds "
            "(the pattern may backtrack catastrophically)"
        ) from None
    if finished.returncode != 0:
        raise ExecutionError(f"Grep.run regex search failed: {finished.stderr.strip()[-300:]}")
    result: list[dict[str, Any]] = json.loads(finished.stdout)
    return result
