"""Format program files in place (`agentscript fmt`), or only say which would change.

A file is replaced atomically (a temporary file beside it, then a rename), keeping its mode, so
an interrupted run leaves either the old text or the new one, never half of each.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from agentscript.lang.source_formatter import format_source
from agentscript.runtime.loader import read_source


@dataclass(frozen=True, slots=True)
class FormatOutcome:
    path: Path
    changed: bool


def format_file(path: Path, write: bool) -> FormatOutcome:
    """Format one file. Raises LoadError (unreadable), ParseError, or FormatRefused."""
    source = read_source(path)
    formatted = format_source(source, str(path))
    changed = formatted != source
    if changed and write:
        _replace(path, formatted)
    return FormatOutcome(path, changed)


def _replace(path: Path, text: str) -> None:
    mode = path.stat().st_mode & 0o7777
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
