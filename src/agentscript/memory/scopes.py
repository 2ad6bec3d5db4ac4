"""Scopes: which partition of memory an operation reads and writes.

A scope is `global` or a workspace id, the normalised absolute path of a workspace directory.
The routing table decides, from the configured mode, the current workspace and an explicit
`scope` argument, which scopes a call reads (in precedence order) and the one it writes. The
store then puts those scopes into every query it runs; nothing is filtered afterwards.
"""

from __future__ import annotations

import ntpath
import os
import re
from dataclasses import dataclass
from pathlib import Path

from agentscript.memory.config import ScopeMode
from agentscript.memory.entries import GLOBAL_SCOPE, require_unicode
from agentscript.memory.errors import INVALID_ARGUMENT, MemoryServiceError

_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
MAX_SCOPE_CHARS = 4096


def workspace_id(path: str | Path) -> str:
    """The id of the workspace at `path`: absolute, symlinks resolved, `/` separators, no
    trailing slash, lowercase drive letter. Resolving symlinks makes two spellings of one
    directory one scope; a Windows path keeps its drive (`c:/work/app`) on any platform."""
    text = os.fspath(path)
    if not text.strip():
        raise MemoryServiceError(INVALID_ARGUMENT, "a workspace path must not be empty", "scope")
    if _WINDOWS_DRIVE.match(text):
        normal = ntpath.normpath(text).replace("\\", "/")
        return normal[0].lower() + normal[1:].rstrip("/") if len(normal) > 3 else normal.lower()
    resolved = os.path.realpath(text).replace("\\", "/")
    return resolved.rstrip("/") or "/"


def parse_scope(value: object) -> str:
    """An explicit scope argument: `global`, or a workspace path made into its id."""
    if not isinstance(value, str) or not value.strip():
        raise MemoryServiceError(
            INVALID_ARGUMENT, "scope must be 'global' or an absolute workspace path", "scope"
        )
    if "\x00" in value or len(value) > MAX_SCOPE_CHARS:
        raise MemoryServiceError(INVALID_ARGUMENT, "scope is not a usable path", "scope")
    require_unicode(value, "scope")
    if value.strip() == GLOBAL_SCOPE:
        return GLOBAL_SCOPE
    if not (os.path.isabs(value) or _WINDOWS_DRIVE.match(value)):
        raise MemoryServiceError(
            INVALID_ARGUMENT,
            f"scope {value!r} must be 'global' or an absolute workspace path",
            "scope",
        )
    return workspace_id(value)


@dataclass(frozen=True, slots=True)
class ScopePlan:
    """The scopes one call reads, highest precedence first, and the scope it writes. With
    `first` (mode `global-first`), recall lists that scope's hits before any other's; without,
    the hits of every read scope are ranked together."""

    read: tuple[str, ...]
    write: str
    first: str | None = None

    def ranked_groups(self) -> list[tuple[str, ...]]:
        """The read scopes as recall ranks them: each group's hits before the next group's."""
        if self.first is None:
            return [self.read]
        rest = tuple(scope for scope in self.read if scope != self.first)
        return [(self.first,), rest] if rest else [(self.first,)]


def route(mode: ScopeMode, workspace: str | None, explicit: str | None = None) -> ScopePlan:
    """The routing table.

    | situation                     | reads                  | writes    |
    | explicit `global`             | global                 | global    |
    | explicit workspace W          | W, global              | W         |
    | no workspace (any mode)       | global                 | global    |
    | mode `workspace` (default)    | workspace, global      | workspace |
    | mode `global-first`           | global, then workspace | workspace |
    | mode `global`                 | global                 | global    |

    Global is always readable: it holds what is true everywhere (the user's name, tools).
    "Then" means recall lists every global hit before the first workspace hit; elsewhere the
    read scopes' hits are ranked together.
    """
    if explicit is not None:
        if explicit == GLOBAL_SCOPE:
            return ScopePlan((GLOBAL_SCOPE,), GLOBAL_SCOPE)
        return ScopePlan((explicit, GLOBAL_SCOPE), explicit)
    if workspace is None or mode == "global":
        return ScopePlan((GLOBAL_SCOPE,), GLOBAL_SCOPE)
    if mode == "global-first":
        return ScopePlan((GLOBAL_SCOPE, workspace), workspace, first=GLOBAL_SCOPE)
    return ScopePlan((workspace, GLOBAL_SCOPE), workspace)
