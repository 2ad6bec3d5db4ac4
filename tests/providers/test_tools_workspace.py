"""The workspace jail: a catalogue of escape attempts, every one refused, and what stays allowed."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentscript.providers.tools.registry import ToolRegistry
from agentscript.providers.tools.workspace import Workspace
from agentscript.runtime.errors import ExecutionError
from tools_support import call, make_tools


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace and a directory outside it holding a secret."""
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    (root / "docs").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET")
    (root / "docs" / "a.md").write_text("hello")
    (root / "notes.txt").write_text("notes")
    return root, outside


@pytest.fixture
def tools(world: tuple[Path, Path]) -> ToolRegistry:
    return make_tools(world[0])


Setup = Callable[[Path, Path], None]


def _none(root: Path, outside: Path) -> None:
    return None


def _symlink(name: str, target: Callable[[Path, Path], str]) -> Setup:
    def setup(root: Path, outside: Path) -> None:
        (root / name).symlink_to(target(root, outside))

    return setup


def _hard_link(root: Path, outside: Path) -> None:
    os.link(outside / "secret.txt", root / "linked.txt")


def _fifo(root: Path, outside: Path) -> None:
    os.mkfifo(root / "pipe")


def _loop(root: Path, outside: Path) -> None:
    (root / "loop_a").symlink_to("loop_b")
    (root / "loop_b").symlink_to("loop_a")


def _chain(root: Path, outside: Path) -> None:
    (root / "hop1").symlink_to("hop2")
    (root / "hop2").symlink_to(str(outside))


READ = ("file://workspace", "read")
WRITE = ("file://workspace", "write")

# (setup, uri, method, arguments): each must be refused with "Path escapes workspace".
ESCAPES: list[tuple[str, Setup, tuple[str, str], dict[str, Any]]] = [
    ("parent", _none, READ, {"path": ".."}),
    ("parent file", _none, READ, {"path": "../outside/secret.txt"}),
    ("climb through a directory", _none, READ, {"path": "docs/../../outside/secret.txt"}),
    ("dot then parent", _none, READ, {"path": "./../outside/secret.txt"}),
    ("deep climb", _none, READ, {"path": "docs/./../.." + "/.." * 40 + "/etc/passwd"}),
    ("absolute", _none, READ, {"path": "/etc/passwd"}),
    ("double slash absolute", _none, READ, {"path": "//etc/passwd"}),
    ("backslash absolute", _none, READ, {"path": "\\etc\\passwd"}),
    ("backslash climb", _none, READ, {"path": "docs\\..\\..\\outside\\secret.txt"}),
    ("drive letter", _none, READ, {"path": "C:\\Windows\\win.ini"}),
    ("nul byte", _none, READ, {"path": "notes.txt\x00../../etc/passwd"}),
    ("symlinked directory", _symlink("out", lambda r, o: str(o)), READ, {"path": "out/secret.txt"}),
    (
        "symlinked file",
        _symlink("s.txt", lambda r, o: str(o / "secret.txt")),
        READ,
        {"path": "s.txt"},
    ),
    (
        "relative symlink up",
        _symlink("up", lambda r, o: ".."),
        READ,
        {"path": "up/outside/secret.txt"},
    ),
    ("symlink to etc", _symlink("etc", lambda r, o: "/etc"), READ, {"path": "etc/passwd"}),
    ("symlink to dev null", _symlink("null", lambda r, o: "/dev/null"), READ, {"path": "null"}),
    ("symlink chain", _chain, READ, {"path": "hop1/secret.txt"}),
    ("symlink loop", _loop, READ, {"path": "loop_a"}),
    ("hard link to an outside file", _hard_link, READ, {"path": "linked.txt"}),
    ("fifo", _fifo, READ, {"path": "pipe"}),
    ("write through a parent climb", _none, WRITE, {"path": "../outside/new.txt", "content": "x"}),
    ("write absolute", _none, WRITE, {"path": "/tmp/agentscript-escape.txt", "content": "x"}),
    (
        "write through a symlinked directory",
        _symlink("out", lambda r, o: str(o)),
        WRITE,
        {"path": "out/new.txt", "content": "x"},
    ),
    (
        "write over a symlinked file",
        _symlink("s.txt", lambda r, o: str(o / "secret.txt")),
        WRITE,
        {"path": "s.txt", "content": "pwned"},
    ),
    ("write over a hard link", _hard_link, WRITE, {"path": "linked.txt", "content": "pwned"}),
    (
        "patch a hard link",
        _hard_link,
        ("file://workspace", "patch"),
        {"path": "linked.txt", "search": "TOP", "replace": "NO"},
    ),
    ("list the parent", _none, ("file://workspace", "list"), {"path": ".."}),
    (
        "list through a symlink",
        _symlink("out", lambda r, o: str(o)),
        ("file://workspace", "list"),
        {"path": "out"},
    ),
    ("find above the root", _none, ("sh://find", "run"), {"path": "../outside"}),
    ("grep the root filesystem", _none, ("sh://grep", "run"), {"path": "/", "pattern": "root"}),
    (
        "sed a symlinked file",
        _symlink("s.txt", lambda r, o: str(o / "secret.txt")),
        ("sh://sed", "run"),
        {"path": "s.txt"},
    ),
    ("sed outside", _none, ("sh://sed", "run"), {"path": "../outside/secret.txt"}),
]


@pytest.mark.parametrize(
    ("setup", "target", "arguments"),
    [pytest.param(setup, target, arguments, id=name) for name, setup, target, arguments in ESCAPES],
)
def test_escape_attempt_is_refused(
    world: tuple[Path, Path],
    tools: ToolRegistry,
    setup: Setup,
    target: tuple[str, str],
    arguments: dict[str, Any],
) -> None:
    root, outside = world
    setup(root, outside)
    with pytest.raises(ExecutionError, match="Path escapes workspace"):
        call(tools, target[0], target[1], arguments)
    assert (outside / "secret.txt").read_text() == "TOP SECRET"
    assert not (outside / "new.txt").exists()


def test_catalogue_has_at_least_thirty_attempts() -> None:
    assert len(ESCAPES) >= 30


def test_undo_cannot_be_pointed_outside(world: tuple[Path, Path], tools: ToolRegistry) -> None:
    _root, outside = world
    forged = {
        "action": "write",
        "path": "../outside/secret.txt",
        "undoable": True,
        "previous": "x",
        "after_sha256": "0" * 64,
    }
    with pytest.raises(ExecutionError, match="Path escapes workspace"):
        call(tools, "file://workspace", "undo", [forged])
    other = {**forged, "path": "notes.txt", "workspace": str(outside)}
    report = call(tools, "file://workspace", "undo", [other])
    assert report["ok"] is False
    assert report["refused"][0]["reason"] == (
        f"the record belongs to another workspace ({outside})"
    )
    traversal = {**forged, "path": "notes.txt", "previous": None, "previous_ref": "sha256:../../x"}
    with pytest.raises(ExecutionError, match="Invalid previous_ref"):
        call(tools, "file://workspace", "undo", [traversal])
    assert (outside / "secret.txt").read_text() == "TOP SECRET"


def test_symlinks_that_stay_inside_are_followed(
    world: tuple[Path, Path], tools: ToolRegistry
) -> None:
    root, _ = world
    (root / "alias").symlink_to("docs")
    (root / "absolute_alias").symlink_to(root / "docs" / "a.md")
    assert call(tools, "file://workspace", "read", {"path": "alias/a.md"}) == "hello"
    assert call(tools, "file://workspace", "read", {"path": "absolute_alias"}) == "hello"


@pytest.mark.parametrize("name", ["%2e%2e/x.txt", "~/x.txt", "．．/x.txt", "docs/../y.txt"])
def test_odd_but_harmless_names_stay_inside(
    world: tuple[Path, Path], tools: ToolRegistry, name: str
) -> None:
    root, _ = world
    call(tools, "file://workspace", "write", {"path": name, "content": "inside"})
    relative = Workspace(root).relative(name)
    assert (root / relative).read_text() == "inside"


def test_files_over_the_size_cap_are_refused(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * 2048)
    workspace = Workspace(tmp_path, max_file_bytes=1024)
    with pytest.raises(ExecutionError, match="larger than the workspace limit of 1024 bytes"):
        workspace.read_text("big.txt")
    with pytest.raises(ExecutionError, match="larger than the workspace limit"):
        workspace.write_text("new.txt", "y" * 2000)
    assert not (tmp_path / "new.txt").exists()
