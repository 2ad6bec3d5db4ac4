"""`agentscript learn list|show|retire|confirm` over lessons learned by real journaled runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from agentscript.cli.app import cli
from agentscript.learn.journal import close_shared_journals
from agentscript.memory.service import MemoryService
from agentscript.memory.tools import call_tool
from experience_support import (
    GUESSED,
    WRITER,
    experiences,
    learned_run,
    make_workspace,
    open_memory,
)


@pytest.fixture(autouse=True)
def _close_journals() -> Iterator[None]:
    """Each test's shared journal is closed after it: the suite does not pile up open files."""
    yield
    close_shared_journals()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


def learn(workspace: Path, database: Path, *args: str) -> Result:
    place = ["--workspace", str(workspace), "--db", str(database)]
    return CliRunner().invoke(cli, ["learn", *args, *place])


def experiences_text(memory: MemoryService) -> str:
    """What a program's `use Memory.experiences(...)` shows."""
    return str(call_tool(memory, "memory_experiences", {"task": ""})["text"])


def handles(output: str) -> dict[str, str]:
    """status → handle, from `learn list`."""
    return {line.split()[1]: line.split()[0].rstrip("!") for line in output.splitlines()}


def test_list_show_confirm_and_retire(workspace: Path, database: Path) -> None:
    learned_run(workspace, database, [GUESSED])
    learned_run(
        workspace, database, [], source=WRITER, name="writer.as", approve="ask",
        ask_user=lambda request: "no",
    )  # fmt: skip

    listed = learn(workspace, database, "list")
    assert listed.exit_code == 0, listed.output
    found = handles(listed.output)
    assert set(found) == {"stored", "candidate"}

    shown = learn(workspace, database, "show", found["stored"])
    assert shown.exit_code == 0, shown.output
    assert "what to do Before File.read, find the file" in shown.output
    assert "tool chain" in shown.output or "event ids" in shown.output

    confirmed = learn(workspace, database, "confirm", found["candidate"])
    assert confirmed.exit_code == 0, confirmed.output
    with open_memory(workspace, database) as memory:
        text = experiences_text(memory)
    first = text.splitlines()[0]
    assert first.startswith("- IMPORTANT: The user refused File.write")
    assert first.endswith("(confidence 0.95, 2 runs)")
    assert learn(workspace, database, "list").output.splitlines()[0].split()[0].endswith("!")

    retired = learn(workspace, database, "retire", found["stored"], "wrong for us")
    assert retired.exit_code == 0, retired.output
    with open_memory(workspace, database) as memory:
        left = [entry["title"] for entry in experiences(memory)]
    assert left == ["The user refuses File.write"]
    assert handles(learn(workspace, database, "list", "--status", "retired").output) == {
        "retired": found["stored"]
    }
    # The same failure again is blocked, never stored again.
    learned_run(workspace, database, [GUESSED])
    with open_memory(workspace, database) as memory:
        assert len(experiences(memory)) == 1


def test_a_handle_that_names_nothing_is_a_clear_error(workspace: Path, database: Path) -> None:
    learned_run(workspace, database, [GUESSED])
    missing = learn(workspace, database, "show", "ffffffff")
    short = learn(workspace, database, "retire", "ab")
    assert missing.exit_code == 1 and "No lesson 'ffffffff'" in missing.output
    assert short.exit_code == 1 and "at least 4 characters" in short.output


def test_learn_alone_still_learns_the_backlog(workspace: Path, database: Path) -> None:
    done = CliRunner().invoke(
        cli, ["learn", "--workspace", str(workspace), "--db", str(database), "--json"]
    )
    assert done.exit_code == 0, done.output
    assert '"learned": []' in done.output


def test_list_json_is_the_typed_result(workspace: Path, database: Path) -> None:
    learned_run(workspace, database, [GUESSED])
    listed = learn(workspace, database, "list", "--json")
    assert listed.exit_code == 0, listed.output
    data = json.loads(listed.output)
    (lesson,) = data["lessons"]
    assert (lesson["status"], lesson["kind"]) == ("stored", "failure")
    assert lesson["evidence"]["success"] is False
    assert data["problems"] == []


def test_listing_an_empty_workspace_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("AGENTSCRIPT_MEMORY_DB", str(tmp_path / "never.db"))
    listed = CliRunner().invoke(cli, ["learn", "list", "--workspace", str(empty)])
    shown = CliRunner().invoke(cli, ["learn", "show", "abcd", "--workspace", str(empty)])
    assert (listed.exit_code, listed.output.strip()) == (0, "(no lessons)")
    assert shown.exit_code == 1 and "no run was journaled here yet" in shown.output
    assert list(empty.iterdir()) == [] and not (tmp_path / "never.db").exists()
