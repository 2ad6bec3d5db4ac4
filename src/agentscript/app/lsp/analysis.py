"""One document analysed: parsed (with recovery), checked as `agentscript check` checks it, and
indexed. The Workspace keeps the analyses of open documents and the indexes of the files they
import, read from the editor's buffer when the file is open and from disk otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cached_property
from pathlib import Path

from lsprotocol import types

from agentscript.app.lsp.index import AGENT, DocumentIndex, build_index
from agentscript.app.lsp.positions import LineIndex
from agentscript.app.lsp.recovery import ParseOutcome, parse_with_recovery
from agentscript.lang import ast
from agentscript.lang.checker import check_program
from agentscript.lang.errors import Diagnostic, ParseError, SourceMap, SourceRange
from agentscript.runtime.errors import LoadError
from agentscript.runtime.files import resolve_import_path
from agentscript.runtime.loader import merge_imports

# The code of a diagnostic for an error that stopped the parser (the checker's codes are
# upper-case words too).
PARSE_ERROR = "PARSE_ERROR"
IMPORT_ERROR = "IMPORT_ERROR"
_QUOTED = re.compile(r"'([^']+)'")


class Analysis:
    """A document's parse outcome and diagnostics; its index and line table are built when a
    feature first needs them (publishing diagnostics needs neither, most of the time)."""

    def __init__(
        self,
        path: str | None,
        text: str,
        outcome: ParseOutcome,
        diagnostics: list[Diagnostic],
        build: Callable[[int | None], DocumentIndex | None],
    ) -> None:
        self.path = path
        self.text = text
        self.outcome = outcome
        self.diagnostics = diagnostics
        self._build = build

    @cached_property
    def index(self) -> DocumentIndex | None:
        return self._build(None)

    def names_at(self, offset: int) -> list[str]:
        """The names in scope at `offset`, from the index when a feature has built it, else
        from indexing only the agent there (what diagnostics' suggestions need)."""
        index = self.__dict__.get("index") or self._build(offset)
        scope = index.scope_at(offset) if index is not None else None
        return list(scope.visible(offset)) if scope is not None else []

    @cached_property
    def lines(self) -> LineIndex:
        return LineIndex(self.text)


ReadText = Callable[[Path], "str | None"]


class Workspace:
    """Analyses by path. `read_text` gives a file's current text: the open buffer, else disk."""

    def __init__(self, read_text: ReadText) -> None:
        self.read_text = read_text
        # Indexes of imported files, by path, with the text they were built from.
        self._imported: dict[str, tuple[str, DocumentIndex | None]] = {}

    def analyze(self, text: str, path: str | None) -> Analysis:
        outcome = parse_with_recovery(text, path)
        diagnostics: list[Diagnostic] = []
        program = outcome.program

        def build(around: int | None) -> DocumentIndex | None:
            if program is None:
                return None
            return build_index(
                program, text, path, lambda decl: self.imported_index(decl, path, []), around
            )

        if outcome.error is not None:
            diagnostics.append(_parse_diagnostic(outcome.error, text, path))
        elif outcome.program is not None:
            diagnostics.extend(self.check(outcome.program, path))
        return Analysis(path, text, outcome, diagnostics, build)

    def check(self, program: ast.Program, path: str | None) -> list[Diagnostic]:
        """The checker's findings in this file, on the program merged with its agent imports
        (as `agentscript check` loads it), or on the file alone when an import cannot load."""
        try:
            merged = merge_imports(program, source_path=path)
        except (LoadError, ParseError) as problem:
            return [_import_diagnostic(program, str(problem), path), *check_program(program)]
        return [
            diagnostic
            for diagnostic in check_program(merged)
            if diagnostic.path is None or diagnostic.path == path
        ]

    def imported_index(
        self, decl: ast.ImportDecl, importer: str | None, stack: list[str]
    ) -> DocumentIndex | None:
        """The index of the file an `import agent` names, or None when it cannot be read."""
        if decl.resource_kind != AGENT or importer is None:
            return None
        try:
            target = resolve_import_path(decl.uri, decl.resource_kind, Path(importer).parent)
        except LoadError:
            return None
        key = str(target)
        if key in stack or key == importer:
            return None
        return self.file_index(key, [*stack, importer])

    def file_index(self, key: str, stack: list[str]) -> DocumentIndex | None:
        """The index of the file at path `key` as it is now (buffer or disk), cached by text."""
        text = self.read_text(Path(key))
        if text is None:
            return None
        cached = self._imported.get(key)
        if cached is not None and cached[0] == text:
            return cached[1]
        outcome = parse_with_recovery(text, key)
        index = None
        if outcome.program is not None:
            index = build_index(
                outcome.program,
                text,
                key,
                lambda inner: self.imported_index(inner, key, stack),
            )
        self._imported[key] = (text, index)
        return index


def _parse_diagnostic(error: ParseError, text: str, path: str | None) -> Diagnostic:
    """A parse error as a diagnostic over the token it stopped at."""
    source_map = SourceMap(text)
    # The parser counts columns in UTF-16 units, as LSP does.
    start = LineIndex(text).offset(
        types.Position(line=error.position.line - 1, character=error.position.column - 1)
    )
    end = start
    while end < len(text) and not text[end].isspace() and (end == start or text[end].isalnum()):
        end += 1
    return Diagnostic(
        PARSE_ERROR, error.bare_message, SourceRange(source_map, start, max(end, start)), path=path
    )


def _import_diagnostic(program: ast.Program, message: str, path: str | None) -> Diagnostic:
    """A failed import, on the import it names (the first agent import when none is named)."""
    named = set(_QUOTED.findall(message))
    agent_imports = [decl for decl in program.imports if decl.resource_kind == AGENT]
    where = next((decl for decl in agent_imports if decl.name in named), None)
    if where is None:
        where = agent_imports[0] if agent_imports else None
    location = where.range if where is not None else program.range
    return Diagnostic(IMPORT_ERROR, message, location, path=path)
