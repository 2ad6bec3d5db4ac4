"""`file://workspace`: reads, atomic writes and patches with effect records, and undo."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.app.configuration import RunConfig
from agentscript.providers.tools.effects import INLINE_LIMIT, effects_in_trace, undo_trace
from agentscript.providers.tools.registry import ToolRegistry
from agentscript.providers.tools.workspace import Workspace
from agentscript.runtime.errors import ExecutionError
from tools_support import call, make_tools

FILE = "file://workspace"


@pytest.fixture
def tools(tmp_path: Path) -> ToolRegistry:
    (tmp_path / "notes.txt").write_text("alpha beta")
    return make_tools(tmp_path)


def test_read_and_list_return_the_original_shapes(tmp_path: Path, tools: ToolRegistry) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("b")
    (tmp_path / "sub" / "a.txt").write_text("a")
    assert call(tools, FILE, "read", {"path": "notes.txt"}) == "alpha beta"
    assert call(tools, FILE, "list", {"path": "sub"}) == ["a.txt", "b.txt"]


def test_write_creates_parents_and_records_an_effect(tmp_path: Path, tools: ToolRegistry) -> None:
    result = call(
        tools, FILE, "write", {"path": "out/report.md", "content": "# Report"}, name="Disk"
    )
    assert (tmp_path / "out" / "report.md").read_text() == "# Report"
    effect = result["effects"][0]
    assert result["ok"] is True
    assert {
        k: effect[k] for k in ("id", "tool", "action", "path", "undoable", "existed", "previous")
    } == {
        "id": "file-write:out/report.md",
        "tool": "Disk",
        "action": "write",
        "path": "out/report.md",
        "undoable": True,
        "existed": False,
        "previous": None,
    }
    assert effect["workspace"] == os.path.realpath(tmp_path)


def test_write_then_undo_restores_the_previous_text(tmp_path: Path, tools: ToolRegistry) -> None:
    result = call(tools, FILE, "write", {"path": "notes.txt", "content": "changed"})
    assert result["effects"][0]["previous"] == "alpha beta"
    report = call(tools, FILE, "undo", result["effects"])
    assert report["ok"] is True
    assert (tmp_path / "notes.txt").read_text() == "alpha beta"


def test_undo_of_a_created_file_deletes_it(tmp_path: Path, tools: ToolRegistry) -> None:
    result = call(tools, FILE, "write", {"path": "new.txt", "content": "fresh"})
    call(tools, FILE, "undo", result["effects"])
    assert not (tmp_path / "new.txt").exists()


def test_patch_replaces_the_first_occurrence_and_undo_reverts_it(
    tmp_path: Path, tools: ToolRegistry
) -> None:
    (tmp_path / "code.py").write_text("x = 1\nx = 1\n")
    result = call(tools, FILE, "patch", {"path": "code.py", "search": "x = 1", "replace": "x = 2"})
    assert (tmp_path / "code.py").read_text() == "x = 2\nx = 1\n"
    assert result["effects"][0]["id"] == "file-patch:code.py"
    call(tools, FILE, "undo", result["effects"])
    assert (tmp_path / "code.py").read_text() == "x = 1\nx = 1\n"


def test_patch_without_a_match_changes_nothing(tmp_path: Path, tools: ToolRegistry) -> None:
    result = call(
        tools, FILE, "patch", {"path": "notes.txt", "search": "gamma", "replace": "delta"}
    )
    assert result == {"ok": False, "error": "patch search text not found", "effects": []}
    assert (tmp_path / "notes.txt").read_text() == "alpha beta"


def test_undo_runs_newest_first(tmp_path: Path, tools: ToolRegistry) -> None:
    first = call(tools, FILE, "write", {"path": "notes.txt", "content": "one"})
    second = call(tools, FILE, "write", {"path": "notes.txt", "content": "two"})
    report = call(tools, FILE, "undo", first["effects"] + second["effects"])
    assert report["ok"] is True
    assert (tmp_path / "notes.txt").read_text() == "alpha beta"


def test_undo_reports_a_conflict_instead_of_overwriting(
    tmp_path: Path, tools: ToolRegistry
) -> None:
    result = call(tools, FILE, "write", {"path": "notes.txt", "content": "ours"})
    (tmp_path / "notes.txt").write_text("someone else's edit")
    report = call(tools, FILE, "undo", result["effects"])
    assert report["ok"] is False
    assert report["conflicts"][0]["path"] == "notes.txt"
    assert report["conflicts"][0]["reason"] == "the file changed since the effect"
    assert (tmp_path / "notes.txt").read_text() == "someone else's edit"


def test_large_or_binary_previous_content_goes_to_the_side_store(
    tmp_path: Path, tools: ToolRegistry
) -> None:
    big = "z" * (INLINE_LIMIT + 10)
    (tmp_path / "big.txt").write_text(big)
    (tmp_path / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
    big_effect = call(tools, FILE, "write", {"path": "big.txt", "content": "small"})["effects"][0]
    blob_effect = call(tools, FILE, "write", {"path": "blob.bin", "content": "text"})["effects"][0]
    assert big_effect["previous"] is None
    assert big_effect["previous_ref"].startswith("sha256:")
    stored = tmp_path / ".agentscript" / "effects" / big_effect["previous_ref"].split(":")[1]
    assert stored.read_text() == big
    call(tools, FILE, "undo", [big_effect, blob_effect])
    assert (tmp_path / "big.txt").read_text() == big
    assert (tmp_path / "blob.bin").read_bytes() == b"\xff\xfe\x00binary"


@pytest.mark.parametrize(
    ("method", "argument", "message"),
    [
        ("read", "notes.txt", "File.read expects one json object argument"),
        ("read", {}, "File.read.path is required"),
        ("write", {"path": "a.txt"}, "File.write.content is required"),
        ("write", {"path": "a.txt", "content": ""}, "File.write.content is required"),
        ("patch", {"path": "notes.txt", "search": "a"}, "File.patch.replace is required"),
        ("undo", {"effects": []}, "File.undo expects a list of effects"),
        (
            "delete",
            {"path": "notes.txt"},
            "Unsupported file method 'delete'. Supported: read, list, write, patch, undo",
        ),
        ("read", {"path": "missing.txt"}, "File not found: missing.txt"),
    ],
)
def test_bad_calls_give_the_original_messages(
    tools: ToolRegistry, method: str, argument: Any, message: str
) -> None:
    with pytest.raises(ExecutionError) as caught:
        call(tools, FILE, method, argument)
    assert str(caught.value) == message


def test_a_failed_write_leaves_no_partial_file(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path, max_file_bytes=10)
    (tmp_path / "keep.txt").write_text("original")
    with pytest.raises(ExecutionError):
        workspace.write_text("keep.txt", "far too long for the cap")
    assert (tmp_path / "keep.txt").read_text() == "original"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


PROGRAM = """
import tool File from "file://workspace"
import tool Files from "file://workspace"

agent Editor {
  main func() {
    first = File.write({ path: "draft.md", content: "v1" })
    second = Files.patch({ path: "draft.md", search: "v1", replace: "v2" })
    return { first: first.effects[0].id, second: second.effects[0].id }
  }
}
"""


def test_effects_reach_the_trace_and_the_cli_undo_reverts_them(tmp_path: Path) -> None:
    program_path = tmp_path / "edit.as"
    program_path.write_text(PROGRAM)
    result = agentscript.run(
        agentscript.load(program_path), {}, RunConfig(model="mock", tools=make_tools(tmp_path))
    )
    assert result.value == {"first": "file-write:draft.md", "second": "file-patch:draft.md"}
    tool_events = [event["data"] for event in result.trace if event["kind"] == "tool"]
    assert [event["scheme"] for event in tool_events] == ["file", "file"]
    assert tool_events[1]["effects"][0]["previous"] == "v1"
    trace = json.loads(json.dumps(result.trace))
    assert [effect["id"] for effect in effects_in_trace(trace)] == [
        "file-write:draft.md",
        "file-patch:draft.md",
    ]
    preview = undo_trace(trace, tmp_path, dry_run=True)
    assert [item["action"] for item in preview["undone"]] == ["restore", "delete"]
    assert (tmp_path / "draft.md").read_text() == "v2"
    report = undo_trace(trace, tmp_path)
    assert report["ok"] is True
    assert not (tmp_path / "draft.md").exists()


def test_lone_surrogates_are_refused_by_name_not_by_a_codec(
    tmp_path: Path, tools: ToolRegistry
) -> None:
    """Issue 13, finding 12: `"\\ud800"` in a model's or a program's JSON has no UTF-8 form."""
    with pytest.raises(ExecutionError) as raised:
        call(tools, "file://workspace", "write", {"path": "a.txt", "content": "x\ud800"})
    assert str(raised.value) == (
        "File.write.content is not valid Unicode: a lone surrogate (U+D800) at character 2"
    )
    with pytest.raises(ExecutionError, match=r"Path is not a valid file name: 'n\\ud800'"):
        call(tools, "file://workspace", "write", {"path": "n\ud800", "content": "x"})
    with pytest.raises(ExecutionError, match=r"File\.patch\.replace is not valid Unicode"):
        call(
            tools,
            "file://workspace",
            "patch",
            {"path": "notes.txt", "search": "a", "replace": "\udfff"},
        )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt"]
    assert (tmp_path / "notes.txt").read_text() == "alpha beta"


def test_an_effect_record_holds_a_keyed_digest_never_a_plain_hash_of_what_was_written(
    tmp_path: Path, tools: ToolRegistry
) -> None:
    import hashlib

    secret = "hunter2-deploy-token"
    result = call(tools, FILE, "write", {"path": "token.txt", "content": secret}, name="Disk")
    (effect,) = result["effects"]
    # A plain hash would let anyone holding the record (a trace, a journal, a page) test
    # guesses of what the run wrote.
    plain = hashlib.sha256(secret.encode()).hexdigest()
    assert plain not in json.dumps(effect) and "after_sha256" not in effect
    assert effect["after_digest"].startswith("hmac-sha256:")
    # Still enough for undo to tell the file changed since.
    (tmp_path / "token.txt").write_text("changed by hand")
    undone = call(tools, FILE, "undo", [effect])
    assert json.dumps(undone).count("conflict") >= 1
    assert (tmp_path / "token.txt").read_text() == "changed by hand"


def test_writers_making_the_same_new_folder_at_once_all_succeed(tmp_path: Path) -> None:
    # Concurrent runs (an eval, a queue worker) writing into one folder that does not exist
    # yet: each may find it missing and make it; the ones that lose that race write anyway,
    # and only the one that made it records it for undo to remove.
    workspace = Workspace(tmp_path)
    for round in range(10):  # the race is lost now and then: give it many chances
        created = _sixteen_writers_at_once(workspace, f"r{round}/deep")
        written = sorted(p.name for p in (tmp_path / f"r{round}" / "deep").iterdir())
        assert written == sorted(f"{n}.txt" for n in range(16))
        made = [path for paths in created for path in paths]
        assert sorted(made) == [f"r{round}", f"r{round}/deep"]  # each folder recorded once


def _sixteen_writers_at_once(workspace: Workspace, folder: str) -> list[list[str]]:
    """What each of 16 threads, let go together, reports it created writing into `folder`."""
    import threading

    start = threading.Barrier(16)
    created: list[list[str]] = []

    def write(number: int) -> None:
        start.wait()
        created.append(workspace.write_bytes(f"{folder}/{number}.txt", b"x"))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return created
