"""A damaged journal (a shipped or edited `.agentscript/runs.db`) gives one clear error naming
the run, the column and what it holds; never a traceback."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from agentscript.cli.main import main

ROOT = Path(__file__).resolve().parents[2]

DAMAGE = {
    "started_at": ("UPDATE runs SET started_at = 'yesterday'", "started_at is 'yesterday'"),
    "heartbeat_at": (
        "UPDATE runs SET heartbeat_at = 'x', status = 'running'",
        "heartbeat_at is 'x', not a number",
    ),
    "usage_json": ("UPDATE runs SET usage_json = '{'", "usage_json is '{', not JSON"),
    "events": ("UPDATE runs SET events = 'many'", "events is 'many', not a number"),
    "status": ("UPDATE runs SET status = 'weird'", "status is 'weird', not one of running"),
    "data_json": ("UPDATE entries SET data_json = '[['", "data_json is '[[', not the data"),
    "at": ("UPDATE entries SET at = 'noon'", "at is 'noon', not a number"),
}
DAMAGE_TO_ENTRIES = frozenset({"data_json", "at"})
# What reads a run's entries (`runs trace` reads the task graph's copy of the trace).
READ_ENTRIES = [["runs", "show", "last"], ["run", "hello.as", "--replay", "last"]]
COMMANDS = [
    ["runs", "show", "last"],
    ["runs", "trace", "last"],
    ["run", "hello.as", "--replay", "last"],
]


@pytest.fixture(scope="module")
def journaled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("journaled")
    for name in ("hello.as", "hello.responses.json"):
        shutil.copy(ROOT / "examples" / name, folder / name)
    code = main(
        [
            "run", str(folder / "hello.as"), "--mock", str(folder / "hello.responses.json"),
            "--input", json.dumps({"name": "Ada"}), "--quiet", "--workspace", str(folder),
        ]
    )  # fmt: skip
    assert code == 0
    return folder


@pytest.mark.parametrize("column", sorted(DAMAGE))
def test_a_damaged_row_is_one_clear_error(
    column: str,
    journaled: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(journaled, folder)
    statement, said = DAMAGE[column]
    with sqlite3.connect(folder / ".agentscript" / "runs.db") as journal:
        journal.execute(statement)
    monkeypatch.chdir(folder)
    capsys.readouterr()
    # Damage to the runs table stops every command; to a run's entries, those that read them.
    reads_the_damage = (
        READ_ENTRIES if column in DAMAGE_TO_ENTRIES else [["runs", "list"], *COMMANDS]
    )
    for command in reads_the_damage:
        code = main(command)
        err = capsys.readouterr().err
        assert code != 0, command
        assert "Traceback" not in err
        assert "in the journal is damaged" in err and said in err, (command, err)
