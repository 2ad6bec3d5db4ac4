"""Effect records of file changes, the side store for large previous contents, and undo.

Every write or patch returns an effect record saying what changed and how to put it back:
`{id, tool, action, path, undoable, existed, previous}` as in the original, plus
`after_digest` (a keyed digest of the content we left: `hmac-sha256:<hex>`, keyed by the
workspace's own random key in `.agentscript/effects/.key`) so that undo can tell when someone
changed the file since. Keyed, because records travel (traces, journals, pages, spans): a plain
hash of what a run wrote would let anyone who holds a record test guesses of a secret the run
wrote to a file. Records made before carry `after_sha256`, which undo still reads;
and `previous_ref` when the previous content was too large to inline and went to the side store
(`.agentscript/effects/<sha256>` in the workspace). Undo runs newest first and reports a
conflict instead of overwriting a file that changed since.

A record is data anyone can write (a saved trace, a model's answer passed to `File.undo`), so
undo trusts none of it: it acts only inside the workspace it was given, refuses a record that
names another workspace, and refuses one with neither `after_digest` nor `after_sha256`
(nothing to tell a changed file by) unless forced.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from agentscript.providers.tools.workspace import Workspace
from agentscript.runtime.errors import ExecutionError

EFFECT_STORE = ".agentscript/effects"
# Previous contents up to this many characters stay inline in the record (and the trace).
INLINE_LIMIT = 16 * 1024
_REF = re.compile(r"^sha256:([0-9a-f]{64})$")
# Undo must restore whatever was there, however large.
_NO_LIMIT = 1 << 40
_FILE_ACTIONS = ("write", "patch")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# Where the workspace's key for effect digests lives, and the prefix of a keyed digest.
_KEY_FILE = f"{EFFECT_STORE}/.key"
_KEYED = "hmac-sha256:"


def keyed_digest(workspace: Workspace, data: bytes) -> str:
    """`data`'s digest under the workspace's key (made on first use, 32 random bytes)."""
    import hmac

    return _KEYED + hmac.new(_workspace_key(workspace), data, hashlib.sha256).hexdigest()


def _workspace_key(workspace: Workspace) -> bytes:
    if workspace.exists(_KEY_FILE):
        key = workspace.read_bytes(_KEY_FILE)
        if len(key) == 32:
            return key
    key = os.urandom(32)
    workspace.write_bytes(_KEY_FILE, key)
    return key


def matches_after(workspace: Workspace, effect: dict[str, Any], current: bytes) -> bool:
    """Whether `current` is the content the record says the effect left."""
    keyed = effect.get("after_digest")
    if isinstance(keyed, str):
        return keyed == keyed_digest(workspace, current)
    return effect.get("after_sha256") == digest(current)


def file_effect(
    workspace: Workspace,
    tool: str,
    action: str,
    path: str,
    existed: bool,
    previous: bytes | None,
    after: bytes,
) -> dict[str, Any]:
    """The record of one write or patch of `path` (workspace-relative). Previous content that
    is large or not UTF-8 text goes to the side store, byte for byte."""
    inline = _inline_text(previous)
    effect: dict[str, Any] = {
        "id": f"file-{action}:{path}",
        "tool": tool,
        "action": action,
        "path": path,
        "undoable": True,
        "existed": existed,
        "previous": inline,
    }
    if previous is not None and inline is None:
        effect["previous_ref"] = keep_previous(workspace, previous)
    effect["after_digest"] = keyed_digest(workspace, after)
    effect["workspace"] = str(workspace.root)
    return effect


def _inline_text(previous: bytes | None) -> str | None:
    if previous is None or len(previous) > INLINE_LIMIT:
        return None
    try:
        return previous.decode("utf-8")
    except UnicodeDecodeError:
        return None


def keep_previous(workspace: Workspace, data: bytes) -> str:
    """Store `data` in the side store (content-addressed) and return its reference."""
    hexdigest = digest(data)
    location = f"{EFFECT_STORE}/{hexdigest}"
    if not workspace.exists(location):
        workspace.write_bytes(location, data)
    return f"sha256:{hexdigest}"


def load_previous(workspace: Workspace, reference: str) -> bytes:
    matched = _REF.match(reference)
    if matched is None:
        raise ExecutionError(f"Invalid previous_ref '{reference}' in effect record")
    data = workspace.read_bytes(f"{EFFECT_STORE}/{matched.group(1)}", limit=_NO_LIMIT)
    if digest(data) != matched.group(1):
        raise ExecutionError(f"Side store entry {reference} does not match its digest")
    return data


def is_file_effect(effect: Any) -> bool:
    """The original's test: an object with a write/patch action, a string path and a boolean
    `undoable`."""
    return (
        isinstance(effect, dict)
        and effect.get("action") in _FILE_ACTIONS
        and isinstance(effect.get("path"), str)
        and isinstance(effect.get("undoable"), bool)
    )


# A dry run's picture of the files it would have changed: path → content (None = deleted).
Overlay = dict[str, bytes | None]


def undo_effects(
    workspace: Workspace,
    effects: list[Any],
    dry_run: bool = False,
    force: bool = False,
) -> dict[str, Any]:
    """Revert file effects newest first. Returns `{ok, undone, conflicts, skipped, refused}`;
    `ok` is false when any effect could not be undone because the file changed since or the
    record was refused (another workspace's, or without a content digest and not `force`d). A dry
    run changes nothing but judges each effect as if the newer ones had been undone."""
    overlay: Overlay = {}
    report: dict[str, Any] = {"undone": [], "conflicts": [], "skipped": [], "refused": []}
    for effect in reversed(effects):
        if not is_file_effect(effect) or not effect["undoable"]:
            report["skipped"].append(
                {"effect": _effect_id(effect), "reason": "not an undoable file effect"}
            )
            continue
        outcome = _undo_one(workspace, effect, dry_run, overlay, force)
        report[_OUTCOMES[outcome["status"]]].append(outcome)
    return {"ok": not report["conflicts"] and not report["refused"], **report}


_OUTCOMES = {
    "undone": "undone",
    "conflict": "conflicts",
    "skipped": "skipped",
    "refused": "refused",
}


def belongs_elsewhere(effect: dict[str, Any], workspace: Workspace) -> bool:
    """Whether the record names a workspace other than `workspace` (compared resolved, so
    `/w/./x` and a symlink to the root are the same place)."""
    recorded = effect.get("workspace")
    if recorded is None:
        return False
    if not isinstance(recorded, str) or "\0" in recorded:
        return True
    return recorded != str(workspace.root) and os.path.realpath(recorded) != str(workspace.root)


def _undo_one(
    workspace: Workspace, effect: dict[str, Any], dry_run: bool, overlay: Overlay, force: bool
) -> dict[str, Any]:
    path: str = effect["path"]
    report: dict[str, Any] = {"effect": effect.get("id"), "path": path}
    if belongs_elsewhere(effect, workspace):
        return {
            **report,
            "status": "refused",
            "reason": f"the record belongs to another workspace ({effect.get('workspace')})",
        }
    checked = isinstance(effect.get("after_digest"), str) or isinstance(
        effect.get("after_sha256"), str
    )
    if not checked and not force:
        return {
            **report,
            "status": "refused",
            "reason": "the record has no after_digest (or after_sha256), so a later change "
            "could not be detected",
        }
    previous: bytes | None = None
    if isinstance(effect.get("previous"), str):
        previous = effect["previous"].encode("utf-8")
    elif isinstance(effect.get("previous_ref"), str):
        previous = load_previous(workspace, effect["previous_ref"])
    delete = previous is None and effect.get("existed") is False
    if previous is None and not delete:
        return {**report, "status": "skipped", "reason": "the record has nothing to restore"}
    key = workspace.relative(path)
    if key in overlay:
        current = overlay[key]
    else:
        current = workspace.read_bytes(path, limit=_NO_LIMIT) if workspace.exists(path) else None
    wanted = None if delete else previous
    if current == wanted:
        return {**report, "status": "skipped", "reason": "already in the recorded previous state"}
    if checked and (current is None or not matches_after(workspace, effect, current)):
        return {**report, "status": "conflict", "reason": "the file changed since the effect"}
    if dry_run:
        overlay[key] = wanted
    elif wanted is None:
        workspace.delete(path)
        created = effect.get("created_dirs")
        for directory in reversed(created if isinstance(created, list) else []):
            if isinstance(directory, str):
                workspace.remove_empty_directory(directory)
    else:
        workspace.write_bytes(path, wanted)
    action = "delete" if wanted is None else "restore"
    return {**report, "status": "undone", "action": action, "dry_run": dry_run}


def _effect_id(effect: Any) -> Any:
    return effect.get("id") if isinstance(effect, dict) else None


def effects_in_trace(trace: list[Any], files_only: bool = True) -> list[dict[str, Any]]:
    """The file effects a run recorded (every effect record unless `files_only`), in
    execution order, nested agent calls included."""
    found: list[dict[str, Any]] = []
    for event in trace:
        if not isinstance(event, dict) or not isinstance(event.get("data"), dict):
            continue
        data = event["data"]
        if event.get("kind") == "tool" and isinstance(data.get("effects"), list):
            found.extend(
                effect
                for effect in data["effects"]
                if is_file_effect(effect) or (not files_only and isinstance(effect, dict))
            )
        elif event.get("kind") == "agent" and isinstance(data.get("trace"), list):
            found.extend(effects_in_trace(data["trace"], files_only))
    return found


def undo_trace(
    trace: list[Any], root: str | Path, dry_run: bool = False, force: bool = False
) -> dict[str, Any]:
    """Revert every file effect of a recorded run, newest first, inside the workspace `root`
    only: the trace says what to revert, never where. Records naming another workspace are
    refused and listed; so are records without a content digest, unless `force`."""
    return undo_effects(Workspace(root), effects_in_trace(trace), dry_run, force=force)
