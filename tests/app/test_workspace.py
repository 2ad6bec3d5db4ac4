"""The workspace object: each store opened once, on first use, and all closed together; a
workspace that does not exist is refused before anything is created."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscript.app.errors import AppError
from agentscript.app.workspace import Workspace
from agentscript.learn.journal import list_runs


def test_a_missing_workspace_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    missing = tmp_path / "typo"
    with pytest.raises(AppError, match="is not a directory"):
        Workspace(missing)
    assert not missing.exists()


def test_each_store_opens_once_and_closes_with_the_workspace(tmp_path: Path) -> None:
    database = tmp_path / "memory.db"
    with Workspace(tmp_path, database=database) as place:
        journal = place.journal
        memory = place.memory()
        assert place.journal is journal
        assert place.memory() is memory
        assert place.memory(tmp_path) is memory
        assert place.profiles is place.profiles
        assert place.ledger is place.ledger
        memory.remember("The deploy runs on Fridays", kind="knowledge")
        closed: list[str] = []
        memory.on_close.append(lambda: closed.append("memory"))
        assert closed == []
    assert closed == ["memory"]
    assert list_runs(journal) == []
    with Workspace(tmp_path, database=database) as again:
        assert again.memory().recall("deploy")["count"] == 1


def test_nothing_is_opened_that_was_not_asked_for(tmp_path: Path) -> None:
    with Workspace(tmp_path, database=tmp_path / "memory.db"):
        pass
    assert not (tmp_path / ".agentscript").exists()
    assert not (tmp_path / "memory.db").exists()


def test_a_second_scope_gets_its_own_service(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    with Workspace(tmp_path, database=tmp_path / "memory.db") as place:
        assert place.memory(other) is not place.memory()
        assert place.memory(other).workspace != place.memory().workspace
