"""Programs without running them: load, check, and list the models and tools they import.

Cheap to import (only the language and the loader), so `agentscript check` starts fast.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscript.lang import ast
from agentscript.lang.checker import check_program
from agentscript.lang.errors import Diagnostic
from agentscript.runtime.loader import load_program, load_program_source

if TYPE_CHECKING:
    from agentscript.providers.llm.endpoints import ModelReport


def load(path: str | Path) -> ast.Program:
    """Read and parse a program file with everything it imports (ParseError, LoadError)."""
    return load_program(path)


def load_source(
    source: str, path: str | Path | None = None, base_dir: str | Path | None = None
) -> ast.Program:
    """Parse program text; `path` (or `base_dir`) anchors relative imports."""
    return load_program_source(
        source,
        source_path=str(Path(path).absolute()) if path is not None else None,
        base_dir=str(base_dir) if base_dir is not None else None,
    )


def program_files(program: ast.Program) -> list[str]:
    """Every file the program was loaded from (the entry and each imported agent's), sorted."""
    paths = {program.source_path, *(agent.source_path for agent in program.agents)}
    return sorted(path for path in paths if path)


def program_digest(program: ast.Program) -> str:
    """A digest of the text of every file of the program: what a queued run or an
    optimizer's trials were made for, so a changed file is noticed, never mixed in."""
    import hashlib

    digest = hashlib.sha256()
    for path in program_files(program):
        digest.update(path.encode())
        digest.update(b"\0")
        digest.update(Path(path).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def check(program: ast.Program) -> list[Diagnostic]:
    """Static diagnostics; an empty list means the program is valid. Beyond the language
    rules, tool and llm imports must name a scheme or provider that exists."""
    from agentscript.providers.import_check import import_diagnostics

    return check_program(program) + import_diagnostics(program)


def models(program: ast.Program, environ: Mapping[str, str] | None = None) -> list[ModelReport]:
    """Each llm import of `program` resolved: protocol, model, endpoint, whether its key is set."""
    from agentscript.providers.llm.endpoints import report_model

    source = environ if environ is not None else os.environ
    return [
        report_model(decl.name, decl.uri, source)
        for decl in program.imports
        if decl.resource_kind == "llm"
    ]


def tools(
    program: ast.Program, workspace: Path | None = None, start_servers: bool = True
) -> list[dict[str, Any]]:
    """Each tool import of `program` with its scheme; for an `mcp://` import, the server's
    configured launch and tool risks and, when `start_servers`, the tools the server offers
    (name, description, input schema, claimed annotations, risk), or the problem that kept the
    server from answering; for a `python:`, `node:` or `npm:` import, whether the workspace's
    allow-list allows it (and a Python module's functions, when `start_servers`). Without
    `start_servers` nothing is started: only the configuration is read."""
    from agentscript.providers.tools.tool_uris import scheme_of
    from agentscript.runtime.errors import AgentScriptError

    root = workspace or (Path(program.source_path).parent if program.source_path else Path.cwd())
    listing: list[dict[str, Any]] = []
    mcp = None
    python = None
    try:
        for decl in program.imports:
            if decl.resource_kind != "tool":
                continue
            entry: dict[str, Any] = {
                "name": decl.name,
                "uri": decl.uri,
                "scheme": scheme_of(decl.uri),
            }
            if entry["scheme"] == "mcp":
                if mcp is None:
                    from agentscript.providers.tools.mcp import McpTools, approve_every_start
                    from agentscript.providers.tools.mcp_launch import refuse_every_start

                    approve = approve_every_start if start_servers else refuse_every_start
                    mcp = McpTools(root, approve_start=approve)
                try:
                    entry["server"] = mcp.launch(decl.uri).to_json()
                    entry["configured"] = mcp.configured_risks(decl.uri)
                    if start_servers:
                        entry["tools"] = mcp.list_tools(decl.uri)
                except AgentScriptError as problem:
                    entry["problem"] = str(problem)
            elif entry["scheme"] == "python":
                # The allow-list is always checked; the module is imported (its top-level
                # code run) only when starting is allowed, as MCP servers are started.
                from agentscript.providers.tools.python import PythonTools
                from agentscript.providers.tools.python_allow import check_allowed

                if python is None:
                    python = PythonTools(root)
                try:
                    check_allowed(decl.uri, root)
                    if start_servers:
                        entry["tools"] = python.describe(decl.uri)
                except AgentScriptError as problem:
                    entry["problem"] = str(problem)
            elif entry["scheme"] in ("node", "npm"):
                # The registry only: listing a module's exports would run its code.
                from agentscript.providers.tools.npm_allow import check_allowed as npm_allowed

                try:
                    npm_allowed(decl.uri, root)
                except AgentScriptError as problem:
                    entry["problem"] = str(problem)
            listing.append(entry)
    finally:
        if mcp is not None:
            mcp.close()
    return listing
