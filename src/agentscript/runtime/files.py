"""`import file` resources: read once when a run starts, a string or (for .json) parsed JSON.

Relative paths resolve against the directory of the file that wrote the import, else the current
directory. The file is read through the run's FileImports port (the workspace jail: regular
files inside the workspace only, at most MAX_FILE_IMPORT_BYTES); a run given none reads no file.
A file that cannot be read or parsed fails the run with the import's location.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from agentscript.lang import ast
from agentscript.runtime.errors import ExecutionError, LoadError
from agentscript.runtime.jsjson import parse

if TYPE_CHECKING:
    from agentscript.runtime.ports import FileImports

# File imports become prompt context; anything larger is almost certainly a mistake.
MAX_FILE_IMPORT_BYTES = 16 * 1024 * 1024


def resolve_import_path(uri: str, kind: str, base: Path | None) -> Path:
    """The absolute path a `file` or `agent` import names: a `file://` URL, an absolute path,
    or a path relative to `base` (the importing file's directory)."""
    is_url = uri.startswith("file://")
    path = Path(unquote(uri[len("file://") :])) if is_url else Path(uri)
    if path.is_absolute():
        return path
    if base is None:
        raise LoadError(f"sourcePath is required to resolve relative {kind} import '{uri}'")
    return (base / path).resolve()


def load_file_import(
    decl: ast.ImportDecl, program_path: str | None, files: FileImports | None
) -> Any:
    source = decl.source_path or program_path
    where = decl.range.start
    base = Path(source).parent if source else Path.cwd()
    path = resolve_import_path(decl.uri, "file", base)
    label = f"Cannot read file import '{decl.name}' from {os.fspath(path)}"
    if files is None:
        raise ExecutionError(
            f"{label}: this run reads no files (it has no workspace)", where, source
        )
    try:
        text = files.read_file(path, MAX_FILE_IMPORT_BYTES).decode("utf-8")
    except ExecutionError as problem:
        raise ExecutionError(f"{label}: {problem.bare_message}", where, source) from None
    except OSError as problem:
        reason = problem.strerror or type(problem).__name__
        raise ExecutionError(f"{label}: {reason}", where, source) from None
    except UnicodeDecodeError:
        raise ExecutionError(
            f"File import '{decl.name}' is not UTF-8 text: {path}", where, source
        ) from None
    if path.suffix.lower() != ".json":
        return text
    try:
        return parse(text)
    except ValueError as problem:
        raise ExecutionError(
            f"File import '{decl.name}' is not valid JSON ({path}): {problem}", where, source
        ) from None
