"""Starting an MCP server is an action: what a start would launch, and who may allow it.

A stdio MCP server is a process that runs whatever its configuration says, so a start must be
approved like any other side effect, and decided before anything runs. This module holds what
the approval gate needs for that without importing the MCP SDK or pydantic:

- `McpConfigSnapshot`: the text of `agentscript.mcp.json` as it was when the run started. A run
  reads its MCP configuration once, so a file the program writes cannot change what the run
  may start.
- `ServerLaunch`: one server's launch as configured (command and arguments, environment,
  working directory, or URL), unexpanded, which is what approval rules pin.
- `StartApprover`: the port through which `mcp://` asks before it starts a server; it raises
  `StartRefused` when the start is not allowed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall

CONFIG_FILE = "agentscript.mcp.json"
# A configuration file is a few kilobytes; anything this large is not one.
MAX_CONFIG_BYTES = 1024 * 1024


class StartRefused(ExecutionError):
    """An MCP server was not allowed to start; nothing was launched."""


@dataclass(frozen=True, slots=True)
class ServerLaunch:
    """What starting server `server` would launch, exactly as its configuration says."""

    server: str
    transport: Literal["stdio", "http"]
    # stdio: the command then its arguments, with `$VAR` not yet expanded.
    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    # http: the server's URL.
    url: str | None = None

    def describe(self) -> str:
        """One line for people: the command line, or the URL."""
        if self.transport == "http":
            return f"connect to {self.url}"
        text = " ".join(self.command)
        if self.env:
            text += " (env: " + ", ".join(name for name, _ in self.env) + ")"
        if self.cwd:
            text += f" in {self.cwd}"
        return text

    def to_json(self) -> dict[str, object]:
        """For traces and listings: env by name only, since a value may be written inline."""
        data: dict[str, object] = {"server": self.server, "transport": self.transport}
        if self.transport == "http":
            data["url"] = self.url
        else:
            data["command"] = list(self.command)
            if self.env:
                data["env"] = [name for name, _ in self.env]
            if self.cwd is not None:
                data["cwd"] = self.cwd
        return data


# Asked right before a server would start: returns when the start may go ahead, raises
# StartRefused when it may not. `request` is the tool call that needs the server.
StartApprover = Callable[[ToolCall, ServerLaunch], None]


def refuse_every_start(request: ToolCall, launch: ServerLaunch) -> None:
    """The approver of last resort: whoever did not say how starts are approved gets none."""
    raise StartRefused(
        f"MCP server '{launch.server}' was not started: no approval gate allows server starts here"
    )


@dataclass(frozen=True, slots=True)
class McpConfigSnapshot:
    """The workspace's `agentscript.mcp.json` as read once, at run start; `text` is None when
    there was no such file, `problem` says why it could not be read."""

    path: Path
    text: str | None
    problem: str | None = None

    @classmethod
    def read(cls, workspace: Path) -> McpConfigSnapshot:
        """Read the file now. Only a regular file up to MAX_CONFIG_BYTES is read (a FIFO would
        hang, /dev/zero would never end); any other problem is kept and reported when the run
        first uses an `mcp://` tool, so a run without one is not stopped by it."""
        path = workspace.resolve() / CONFIG_FILE
        try:
            descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return cls(path, None)
        except OSError as problem:
            return cls(path, None, f"Cannot read {path}: {problem.strerror or problem}")
        with os.fdopen(descriptor, "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode):
                return cls(path, None, f"Cannot read {path}: not a regular file")
            data = file.read(MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            return cls(path, None, f"{path} is larger than {MAX_CONFIG_BYTES} bytes")
        try:
            return cls(path, data.decode("utf-8"))
        except UnicodeDecodeError:
            return cls(path, None, f"{path} is not UTF-8 text")
