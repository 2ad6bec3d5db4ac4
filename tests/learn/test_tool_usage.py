"""The tool links learned runs strengthen are read back when experiences are recalled."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentscript.app.memory_service import memory_tools
from agentscript.learn.journal import close_shared_journals, journal_path
from agentscript.learn.tool_usage import JournalToolUsage
from experience_support import FOUND, learned_run, make_workspace


@pytest.fixture(autouse=True)
def _close_journals() -> Iterator[None]:
    yield
    close_shared_journals()


def test_runs_strengthen_the_links_recall_reads(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    database = tmp_path / "memory.db"
    usage = JournalToolUsage(journal_path(workspace))
    assert usage.strength("find.run") == 0.0  # no journal yet: none is created
    assert not journal_path(workspace).exists()

    learned_run(workspace, database, [FOUND, {"total": 3}])
    once = usage.strength("find.run")
    learned_run(workspace, database, [FOUND, {"total": 3}], task="Sum the April report")
    twice = usage.strength("Find.run")
    usage.close()

    assert 0.0 < once < twice  # each run that calls Find.run then File.read strengthens it
    tools = memory_tools(workspace, database, None)
    try:
        wired = tools.service.tool_usage
        assert wired is not None
        assert wired.strength("file.read") == pytest.approx(twice)
        assert wired.strength("file.write") == 0.0
    finally:
        tools.close()
