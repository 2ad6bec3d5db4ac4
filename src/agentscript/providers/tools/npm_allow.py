"""Which `node:` modules and `npm:` packages a workspace lets its programs call: the original's
registry file, `agentscript.npm.json` (0.1.11), in the workspace folder or above it.

    {"allow": {"node": ["path", "fs/promises"],
               "npm": {"yaml": {"version": "^2.3"}, "@acme/util": {"exports": ["json-schema"]}}}}

Default deny: without the file nothing is allowed. A node module is allowed by its exact name
(`fs/promises` does not allow `fs`); a package allows its bare import, and a sub-path only when
listed under its `exports`. Reading the file runs nothing, so `agentscript check` can refuse an
import statically; the installed version is checked against `version` when a call is made.
`node:` takes only Node's built-in modules. A package's `effectful` is checked to be a boolean
and, as in the original, reserved: every call is effectful.
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
# Node's built-in modules (Node 20's `builtinModules`, and those later releases added), the
# only names `node:` and allow.node take: known without running Node, so `check` can say so.
NODE_BUILTINS = frozenset(
    """assert assert/strict async_hooks buffer child_process cluster console constants crypto
    dgram diagnostics_channel dns dns/promises domain events fs fs/promises http http2 https
    inspector inspector/promises module net os path path/posix path/win32 perf_hooks process
    punycode querystring readline readline/promises repl sea sqlite stream stream/consumers
    stream/promises stream/web string_decoder sys test test/reporters timers timers/promises
    tls trace_events tty url util util/types v8 vm wasi worker_threads zlib""".split()
)


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
            node, npm = _parse(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as problem:
            return cls(path, frozenset(), {}, f"Invalid npm registry '{path}': {problem}")
        return cls(path, node, npm)

    def check(self, uri: str) -> NpmTarget:
        """What `uri` names, when the registry allows it; else ExecutionError saying how."""
        scheme, name = split_uri(uri)
        if not name or scheme not in ("node", "npm"):
            raise ExecutionError(f"'{uri}' names no module; write node:MODULE or npm:PACKAGE")
        if self.problem is not None:
            raise ExecutionError(self.problem)
        where = str(self.path) if self.path is not None else f"a {REGISTRY} in the workspace"
        if scheme == "node":
            if name not in NODE_BUILTINS:
                raise ExecutionError(
                    f"'{name}' is not a Node built-in module: node: names one (node:path, "
                    f"node:fs/promises); a package or a module of your own is npm:NAME, "
                    f"installed in the workspace's node_modules"
                )
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
        if subpath and subpath not in entry.get("exports", []):
            raise ExecutionError(
                f"Sub-path '{subpath}' of package '{package}' is not allowed by {REGISTRY}: "
                f"list it under allow.npm.{package}.exports in {where}"
            )
        version = entry.get("version")
        return NpmTarget("npm", name, package, version if isinstance(version, str) else None)


def check_allowed(uri: str, start: Path) -> NpmTarget:
    """What `uri` names, when the registry at or above `start` allows it (read now)."""
    return NpmRegistry.read(start).check(uri)


def _parse(data: object) -> tuple[frozenset[str], dict[str, dict[str, Any]]]:
    """The allowed node modules and npm packages of the registry's JSON, checked as the
    original checks them; ValueError names the first field that is wrong."""
    if not isinstance(data, dict):
        raise ValueError(f"{REGISTRY} must be an object")
    allow = data.get("allow", {})
    if not isinstance(allow, dict):
        raise ValueError(f"{REGISTRY}.allow must be an object")
    node = allow.get("node", [])
    label = f"{REGISTRY}.allow.node"
    if not isinstance(node, list) or not all(isinstance(n, str) and n for n in node):
        raise ValueError(f"{label} must be a string array")
    for name in node:
        if name.startswith("node:"):
            raise ValueError(f"{label} entries must omit the node: prefix")
        if name not in NODE_BUILTINS:
            raise ValueError(f"{label} contains unknown Node built-in module '{name}'")
    npm = allow.get("npm", {})
    if not isinstance(npm, dict):
        raise ValueError(f"{REGISTRY}.allow.npm must be an object")
    for package, entry in npm.items():
        _check_entry(entry, f"{REGISTRY}.allow.npm.{package}")
    return frozenset(node), npm


def _check_entry(entry: object, label: str) -> None:
    """One package's entry: `version` a range, `exports` sub-paths, `effectful` a boolean."""
    if not isinstance(entry, dict):
        raise ValueError(f"{label} must be an object")
    version = entry.get("version")
    if version is not None and (not isinstance(version, str) or not version):
        raise ValueError(f"{label}.version must be string")
    exports = entry.get("exports")
    if exports is not None and (
        not isinstance(exports, list) or not all(isinstance(e, str) and e for e in exports)
    ):
        raise ValueError(f"{label}.exports must be a string array")
    if "effectful" in entry and not isinstance(entry["effectful"], bool):
        raise ValueError(f"{label}.effectful must be boolean")
