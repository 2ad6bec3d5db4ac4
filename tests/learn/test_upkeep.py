"""Decay that acts: the daily upkeep prunes the task graph and fades lessons nobody has seen
for a year out of memory, but never a retired or a user-confirmed one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscript.learn.experiences import (
    FADED,
    RETIRED,
    STORED,
    Candidate,
    Evidence,
    add_experience,
    retire_experience,
)
from agentscript.learn.graph import DAY, TaskGraph
from agentscript.learn.journal import close_shared_journals
from agentscript.learn.lessons import confirm_lesson, handle_of
from agentscript.learn.upkeep import keep_up
from experience_support import experiences, journal_of, make_workspace, open_memory

START = 1_800_000_000.0


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


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


def lesson(text: str, run_id: str, **fields: Any) -> Candidate:
    return Candidate(
        kind="failure",
        trigger="run_error",
        title=text[:40],
        lesson=text,
        when="Tasks like this",
        evidence=Evidence(run_id=run_id),
        confidence=0.7,
        signature="report",
        **fields,
    )


def status(graph: TaskGraph, key: str) -> str:
    node = graph.node(key)
    assert node is not None
    return str(node.metadata["status"])


def test_a_lesson_unseen_for_a_year_fades_and_can_be_learned_again(
    workspace: Path, database: Path
) -> None:
    graph = journal_of(workspace).graph
    clock = Clock()
    graph.clock = clock
    text = "Before File.read, find the file with sh://find instead of guessing its path."
    with open_memory(workspace, database) as memory:
        old = add_experience(memory, lesson(text, "run-1"), graph=graph)
        kept = add_experience(memory, lesson("Answer total with a plain number.", "run-2"),
                              graph=graph)  # fmt: skip
        retired = add_experience(memory, lesson("Never call Env.get for paths.", "run-3"),
                                 graph=graph)  # fmt: skip
        retire_experience(memory, retired.key, reason="wrong", graph=graph)
        confirm_lesson(memory, graph, handle_of(kept.key))

        assert keep_up(graph, memory) is not None  # the first upkeep is due at once
        assert keep_up(graph, memory) is None  # and not again the same day
        clock.now = START + 400 * DAY
        report = keep_up(graph, memory)
        assert report is not None and report.faded == (old.key,)
        titles = [entry["title"] for entry in experiences(memory)]
        statuses = {key: status(graph, key) for key in (old.key, kept.key, retired.key)}

        again = add_experience(memory, lesson(text, "run-9"), graph=graph)
        after = [entry["title"] for entry in experiences(memory)]

    assert titles == ["Answer total with a plain number."]
    assert statuses == {old.key: FADED, kept.key: STORED, retired.key: RETIRED}
    assert again.action == "created"
    assert sorted(after) == sorted([text[:40], "Answer total with a plain number."])


def test_a_learned_run_does_the_days_upkeep(workspace: Path, database: Path) -> None:
    from experience_support import FOUND, learned_run

    graph = journal_of(workspace).graph
    at = graph.clock()
    assert graph.store.claim_upkeep("probe", at, DAY)  # an unrelated name: claims are by name
    learned_run(workspace, database, [FOUND, {"total": 3}])
    # The learner claimed today's decay upkeep: it is not due again until a day has passed.
    assert not graph.store.claim_upkeep("decay", graph.clock(), DAY)
    assert graph.store.claim_upkeep("decay", at + DAY + 1, DAY)


def test_experience_nodes_outlive_pruning_so_retired_lessons_stay_blocked(
    workspace: Path, database: Path
) -> None:
    graph = journal_of(workspace).graph
    text = "Never call Env.get for paths."
    with open_memory(workspace, database) as memory:
        retired = add_experience(memory, lesson(text, "run-1"), graph=graph)
        retire_experience(memory, retired.key, reason="wrong", graph=graph)
        graph.decay_and_prune(now=START + 10 * 365 * DAY)  # ten half-lives: weight ~0.001
        again = add_experience(memory, lesson(text, "run-2"), graph=graph)
    assert status(graph, retired.key) == RETIRED
    assert again.action == "blocked"
