"""`agentscript undo` acts in one workspace only, whatever a (possibly forged) trace says.

Issue 13, finding 2: a trace is a file anyone can write. Its records say what to revert, never
where: the workspace is `--workspace` or the current directory; a record naming another one is
refused and listed; a record without `after_sha256` is refused unless `--force`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from agentscript.cli.main import main


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def trace_of(tmp_path: Path, *effects: dict[str, Any]) -> Path:
    path = tmp_path / "forged.json"
    event = {"kind": "tool", "data": {"tool": "File", "method": "write", "effects": list(effects)}}
    path.write_text(json.dumps([event]))
    return path


def record(path: str, workspace: Path | None, **fields: Any) -> dict[str, Any]:
    effect: dict[str, Any] = {
        "id": f"file-write:{path}",
        "tool": "File",
        "action": "write",
        "path": path,
        "undoable": True,
        "existed": False,
        "previous": None,
        **fields,
    }
    if workspace is not None:
        effect["workspace"] = str(workspace)
    return effect


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace to undo in, and a victim directory outside it with a file in it."""
    workspace = tmp_path / "workspace"
    victim = tmp_path / "victim"
    workspace.mkdir()
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    return workspace, victim


def test_a_record_of_another_workspace_is_refused_and_listed(
    places: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace, victim = places
    content = (victim / "precious.txt").read_bytes()
    forged = record("precious.txt", victim, after_sha256=hashlib.sha256(content).hexdigest())
    trace = trace_of(tmp_path, forged)
    for mode in ([], ["--dry-run"], ["--force"]):
        code, out, _ = cli(capsys, "undo", str(trace), "--workspace", str(workspace), *mode)
        assert code == 1
        assert out.splitlines() == [
            f"REFUSED precious.txt: the record belongs to another workspace ({victim}) "
            "(left as it is)"
        ]
        assert (victim / "precious.txt").read_text() == "keep me"


def test_without_workspace_the_current_directory_is_the_workspace(
    places: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workspace, victim = places
    forged = record("precious.txt", victim, after_sha256=hashlib.sha256(b"keep me").hexdigest())
    monkeypatch.chdir(workspace)
    code, out, _ = cli(capsys, "undo", str(trace_of(tmp_path, forged)))
    assert code == 1 and out.startswith("REFUSED precious.txt")
    assert (victim / "precious.txt").read_text() == "keep me"


def test_a_record_without_a_content_hash_is_refused_unless_forced(
    places: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace, _ = places
    (workspace / "notes.md").write_text("written by hand, not by the run")
    trace = trace_of(tmp_path, record("notes.md", workspace))
    code, out, _ = cli(capsys, "undo", str(trace), "--workspace", str(workspace))
    assert code == 1
    assert out.splitlines() == [
        "REFUSED notes.md: the record has no after_digest (or after_sha256), so a later "
        "change could not be detected (left as it is)"
    ]
    assert (workspace / "notes.md").exists()
    code, out, _ = cli(capsys, "undo", str(trace), "--workspace", str(workspace), "--force")
    assert (code, out.splitlines()) == (0, ["delete notes.md"])
    assert not (workspace / "notes.md").exists()


def test_a_record_of_this_workspace_named_another_way_is_undone(
    places: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace, _ = places
    (workspace / "made.md").write_text("made by the run")
    alias = tmp_path / "alias"
    alias.symlink_to(workspace)
    made = record(
        "made.md", alias / ".", after_sha256=hashlib.sha256(b"made by the run").hexdigest()
    )
    code, out, _ = cli(capsys, "undo", str(trace_of(tmp_path, made)), "--workspace", str(workspace))
    assert (code, out.splitlines()) == (0, ["delete made.md"])


def test_file_undo_in_a_program_refuses_records_without_a_hash(tmp_path: Path) -> None:
    from tools_support import call, make_tools

    (tmp_path / "notes.md").write_text("not ours")
    report = call(make_tools(tmp_path), "file://workspace", "undo", [record("notes.md", None)])
    assert report["ok"] is False
    assert [item["path"] for item in report["refused"]] == ["notes.md"]
    assert (tmp_path / "notes.md").read_text() == "not ours"
