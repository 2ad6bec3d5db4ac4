"""Which `node:` modules and `npm:` packages a workspace lets its programs call: the original's
registry file, `agentscript.npm.json` (0.1.11), in the workspace folder or above it.

    {"allow": {"node": ["path", "fs/promises"],
               "npm": {"yaml": {"version": "^2.3"}, "@acme/util": {"exports": ["json-schema"]}}}}

Default deny: without the file nothing is allowed. A node module is allowed by its exact name
(`fs/promises` does not allow `fs`); a package allows its bare import, and a sub-path only when
listed under its `exports`. Reading the file runs nothing, so `agentscript check` can refuse an
import statically; the installed version is checked against `version` when a call is made.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentscript.runtime.errors import ExecutionError

REGISTRY = "agentscript.npm.json"
# The registry file is a short list: anything bigger is not one.
MAX_REGISTRY_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class NpmTarget:
    """What a `node:` or `npm:` URI names, once allowed: the import specifier Node is given,
    the package (npm) and the version range the registry asks of it."""

    scheme: str
    specifier: str
    package: str | None = None
    version: str | None = None

    @property
    def kind(self) -> str:
        """How errors name the tool: `Node tool` or `Npm tool`, as the original does."""
        return "Node tool" if self.scheme == "node" else "Npm tool"


def split_uri(uri: str) -> tuple[str, str]:
    """(`node` or `npm`, the rest): `npm:@acme/util/sub` → ("npm", "@acme/util/sub")."""
    scheme, _, rest = uri.partition(":")
    return scheme.lower(), rest.lstrip("/").strip()


def package_of(name: str) -> tuple[str, str]:
    """(package, sub-path) of an npm import: `@scope/pkg/a/b` → ("@scope/pkg", "a/b")."""
    parts = name.split("/")
    count = 2 if name.startswith("@") else 1
    return "/".join(parts[:count]), "/".join(parts[count:])


def find_registry(start: Path) -> Path | None:
    folder = start.resolve()
    for candidate in (folder, *folder.parents):
        path = candidate / REGISTRY
        if path.is_file():
            return path
    return None


@dataclass(frozen=True, slots=True)
class NpmRegistry:
    """The registry as read once: `path` is the file (None: there is none); `problem` says why
    it could not be read (then nothing is allowed, and each import says why)."""

    path: Path | None
    node: frozenset[str]
    npm: dict[str, dict[str, Any]]
    problem: str | None = None

    @classmethod
    def read(cls, start: Path) -> NpmRegistry:
        path = find_registry(start)
        if path is None:
            return cls(None, frozenset(), {})
        try:
            if path.stat().st_size > MAX_REGISTRY_BYTES:
                raise ValueError(f"larger than {MAX_REGISTRY_BYTES} bytes")
            data = json.loads(path.read_text(encoding="utf-8"))
            allow = data["allow"] if isinstance(data, dict) else None
            if not isinstance(allow, dict):
                raise ValueError('it needs an "allow" object')
            node = allow.get("node", [])
            npm = allow.get("npm", {})
            if not isinstance(node, list) or not all(isinstance(n, str) for n in node):
                raise ValueError('"allow.node" must be a list of module names')
            if not isinstance(npm, dict) or not all(isinstance(v, dict) for v in npm.values()):
                raise ValueError('"allow.npm" must map package names to objects')
        except (OSError, ValueError, KeyError) as problem:
            return cls(path, frozenset(), {}, f"Cannot read {path}: {problem}")
        return cls(path, frozenset(node), npm)

    def check(self, uri: str) -> NpmTarget:
        """What `uri` names, when the registry allows it; else ExecutionError saying how."""
        scheme, name = split_uri(uri)
        if not name or scheme not in ("node", "npm"):
            raise ExecutionError(f"'{uri}' names no module; write node:MODULE or npm:PACKAGE")
        if self.problem is not None:
            raise ExecutionError(self.problem)
        where = str(self.path) if self.path is not None else f"a {REGISTRY} in the workspace"
        if scheme == "node":
            if name not in self.node:
                raise ExecutionError(
                    f"Node module '{name}' is not allowed by {REGISTRY}: add \"{name}\" under "
                    f"allow.node in {where}"
                )
            return NpmTarget("node", f"node:{name}")
        package, subpath = package_of(name)
        entry = self.npm.get(package)
        if entry is None:
            raise ExecutionError(
                f"Package '{package}' is not allowed by {REGISTRY}: add \"{package}\" under "
                f"allow.npm in {where}"
            )
        exports = entry.get("exports", [])
        if subpath and (not isinstance(exports, list) or subpath not in exports):
            raise ExecutionError(
                f"Sub-path '{subpath}' of package '{package}' is not allowed by {REGISTRY}: "
                f"list it under allow.npm.{package}.exports in {where}"
            )
        version = entry.get("version")
        return NpmTarget("npm", name, package, version if isinstance(version, str) else None)


def check_allowed(uri: str, start: Path) -> NpmTarget:
    """What `uri` names, when the registry at or above `start` allows it (read now)."""
    return NpmRegistry.read(start).check(uri)
