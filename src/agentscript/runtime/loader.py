"""The multi-file loader: parse an entry file and merge the agents it imports (reference §3.9).

`import agent N from "./x.as"` pulls agent N (and, recursively, what x.as imports) into one
Program: imported agents first in dependency order, the entry file's agents last. Relative
`file` and `memory` URIs are made absolute against the file that wrote them, so an imported agent
reads its own neighbours wherever it is used from. `parse`, `check` and `run` all load through here.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from urllib.parse import quote, unquote

from agentscript.lang import ast
from agentscript.lang.errors import ParseError
from agentscript.lang.parser import parse_program
from agentscript.runtime.bounded_input import UnusableInput, read_regular_text
from agentscript.runtime.errors import LoadError
from agentscript.runtime.files import resolve_import_path

# Programs are source text; refuse to parse anything bigger than this by mistake.
MAX_PROGRAM_BYTES = 8 * 1024 * 1024


def read_source(path: Path) -> str:
    """A program's text: a regular UTF-8 file of at most MAX_PROGRAM_BYTES (a FIFO or a device
    is refused before anything waits on it)."""
    try:
        return read_regular_text(path, MAX_PROGRAM_BYTES, "Program file")
    except UnusableInput as problem:
        raise LoadError(str(problem)) from None


def load_program(path: str | Path) -> ast.Program:
    """Read, parse and merge the program at `path`. Raises ParseError or LoadError."""
    entry = Path(path).absolute()
    return load_program_source(read_source(entry), source_path=str(entry))


def load_program_source(
    source: str, source_path: str | None = None, base_dir: str | None = None
) -> ast.Program:
    """Parse `source` and merge its agent imports.

    Relative imports resolve against `source_path`'s directory, else `base_dir` (the REPL passes
    the working directory); with neither, a relative file or agent import is an error.
    """
    loader = _Loader()
    program = parse_program(source, source_path)
    # The entry file is on the import stack too, so `a.as -> b.as -> a.as` stops at the
    # first repeat.
    stack = [str(Path(source_path).resolve())] if source_path is not None else []
    imports, imported_agents = loader.resolve(program, source_path, base_dir, stack=stack)
    return dataclasses.replace(
        program,
        imports=_unique_imports(imports),
        agents=imported_agents + program.agents,
    )


class _Loader:
    def __init__(self) -> None:
        self.seen_agents: set[tuple[str, str]] = set()

    def resolve(
        self,
        program: ast.Program,
        source_path: str | None,
        base_dir: str | None,
        stack: list[str],
    ) -> tuple[list[ast.ImportDecl], list[ast.AgentDecl]]:
        """The merged imports and the imported agents (dependency order) of one file."""
        imports: list[ast.ImportDecl] = []
        agents: list[ast.AgentDecl] = []
        base = _base_directory(source_path, base_dir)
        for decl in program.imports:
            if decl.resource_kind == "agent":
                sub_imports, sub_agents = self.import_agent(decl, base, source_path, stack)
                imports.extend(sub_imports)
                agents.extend(sub_agents)
            else:
                imports.append(_absolute_import(decl, base))
        return imports, agents

    def import_agent(
        self, decl: ast.ImportDecl, base: Path | None, source_path: str | None, stack: list[str]
    ) -> tuple[list[ast.ImportDecl], list[ast.AgentDecl]]:
        target = resolve_import_path(decl.uri, decl.resource_kind, base)
        key = str(target)
        if key in stack or key == source_path:
            raise LoadError(f"Circular agent import detected at {decl.uri}")
        try:
            source = read_source(target)
            program = parse_program(source, key)
            imports, agents = self.resolve(program, key, None, [*stack, key])
            agent = program.agent(decl.name)
            if agent is None:
                raise LoadError(f"Imported agent '{decl.name}' was not found in {decl.uri}")
        except (LoadError, ParseError) as problem:
            raise LoadError(
                f"Failed to load agent import '{decl.name}' from {target}: {problem}"
            ) from problem
        identity = (key, agent.name)
        if identity not in self.seen_agents:
            self.seen_agents.add(identity)
            agents.append(dataclasses.replace(agent, is_main=False))
        return imports, agents


def _base_directory(source_path: str | None, base_dir: str | None) -> Path | None:
    if source_path is not None:
        return Path(source_path).parent
    if base_dir is not None:
        return Path(base_dir)
    return None


def _absolute_import(decl: ast.ImportDecl, base: Path | None) -> ast.ImportDecl:
    """File imports become absolute paths; relative file/sqlite memory URIs absolute URIs."""
    if decl.resource_kind == "file":
        return dataclasses.replace(
            decl, uri=str(resolve_import_path(decl.uri, decl.resource_kind, base))
        )
    if decl.resource_kind == "memory" and base is not None:
        scheme, separator, rest = decl.uri.partition("://")
        if separator and scheme in ("file", "sqlite"):
            # sqlite URIs carry a namespace after '#'; a JSONL path is the whole rest.
            location, hash_mark, fragment = (
                rest.partition("#") if scheme == "sqlite" else (rest, "", "")
            )
            path = Path(unquote(location))
            if location and not path.is_absolute():
                absolute = quote(str((base / path).resolve()))
                return dataclasses.replace(decl, uri=f"{scheme}://{absolute}{hash_mark}{fragment}")
    return decl


def _unique_imports(imports: list[ast.ImportDecl]) -> list[ast.ImportDecl]:
    seen: set[tuple[str, str, str]] = set()
    unique: list[ast.ImportDecl] = []
    for decl in imports:
        key = (decl.resource_kind, decl.name, decl.uri)
        if key not in seen:
            seen.add(key)
            unique.append(decl)
    return unique
