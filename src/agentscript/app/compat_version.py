"""Which release of the original a program is run as: 0.1.0 unless its workspace says newer.

The original has no version directive of its own. Its users already say which release they
write for in the workspace's `package.json` (`"@rong/agentscript": "^0.1.22"` under
dependencies or devDependencies), so that declaration is the rule here too: a workspace that
names a release after 0.1.0 gets that release's behaviour (the newer tool result shapes); every
other program keeps 0.1.0's, so programs and tests written for 0.1.0 run as they always did.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

BASELINE = "0.1.0"
PACKAGE = "@rong/agentscript"
_SECTIONS = ("dependencies", "devDependencies", "peerDependencies")
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def declared_version(workspace: Path) -> str:
    """The release the workspace's package.json names for the original (its first X.Y.Z, so
    `^0.1.22` → `0.1.22`); BASELINE when there is no such file, entry or readable version."""
    try:
        manifest = json.loads((workspace / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return BASELINE
    if not isinstance(manifest, dict):
        return BASELINE
    for section in _SECTIONS:
        entries = manifest.get(section)
        spec = entries.get(PACKAGE) if isinstance(entries, dict) else None
        if isinstance(spec, str) and (found := _VERSION.search(spec)):
            return found.group(0)
    return BASELINE


def is_newer(version: str) -> bool:
    """Whether `version` is a release after 0.1.0 (an unreadable one counts as 0.1.0)."""
    found = _VERSION.search(version)
    if found is None:
        return False
    return tuple(int(part) for part in found.groups()) > (0, 1, 0)


def runs_as_newer(compat: str | None, workspace: Path) -> bool:
    """Whether a program runs as a release after 0.1.0: `compat` when given (RunConfig.compat),
    else the release `workspace` declares."""
    return is_newer(compat if compat is not None else declared_version(workspace))
