"""Workspace ids and the routing table of reads and writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentscript.memory import MemoryServiceError, route, workspace_id
from agentscript.memory.scopes import ScopePlan, parse_scope


def test_workspace_ids_are_absolute_without_trailing_slash(tmp_path: Path) -> None:
    assert workspace_id(f"{tmp_path}/") == os.path.realpath(tmp_path)
    assert workspace_id(tmp_path / "a" / ".." / "b") == f"{os.path.realpath(tmp_path)}/b"
    assert workspace_id("/") == "/"


def test_relative_paths_resolve_against_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert workspace_id("project") == f"{os.path.realpath(tmp_path)}/project"


def test_symlinks_to_one_directory_are_one_scope(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert workspace_id(tmp_path / "link") == workspace_id(real)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("C:\\Work\\App\\", "c:/Work/App"),
        ("D:/x/../y", "d:/y"),
        ("E:\\", "e:/"),
    ],
)
def test_windows_paths_keep_their_drive_in_lowercase(path: str, expected: str) -> None:
    assert workspace_id(path) == expected


def test_explicit_scopes_are_global_or_absolute_paths(tmp_path: Path) -> None:
    assert parse_scope("global") == "global"
    assert parse_scope(str(tmp_path)) == os.path.realpath(tmp_path)
    for bad in ("", "project", "../x", 3, None, "/a\x00b"):
        with pytest.raises(MemoryServiceError) as error:
            parse_scope(bad)
        assert error.value.field == "scope"


@pytest.mark.parametrize(
    ("mode", "current", "explicit", "plan"),
    [
        ("workspace", "/w", None, ScopePlan(("/w", "global"), "/w")),
        ("global-first", "/w", None, ScopePlan(("global", "/w"), "/w", first="global")),
        ("global", "/w", None, ScopePlan(("global",), "global")),
        ("workspace", None, None, ScopePlan(("global",), "global")),
        ("global-first", None, None, ScopePlan(("global",), "global")),
        ("workspace", "/w", "global", ScopePlan(("global",), "global")),
        ("global", "/w", "global", ScopePlan(("global",), "global")),
        ("workspace", "/w", "/other", ScopePlan(("/other", "global"), "/other")),
        ("global", None, "/other", ScopePlan(("/other", "global"), "/other")),
    ],
)
def test_routing_table(
    mode: str, current: str | None, explicit: str | None, plan: ScopePlan
) -> None:
    assert route(mode, current, explicit) == plan  # type: ignore[arg-type]
