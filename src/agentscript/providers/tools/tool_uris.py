"""What a tool URI names: its scheme, and for `sh://` the command. Kept apart from the tools
that serve them so that `agentscript check` can reject `ftp://x` or `sh://bash` without loading
the providers, the workspace walk and its workers."""

from __future__ import annotations

import re

from agentscript.runtime.errors import ExecutionError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")

FORBIDDEN = frozenset({"sh", "bash", "zsh", "fish"})
# `read-range` is the later releases' name for `sed`.
SUPPORTED = ("find", "grep", "sed", "read-range")


# The `host://NAME` tools, by the names a program may import them by (the original's aliases
# map to the tool's own name).
HOST_TOOLS = {"optimizer": "optimizer", "agentscript": "optimizer", "architect": "architect"}


def host_tool_of(uri: str) -> str:
    """The tool a `host://NAME` URI names, lower case (`host://optimizer` → `optimizer`)."""
    from urllib.parse import urlsplit

    return (urlsplit(uri).hostname or "").lower()


def scheme_of(uri: str) -> str:
    """The lower-case scheme of a tool URI (`sh://grep` → `sh`), or "" when there is none."""
    matched = _SCHEME.match(uri)
    return matched.group(1).lower() if matched else ""


def shell_command(uri: str) -> str:
    """The command a `sh://` URI names: its host, else its path (`sh:grep`, `sh:///grep`)."""
    rest = uri.split(":", 1)[1] if ":" in uri else uri
    return rest.lstrip("/").split("/", 1)[0].split("?", 1)[0]


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
