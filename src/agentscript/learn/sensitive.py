"""Summaries of run data that are safe to keep in long-lived memory (graph nodes, traces).

The journal keeps what the trace showed, already redacted. What outlives it in the task graph
and execution traces is summarised further: values under names that look like secrets and
strings that look like tokens or keys become "[secret]", passwords in URLs become ***, and
paths outside the workspace become an opaque tag. Summaries never restore anything redacted.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path, PurePosixPath
from typing import Any

from agentscript.providers.tools.env import looks_like_secret_name

SECRET = "[secret]"
# Long strings are cut to this many characters in summaries, lists and objects to this many
# items, nesting to this depth: a summary stays small whatever a tool returned.
PREVIEW = 200
MAX_ITEMS = 20
MAX_DEPTH = 6
# Text is searched for secrets this far past the cut, so a token the cut splits is still found.
_LOOK_PAST_CUT = 512

# Tokens with a recognisable shape (OpenAI, Anthropic, GitHub, Slack, AWS, Google, JWT, PEM
# private keys, bearer headers), then any long word that mixes upper case, lower case and
# digits, as generated keys do (hex digests, all lower case, are left alone).
_TOKEN = re.compile(
    r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
    r"|\bAIza[0-9A-Za-z_-]{30,}"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----(?:.|\n)*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
    r"|\b[Bb]earer\s+[A-Za-z0-9._~+/-]{12,}=*"
    r"|(?<![A-Za-z0-9_+/=-])(?=[A-Za-z0-9_+/=-]*[A-Z])(?=[A-Za-z0-9_+/=-]*[a-z])"
    r"(?=[A-Za-z0-9_+/=-]*[0-9])[A-Za-z0-9_+/=-]{32,}"
)
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)([^@\s/]+)@")
# An absolute path of two or more parts inside text, not preceded by a word character, `:`,
# `/`, `.`, `~` or `-` (so URLs, fractions, `and/or` and `</tag>` are left alone).
_EMBEDDED_PATH = re.compile(r"(?<![\w:/.~-])(?:~/|/)(?:[^\s/'\"`,;()<>]+/)+[^\s/'\"`,;()<>]+")
_WINDOWS_PATH = re.compile(r"^[A-Za-z]:[\\/]")


def summarise(value: Any, workspace: str | Path | None, preview: int = PREVIEW) -> Any:
    """A copy of JSON data fit for long-lived memory: secrets hidden, outside paths tagged,
    strings cut to `preview` characters."""
    root = Path(workspace) if workspace is not None else None
    return _summarise(value, root, preview)


def summarise_text(text: str, workspace: str | Path | None, preview: int = PREVIEW) -> str:
    """One string summarised the same way (for labels and error messages)."""
    return _text(text, Path(workspace) if workspace is not None else None, preview)


def summarise_path(path: str, workspace: str | Path | None) -> str:
    """A path as memory keeps it: relative (POSIX form) when inside the workspace, otherwise
    "[outside workspace #xxxxxxxx]", the same tag for the same path every time."""
    root = Path(workspace) if workspace is not None else None
    return _path(path, root)


def looks_like_secret(text: str) -> bool:
    """Whether a string holds something shaped like a token, key or URL password."""
    return bool(_TOKEN.search(text) or _URL_PASSWORD.search(text))


def _summarise(value: Any, root: Path | None, preview: int, depth: int = 0) -> Any:
    if isinstance(value, str):
        return _text(value, root, preview)
    if not isinstance(value, list | dict):
        return value
    if depth >= MAX_DEPTH:
        return "..."
    if isinstance(value, list):
        items = [_summarise(item, root, preview, depth + 1) for item in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            items.append(f"... {len(value) - MAX_ITEMS} more")
        return items
    summary: dict[str, Any] = {}
    for index, (key, item) in enumerate(value.items()):
        if index == MAX_ITEMS:
            summary["..."] = f"{len(value) - MAX_ITEMS} more"
            break
        secret = isinstance(key, str) and looks_like_secret_name(key) and item is not None
        summary[key] = SECRET if secret else _summarise(item, root, preview, depth + 1)
    return summary


def _text(text: str, root: Path | None, preview: int) -> str:
    # Nothing shorter than the shortest token shape, without a path or URL mark, needs a look.
    if len(text) < 15 and not any(mark in text for mark in "/:\\") and not text.startswith(".."):
        return text
    text = text[: preview + _LOOK_PAST_CUT]
    text = _TOKEN.sub(SECRET, text)
    text = _URL_PASSWORD.sub(r"\1***@", text)
    if _looks_like_path(text):
        text = _path(text, root)
    else:
        text = _EMBEDDED_PATH.sub(lambda found: _path(found.group(0), root), text)
    return _cut(text, preview)


def _looks_like_path(text: str) -> bool:
    if not text or "\n" in text or len(text) > 4096:
        return False
    return text.startswith(("/", "~/", "..")) or bool(_WINDOWS_PATH.match(text))


def _path(path: str, root: Path | None) -> str:
    if _WINDOWS_PATH.match(path) or path.startswith("~"):
        return _tag(path)
    candidate = PurePosixPath(path)
    if candidate.is_absolute():
        if root is not None and _inside(candidate, root):
            relative = PurePosixPath(*candidate.parts[len(PurePosixPath(root).parts) :])
            return str(relative) if relative.parts else "."
        return _tag(path)
    if ".." in candidate.parts:
        return _tag(path)
    return str(candidate)


def _inside(path: PurePosixPath, root: Path) -> bool:
    if ".." in path.parts:
        return False
    base = PurePosixPath(root.as_posix())
    return path == base or base in path.parents


def _tag(path: str) -> str:
    return f"[outside workspace #{hashlib.sha256(path.encode('utf-8')).hexdigest()[:8]}]"


def _cut(text: str, preview: int) -> str:
    return text if len(text) <= preview else text[: preview - 3] + "..."
