"""Runs learn later: a journaled `run` queues itself for learning and exits without loading
the memory service; the next reader of the workspace's memory learns from it, exactly once,
and nothing is lost when the process ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agentscript.app.learning import catch_up
from agentscript.app.workspace import Workspace
from agentscript.cli.main import main
from agentscript.learn.journal import Journal, journal_path, wait_for_journal
from agentscript.learn.run_memory import run_memory_key
from agentscript.memory import MemoryService

PROGRAM = """import llm Model from "openai://gpt-4.1-mini"

main agent Greeter {
    model Model
    role "greeter"
    description "Greets people."
    main func(input { name string }) {
        generate({ input: "Greet " + input.name }) -> { greeting string }
    }
}
"""
# Runs the CLI in a fresh process; prints which heavy modules the process loaded by the time
# its journal was written (the same moment a normal exit would end).
RUN_AND_REPORT = """
import json, os, sys
from agentscript.cli.main import main
from agentscript.learn.journal import wait_for_journal
code = main(sys.argv[1:])
wait_for_journal()
heavy = [name for name in ("agentscript.memory.service", "agentscript.learn.experiences",
         "agentscript.learn.graph") if name in sys.modules]
print(json.dumps({"code": code, "heavy": heavy}))
sys.stdout.flush()
os._exit(0)  # no atexit: whatever learning was not done by now would be lost
"""


RUN_ARGS = ("run", "greet.as", "--mock", "--quiet")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "greet.as").write_text(PROGRAM, encoding="utf-8")
    return root


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "memory.db"
    monkeypatch.setenv("AGENTSCRIPT_MEMORY_DB", str(path))
    return path


def run_process(workspace: Path, database: Path) -> dict[str, object]:
    environment = {**os.environ, "AGENTSCRIPT_MEMORY_DB": str(database)}
    done = subprocess.run(
        [sys.executable, "-c", RUN_AND_REPORT, *RUN_ARGS, "--input", '{"name": "Ada"}'],
        cwd=workspace,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def backlog(workspace: Path) -> list[str]:
    journal = Journal.open(journal_path(workspace))
    try:
        return [run_id for run_id, _ in journal.store.backlog()]
    finally:
        journal.close()


def run_memories(workspace: Path, database: Path) -> list[str]:
    with MemoryService.open(workspace, database=database) as memory:
        found = memory.recall("", tags=["run"], kind="episodic", limit=50)
    return sorted(item["key"] for item in found["results"])


def test_a_run_exits_without_learning_and_loses_nothing(workspace: Path, database: Path) -> None:
    report = run_process(workspace, database)
    assert report == {"code": 0, "heavy": []}
    queued = backlog(workspace)
    assert len(queued) == 1
    assert not database.exists()  # nothing was learned on the way out

    learned = catch_up(workspace, database)

    assert learned.learned == queued and learned.problems == []
    assert backlog(workspace) == []
    assert run_memories(workspace, database) == [run_memory_key(queued[0])]


def test_the_next_read_of_the_memory_learns_and_a_second_read_adds_nothing(
    workspace: Path, database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_process(workspace, database)
    (run_id,) = backlog(workspace)

    code = main(["memory", "recall", "--workspace", str(workspace), "--db", str(database)])
    assert code == 0
    assert run_memory_key(run_id) in capsys.readouterr().out
    assert backlog(workspace) == []
    with Workspace(workspace, database=database) as place:
        place.memory()
        assert place.problems == []
    assert run_memories(workspace, database) == [run_memory_key(run_id)]


def test_runs_queued_for_another_database_are_left_for_it(
    workspace: Path, database: Path, tmp_path: Path
) -> None:
    run_process(workspace, database)
    other = tmp_path / "other.db"

    report = catch_up(workspace, other)

    assert report.learned == [] and len(report.left) == 1
    assert not other.exists()
    assert catch_up(workspace, database).learned == report.left


def test_readers_catching_up_at_once_learn_each_run_once(workspace: Path, database: Path) -> None:
    for name in ("Ada", "Grace", "Edsger"):
        arguments = ["run", str(workspace / "greet.as"), "--mock", "--quiet"]
        assert main([*arguments, "--input", json.dumps({"name": name})]) == 0
    wait_for_journal()
    queued = backlog(workspace)
    assert len(queued) == 3
    learned: list[list[str]] = []
    start = threading.Barrier(3)

    def reader() -> None:
        start.wait()
        learned.append(catch_up(workspace, database).learned)

    readers = [threading.Thread(target=reader) for _ in range(3)]
    for thread in readers:
        thread.start()
    for thread in readers:
        thread.join()

    every = [run_id for part in learned for run_id in part]
    assert sorted(every) == sorted(queued)  # each run by exactly one reader
    assert backlog(workspace) == []
    assert run_memories(workspace, database) == sorted(run_memory_key(r) for r in queued)


def test_learn_command_reports_what_it_learned(
    workspace: Path, database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_process(workspace, database)
    assert main(["learn", "--workspace", str(workspace), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["learned"]) == 1 and report["problems"] == []
    assert main(["learn", "--workspace", str(workspace)]) == 0
    assert "learned from 0 run(s)" in capsys.readouterr().out
