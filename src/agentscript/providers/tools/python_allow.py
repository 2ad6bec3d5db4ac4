"""Which Python modules a workspace lets its programs call: the `python:` allow-list.

Read from `[tool.agentscript] python_tools = ["mypkg.text"]` in the nearest pyproject.toml at or
above the workspace folder. Only this file grants modules, and only by exact name: allowing
`mypkg` does not allow `mypkg.text`, and `os`, `subprocess` and friends are never implied.
Reading the list imports nothing, so `agentscript check` can refuse a module statically.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from agentscript.runtime.errors import ExecutionError

PYPROJECT = "pyproject.toml"


def module_of(uri: str) -> str:
    """The module a `python:` URI names: `python:mypkg.text` and `python://mypkg.text` alike."""
    rest = uri.split(":", 1)[1] if ":" in uri else uri
    return rest.lstrip("/").strip()


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` (a folder), or None."""
    folder = start.resolve()
    for candidate in (folder, *folder.parents):
        path = candidate / PYPROJECT
        if path.is_file():
            return path
    return None


@dataclass(frozen=True, slots=True)
class AllowList:
    """The modules a workspace allows, read once: `path` is the pyproject.toml that grants them
    (None when there is none); `problem` says why it could not be read (then none is allowed,
    and each call says why)."""

    path: Path | None
    modules: frozenset[str]
    problem: str | None = None

    @classmethod
    def read(cls, start: Path) -> AllowList:
        """The allow-list of the nearest pyproject.toml at or above the folder `start`."""
        path = find_pyproject(start)
        if path is None:
            return cls(None, frozenset())
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as problem:
            return cls(
                path, frozenset(), f"Cannot read the Python tool allow-list in {path}: {problem}"
            )
        tool = data.get("tool")
        section = tool.get("agentscript") if isinstance(tool, dict) else None
        listed = section.get("python_tools", []) if isinstance(section, dict) else []
        if not isinstance(listed, list) or not all(isinstance(name, str) for name in listed):
            malformed = f"{path}: [tool.agentscript] python_tools must be a list of module names"
            return cls(path, frozenset(), malformed)
        return cls(path, frozenset(name.strip() for name in listed))

    def check(self, uri: str) -> str:
        """The module `uri` names, when this list allows it; else ExecutionError saying how to
        allow it."""
        module = module_of(uri)
        if not module or not all(part.isidentifier() for part in module.split(".")):
            raise ExecutionError(
                f"'{uri}' does not name a Python module; write python:PACKAGE.MODULE"
            )
        if self.problem is not None:
            raise ExecutionError(self.problem)
        if module not in self.modules:
            where = str(self.path) if self.path is not None else f"a {PYPROJECT} in the workspace"
            raise ExecutionError(
                f"Python module '{module}' is not allowed: add it to [tool.agentscript] "
                f"python_tools in {where}"
            )
        return module


def check_allowed(uri: str, start: Path) -> str:
    """The module `uri` names, when the workspace at `start` allows it (read now)."""
    return AllowList.read(start).check(uri)
