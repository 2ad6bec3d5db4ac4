"""`agentscript memory show|export|import|repair` on real stores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentscript.cli.main import main

ENVELOPES = [
    {
        "id": "a",
        "created_at": "2026-01-01T00:00:00.000Z",
        "updated_at": "2026-01-01T00:00:00.000Z",
        "record": {"kind": "lesson", "text": "Use fixtures"},
    },
    {
        "id": "b",
        "created_at": "2026-01-02T00:00:00.000Z",
        "updated_at": "2026-01-02T00:00:00.000Z",
        "record": {"kind": "note", "text": "Ünïcode TEXT"},
    },
]


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def export_file(tmp_path: Path) -> Path:
    path = tmp_path / "export.jsonl"
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in ENVELOPES))
    return path


def test_import_keeps_ids_and_skips_duplicates_then_show_and_export(
    tmp_path: Path,
    export_file: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    uri = "sqlite://store.db#team"
    assert cli(capsys, "memory", "import", uri, str(export_file))[2] == "added 2, skipped 0\n"
    assert cli(capsys, "memory", "import", uri, str(export_file))[2] == "added 0, skipped 2\n"
    code, out, _ = cli(capsys, "memory", "show", uri, "--text", "ÜNÏ")
    assert code == 0
    assert [e["id"] for e in json.loads(out)] == ["b"]
    code, out, _ = cli(capsys, "memory", "show", uri, "--kind", "lesson")
    assert [e["id"] for e in json.loads(out)] == ["a"]
    code, out, _ = cli(capsys, "memory", "export", uri)
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["a", "b"]
    code, out, _ = cli(capsys, "memory", "show", "sqlite://store.db#other")
    assert json.loads(out) == []


def test_a_torn_line_is_reported_then_repaired(
    tmp_path: Path, export_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with export_file.open("a") as handle:
        handle.write('{"id": "c", "crea')
    code, _, err = cli(capsys, "memory", "show", f"file://{export_file}")
    assert code == 1
    assert f"Invalid memory JSONL at {export_file}:3" in err
    code, _, err = cli(capsys, "memory", "repair", str(export_file))
    assert code == 0
    assert "kept 2 records, moved line(s) 3" in err
    moved = json.loads((tmp_path / "export.jsonl.corrupt").read_text())
    assert (moved["line"], moved["text"]) == (3, '{"id": "c", "crea')
    code, out, _ = cli(capsys, "memory", "show", f"file://{export_file}")
    assert [e["id"] for e in json.loads(out)] == ["b", "a"]


def test_bad_import_input_is_rejected_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(ENVELOPES[0]) + "\n{oops\n")
    code, _, err = cli(capsys, "memory", "import", "sqlite://store.db", str(bad))
    assert code == 1
    assert f"Invalid memory JSONL at {bad}:2" in err
    code, out, _ = cli(capsys, "memory", "show", "sqlite://store.db")
    assert json.loads(out) == []


def test_unknown_scheme_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "memory", "show", "redis://localhost/0")
    assert code == 1
    assert "Unsupported memory URI scheme 'redis'" in err
