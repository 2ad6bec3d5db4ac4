"""The source line under a diagnostic, with a caret under its column, for a person at a
terminal (pipes and files keep the one-line messages the original printed)."""

from __future__ import annotations

from pathlib import Path


def excerpt(path: str | None, line: int, column: int, color: bool = True) -> list[str]:
    """`  6 | return inptu.name` (highlighted by the Pygments lexer when `color`) and a caret
    line under `column`; nothing when the file or the line cannot be read."""
    if path is None or line < 1:
        return []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    if line > len(lines):
        return []
    source = lines[line - 1]
    text = source.expandtabs(4)
    gutter = f"{line:>4} | "
    under = len(source[: max(column - 1, 0)].expandtabs(4))
    caret = " " * (len(gutter) - 2) + "| " + " " * under + "^"
    if color:
        from agentscript.cli.highlight import highlight

        text = highlight(text)
    return [gutter + text, caret]
