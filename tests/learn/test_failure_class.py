"""Failures that are not the task's fault teach nothing: a missing key, a provider that is down
or rate limited, the user's own budget, a denied approval, read-only autonomy, an interrupt.
Each case runs the way `agentscript run` does (journaled, learned from) twice and checks that
no lesson is stored, none reaches the next run's prompt, and `runs show` carries one note."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from agentscript.learn.experiences import (
    MIN_CONFIDENCE,
    STORED,
    add_experience,
    distil,
    experiences_of_run,
)
from agentscript.learn.failure_class import environment_cause
from agentscript.learn.feedback import apply_feedback
from agentscript.learn.journal import close_shared_journals, format_run, show_run
from agentscript.providers.llm.router import ModelRouter
from experience_support import (
    FOUND,
    GUESSED,
    WRITER,
    execution_trace,
    experiences,
    journal_of,
    learned_run,
    make_workspace,
    open_memory,
    run_record,
)

# Asks the model once; the recall shows what the run's prompt would carry.
ASKER = """import llm Model from "openai://gpt-4.1-mini"

main agent Asker {
  model Model
  role "asker"
  description "Answers."

  main func(input { task string }) {
    use input.task
    generate({ input: "Answer." }) -> { answer string }
  }
}
"""


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


def assert_nothing_learned(workspace: Path, database: Path, run_ids: list[str]) -> None:
    with open_memory(workspace, database) as memory:
        assert experiences(memory) == []
    graph = journal_of(workspace).graph
    for run_id in run_ids:
        assert experiences_of_run(graph, run_id) == []


def test_a_missing_api_key_teaches_nothing_and_leaves_an_operator_note(
    workspace: Path, database: Path
) -> None:
    runs = []
    for task in ("Sum the data report", "Sum the April report"):
        ran = learned_run(
            workspace, database, [], task=task, source=ASKER, name="asker.as",
            model=ModelRouter({}), environ={},
        )  # fmt: skip
        assert ran.error is not None and "OPENAI_API_KEY is required" in str(ran.error)
        runs.append(ran.run_id)

    assert_nothing_learned(workspace, database, runs)
    detail = show_run(journal_of(workspace), runs[-1])
    assert detail.operator_note is not None and "missing_key" in detail.operator_note
    assert "learning  not learned from (missing_key)" in format_run(detail)


def test_a_provider_outage_teaches_nothing(
    workspace: Path, database: Path, httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/v1/chat/completions").respond_with_json(
        {"error": {"message": "The server is overloaded"}}, status=503
    )
    environ = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": httpserver.url_for("/v1")}
    runs = []
    for task in ("Sum the data report", "Sum the April report"):
        router = ModelRouter(environ, sleep=lambda seconds: None)
        ran = learned_run(
            workspace, database, [], task=task, source=ASKER, name="asker.as",
            model=router, environ=environ,
        )  # fmt: skip
        router.close()
        assert ran.error is not None and "(503)" in str(ran.error)
        runs.append(ran.run_id)

    assert_nothing_learned(workspace, database, runs)


def test_the_users_own_budget_teaches_nothing(workspace: Path, database: Path) -> None:
    runs = []
    for task in ("Sum the data report", "Sum the April report"):
        ran = learned_run(workspace, database, [FOUND, {"total": 3}], task=task, max_calls=1)
        assert ran.error is not None and "Run budget exceeded" in str(ran.error)
        runs.append(ran.run_id)

    assert_nothing_learned(workspace, database, runs)


def test_a_denied_approval_is_no_failure_lesson(workspace: Path, database: Path) -> None:
    runs = []
    for task in ("Write the notes", "Write the other notes"):
        ran = learned_run(
            workspace, database, [], task=task, source=WRITER, name="writer.as", approve="deny"
        )
        assert ran.error is not None and "was refused" in str(ran.error)
        runs.append(ran.run_id)

    assert_nothing_learned(workspace, database, runs)


@pytest.mark.parametrize(
    "reason",
    [
        "OPENAI_API_KEY is required for openai:// models",
        "LLM provider 'openai' request failed (503): The server is overloaded",
        "LLM provider 'openai' request failed (429): Rate limit reached",
        "LLM provider 'openai' request timed out after 60000ms: http://127.0.0.1/v1",
        "LLM provider 'openai' request failed: [Errno 111] Connection refused (http://x)",
        "Run budget exceeded: 1 model calls used (--max-calls)",
        "Tool File.write (file://workspace) failed: File.write is not allowed in autonomous "
        "runs: they may only read, and this call's risk is effect",
        "Tool File.write (file://workspace) failed: File.write needs approval and there is no "
        "terminal to ask; run with --approve auto or allow it in an approval policy",
        "Tool File.write (file://workspace) failed: File.write was refused by the user",
        "interrupted: the run ended before it finished",
    ],
)
def test_every_environment_reason_is_recognised_and_distils_nothing(reason: str) -> None:
    assert environment_cause(reason) is not None
    run = run_record(status="error")
    assert distil(run, execution_trace(run, failure=reason)) == []


@pytest.mark.parametrize(
    "reason",
    [
        "Tool File.read (file://workspace) failed: File not found: data.csv",
        "LLM result field must be a number",
        "Path escapes workspace: ../secret",
        "Something odd happened",
    ],
)
def test_task_failures_are_not_mistaken_for_the_environment(reason: str) -> None:
    assert environment_cause(reason) is None


def test_an_unexplained_error_on_the_same_input_never_becomes_a_lesson(
    workspace: Path, database: Path
) -> None:
    journal = journal_of(workspace)
    graph = journal.graph
    with open_memory(workspace, database) as memory:
        actions = []
        for index in range(3):
            run = run_record(run_id=f"20270101-00000{index}-aaaaaa", status="error")
            trace = execution_trace(run, failure="Something odd happened", goal={"task": "A"})
            candidate = distil(run, trace)[0]
            actions.append(add_experience(memory, candidate, graph=graph).action)
        assert actions == ["candidate", "candidate", "candidate"]
        assert experiences(memory) == []

        other = run_record(run_id="20270101-000009-aaaaaa", status="error")
        trace = execution_trace(other, failure="Something odd happened", goal={"task": "B"})
        added = add_experience(memory, distil(other, trace)[0], graph=graph)
        assert added.action == "created" and added.confidence >= MIN_CONFIDENCE
        lesson = experiences(memory)[0]["body"]
    assert lesson.startswith("Check how report.as is called before calling it again")


def test_bad_feedback_retires_a_failure_lesson(workspace: Path, database: Path) -> None:
    ran = learned_run(workspace, database, [GUESSED])
    journal = journal_of(workspace)
    failure = [n for n in experiences_of_run(journal.graph, ran.run_id)]
    assert [n.metadata["status"] for n in failure] == [STORED]

    with open_memory(workspace, database) as memory:
        report = apply_feedback(journal, memory, ran.run_id, "bad")
        left: list[Any] = experiences(memory)

    assert report.retired == [failure[0].node_id]
    assert left == []
    node = journal.graph.node(failure[0].node_id)
    assert node is not None and node.metadata["status"] == "retired"


def test_a_task_failure_still_teaches_what_to_do(workspace: Path, database: Path) -> None:
    learned_run(workspace, database, [GUESSED])
    with open_memory(workspace, database) as memory:
        assert len(experiences(memory)) == 1
