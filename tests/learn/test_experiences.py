"""Learning from runs: distilled experiences, their dedup and confirmation, run memories.

The rules are tested on hand-made execution traces; storage, dedup, feedback and the wiring on
real runs (scripted mock model, real host tools, a temporary workspace and memory database).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import agentscript
from agentscript.app.configuration import leaves_run_memory
from agentscript.app.learning import learner_for, learner_from_request, learning_request
from agentscript.cli.feedback import feedback_command
from agentscript.learn.experiences import (
    APPROVAL_REFUSED,
    CANDIDATE,
    MIN_CONFIDENCE,
    RETIRED,
    RUN_ERROR,
    RUN_OK,
    STORED,
    TOOL_FAILED_AGAIN,
    Candidate,
    Evidence,
    Refiner,
    add_experience,
    check_refinement,
    distil,
    experiences_of_run,
    learn_from_run,
    lesson_of,
    recall_experiences,
    retire_experience,
    similarity,
    task_signature,
)
from agentscript.learn.feedback import apply_feedback
from agentscript.learn.graph import EdgeType, NodeType, episode_node_id
from agentscript.learn.journal import run_trace
from agentscript.learn.run_memory import (
    RunLearner,
    run_memory_key,
    write_run_memory,
)
from agentscript.learn.sensitive import SECRET
from agentscript.providers.llm.mock import ScriptedLlm
from experience_support import (
    FOUND,
    GUESSED,
    TALKER,
    WRITER,
    execution_trace,
    experiences,
    generate_entry,
    journal_of,
    learned_run,
    make_workspace,
    open_memory,
    refusal,
    run_record,
    tool_step,
)

TOTAL = {"total": 3}
SECRET_TOKEN = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


def only(items: list[Any]) -> Any:
    assert len(items) == 1, items
    return items[0]


# ----------------------------------------------------------------------------- the rules


def test_a_run_that_ends_ok_with_tools_teaches_its_tool_chain() -> None:
    run = run_record(status="ok")
    trace = execution_trace(run, tools=[tool_step(3, "Find.run"), tool_step(4, "File.read")])

    candidate = only(distil(run, trace))

    assert (candidate.kind, candidate.trigger, candidate.signature) == ("success", RUN_OK, "report")
    assert candidate.lesson == (
        "For report.as tasks, use Find.run → File.read in this order: it worked."
    )
    assert candidate.when == 'Tasks like "Sum the March report" in report.as'
    assert candidate.evidence == Evidence(
        run_id=run.run_id,
        event_ids=(3, 4),
        tool_chain=("Find.run", "File.read"),
        files=("data.csv", "data.csv"),
        success=True,
    )
    assert candidate.confidence >= MIN_CONFIDENCE


def test_a_run_that_ends_ok_without_tools_or_repairs_teaches_nothing() -> None:
    run = run_record(status="ok")
    assert distil(run, execution_trace(run)) == []


def test_a_repaired_generate_teaches_the_fields_the_model_missed() -> None:
    run = run_record(status="ok")
    entries = [
        generate_entry(run.run_id, 2, attempts=2, fields={"total": "number", "ok": "boolean"})
    ]

    candidate = only(distil(run, execution_trace(run), entries))

    assert (candidate.kind, candidate.cause, candidate.evidence.event_ids) == (
        "failure",
        "shape",
        (2,),
    )
    assert "answer total with a plain number; answer ok with true or false" in candidate.lesson
    assert "attempts: 2" in candidate.lesson


def test_a_run_error_from_a_missing_file_teaches_to_locate_it_first() -> None:
    run = run_record(status="error")
    failure = "Tool File.read (file://workspace) failed: File not found: data.csv at report.as:9:5"

    candidate = only(distil(run, execution_trace(run, failure=failure)))

    assert (candidate.kind, candidate.trigger, candidate.cause) == (
        "failure",
        RUN_ERROR,
        "not_found",
    )
    assert candidate.title == "Locate files before File.read"
    assert candidate.lesson == (
        "Before File.read, find the file (for example with sh://find) instead of guessing its "
        'path (File.read failed with "File not found: data.csv").'
    )
    assert candidate.tools == ("File.read",)
    assert candidate.confidence >= MIN_CONFIDENCE


def test_a_shape_failure_names_the_generate_and_its_typed_fields() -> None:
    run = run_record(status="error")
    entries = [generate_entry(run.run_id, 7, ok=False, instruction="Give the total.")]

    candidate = only(
        distil(run, execution_trace(run, failure="LLM result field must be a number"), entries)
    )

    assert candidate.cause == "shape"
    assert candidate.lesson.startswith('In generate "Give the total.", answer total')
    assert candidate.lesson.endswith("(its answer did not match its shape).")
    assert "answer total with a plain number" in candidate.lesson
    assert candidate.evidence.event_ids == (7,)


def test_an_error_no_rule_explains_is_a_low_confidence_candidate() -> None:
    run = run_record(status="error")

    candidate = only(distil(run, execution_trace(run, failure="Something odd happened")))

    assert candidate.cause == "error"
    assert candidate.confidence < MIN_CONFIDENCE


def test_an_approval_the_user_refused_is_a_weak_preference() -> None:
    run = run_record(status="error")
    failure = "File.write was refused by the user"
    trace = execution_trace(run, approvals=[refusal(by="user")], failure=failure)

    found = distil(run, trace)

    preference = only([c for c in found if c.kind == "preference"])
    assert (preference.trigger, preference.signature, preference.tools) == (
        APPROVAL_REFUSED,
        None,
        ("File.write",),
    )
    assert preference.evidence.event_ids == (4, 5)
    assert preference.confidence < MIN_CONFIDENCE


def test_a_refusal_by_policy_is_not_a_preference_of_the_user() -> None:
    run = run_record(status="error")
    trace = execution_trace(run, approvals=[refusal(by="policy")], failure="x was refused")
    # Nor a failure of the task: an approval denial is the operator's call.
    assert distil(run, trace) == []


def test_task_signature_keeps_the_programs_name_only() -> None:
    assert task_signature("/home/ada/secret-project/Report.as") == "report"
    assert task_signature("C:\\work\\fix.as", "Fixer.patch") == "fix/fixer.patch"
    assert task_signature(None) is None


def test_similarity_sees_a_lesson_that_differs_in_one_file_name_as_the_same() -> None:
    first = 'File.read failed with "File not found: march.csv": locate the file first.'
    second = 'File.read failed with "File not found: april.csv": locate the file first.'
    assert similarity(first, second) >= 0.8
    assert similarity(first, "The user refused File.write: plan without it.") < 0.5


# ----------------------------------------------------------------------------- storing


def candidate(lesson: str, run_id: str | None, **fields: Any) -> Candidate:
    values: dict[str, Any] = {
        "kind": "failure",
        "trigger": RUN_ERROR,
        "title": "Locate files before File.read",
        "lesson": lesson,
        "when": "Tasks like this",
        "evidence": Evidence(run_id=run_id, tool_chain=("File.read",), files=("data.csv",)),
        "confidence": 0.7,
        "signature": "report",
        "task": "Sum the March report",
        "tools": ("File.read",),
        "cause": "not_found",
    }
    values.update(fields)
    return Candidate(**values)


MARCH = 'File.read failed with "File not found: march.csv": locate the file first.'
APRIL = 'File.read failed with "File not found: april.csv": locate the file first.'


def test_a_new_experience_follows_the_storage_convention(workspace: Path, database: Path) -> None:
    journal = journal_of(workspace)
    with open_memory(workspace, database) as memory:
        added = add_experience(memory, candidate(MARCH, "run-1"), graph=journal.graph)
        entry = only(experiences(memory))

    assert added.action == "created"
    assert entry["id"] == added.memory_id
    assert (entry["kind"], entry["key"], entry["title"]) == (
        "knowledge",
        added.key,
        "Locate files before File.read",
    )
    assert entry["key"].startswith("experience:report:failure:")
    assert entry["tags"] == ["experience", "failure", "task:report", "tool:file.read"]
    assert entry["body"] == (
        f"{MARCH}\n\nWhen to apply: Tasks like this\n\nEvidence:\n- run run-1\n"
        "- tool chain File.read\n- files data.csv\n\nConfidence: 0.70"
    )
    assert entry["source"] == {"run": "run-1", "reason": "experience:run_error"}
    node = journal.graph.node(added.key)
    assert node is not None and node.node_type is NodeType.EXPERIENCE
    assert (node.metadata["status"], node.metadata["runs"]) == (STORED, ["run-1"])
    assert [n.node_id for n in experiences_of_run(journal.graph, "run-1")] == [added.key]


def test_a_near_identical_lesson_reinforces_instead_of_adding(
    workspace: Path, database: Path
) -> None:
    graph = journal_of(workspace).graph
    with open_memory(workspace, database) as memory:
        first = add_experience(memory, candidate(MARCH, "run-1"), graph=graph)
        again = add_experience(memory, candidate(APRIL, "run-2"), graph=graph)
        other = add_experience(
            memory,
            candidate("Keep File.read paths inside the workspace root.", "run-2"),
            graph=graph,
        )
        stored = {entry["key"]: entry for entry in experiences(memory)}

    assert (first.action, again.action, other.action) == ("created", "reinforced", "created")
    assert again.key == first.key
    assert len(stored) == 2
    assert stored[first.key]["reinforce_count"] == 1
    assert lesson_of(stored[first.key]["body"]) == MARCH
    node = graph.node(first.key)
    assert node is not None
    assert (node.metadata["run_count"], node.metadata["reinforced"]) == (2, 1)


def test_the_same_lesson_of_another_task_or_kind_is_another_experience(
    workspace: Path, database: Path
) -> None:
    graph = journal_of(workspace).graph
    with open_memory(workspace, database) as memory:
        add_experience(memory, candidate(MARCH, "run-1"), graph=graph)
        add_experience(memory, candidate(MARCH, "run-2", signature="other"), graph=graph)
        add_experience(memory, candidate(MARCH, "run-3", kind="success"), graph=graph)
        assert len(experiences(memory)) == 3


# One process learning a near-identical lesson: it waits for the start file, then adds the
# candidate with a rewrite that takes a while, so processes that did not wait for each other
# would all decide "new" before any of them stored it.
_LEARNER_PROCESS = """
import json, sys, time
from pathlib import Path
from agentscript.app.learning import sandboxed_run
from agentscript.learn.experiences import Candidate, Evidence, Refiner, add_experience
from agentscript.learn.journal import journal_path, shared_journal
from agentscript.memory import MemoryService
from agentscript.providers.llm.mock import ScriptedLlm

workspace, database, start, month, refined = sys.argv[1:6]


class SlowModel(ScriptedLlm):
    def generate(self, request):
        time.sleep(0.3)
        return super().generate(request)


candidate = Candidate(
    kind="failure",
    trigger="run_error",
    title="Locate files before File.read",
    lesson=f'File.read failed with "File not found: {month}.csv": locate the file first.',
    when="Tasks like this",
    evidence=Evidence(run_id=f"run-{month}", tool_chain=("File.read",), files=("data.csv",)),
    confidence=0.7,
    signature="report",
    task="Sum the March report",
    tools=("File.read",),
    cause="not_found",
)
refiner = Refiner(SlowModel({"Learner.refine": [json.loads(refined)]}), runner=sandboxed_run)
while not Path(start).exists():
    time.sleep(0.005)
graph = shared_journal(journal_path(workspace)).graph
with MemoryService.open(workspace, database=database) as memory:
    print(add_experience(memory, candidate, graph=graph, refiner=refiner).action)
"""


def test_processes_learning_the_same_lesson_at_once_store_it_once(
    workspace: Path, database: Path, tmp_path: Path
) -> None:
    start = tmp_path / "start"
    months = ["march", "april", "may", "june"]
    learners = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                _LEARNER_PROCESS,
                str(workspace),
                str(database),
                str(start),
                month,
                json.dumps(REFINED),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for month in months
    ]
    time.sleep(1.0)  # let every process import and wait at the start line
    start.touch()
    outputs = [learner.communicate(timeout=120) for learner in learners]

    assert [learner.returncode for learner in learners] == [0] * len(months), outputs
    actions = sorted(out.strip() for out, _ in outputs)
    assert actions == ["created", "reinforced", "reinforced", "reinforced"]
    with open_memory(workspace, database) as memory:
        entry = only(experiences(memory))
    assert entry["reinforce_count"] == len(months) - 1
    node = journal_of(workspace).graph.node(entry["key"])
    assert node is not None and node.metadata["run_count"] == len(months)


def test_a_run_counts_once_per_experience(workspace: Path, database: Path) -> None:
    graph = journal_of(workspace).graph
    with open_memory(workspace, database) as memory:
        add_experience(memory, candidate(MARCH, "run-1"), graph=graph)
        repeat = add_experience(memory, candidate(APRIL, "run-1"), graph=graph)
        entry = only(experiences(memory))

    assert repeat.action == "known"
    assert entry["reinforce_count"] == 0


def test_low_confidence_candidates_stay_in_the_graph_until_repeated(
    workspace: Path, database: Path
) -> None:
    graph = journal_of(workspace).graph
    weak = {"kind": "preference", "confidence": 0.5, "signature": None}
    with open_memory(workspace, database) as memory:
        first = add_experience(memory, candidate(MARCH, "run-1", **weak), graph=graph)
        node = graph.node(first.key)
        assert (first.action, experiences(memory)) == ("candidate", [])
        assert node is not None and node.metadata["status"] == CANDIDATE
        assert [n.node_id for n in experiences_of_run(graph, "run-1")] == [first.key]

        second = add_experience(memory, candidate(APRIL, "run-2", **weak), graph=graph)

        assert (second.action, second.key, round(second.confidence, 2)) == (
            "created",
            first.key,
            0.7,
        )
        assert only(experiences(memory))["key"] == first.key
    promoted = graph.node(first.key)
    assert promoted is not None and promoted.metadata["status"] == STORED


def test_a_candidate_without_a_graph_is_dropped(database: Path, workspace: Path) -> None:
    with open_memory(workspace, database) as memory:
        dropped = add_experience(memory, candidate(MARCH, None, confidence=0.3))
        assert (dropped.action, experiences(memory)) == ("dropped", [])


def test_a_retired_experience_is_not_learned_again(workspace: Path, database: Path) -> None:
    graph = journal_of(workspace).graph
    with open_memory(workspace, database) as memory:
        first = add_experience(memory, candidate(MARCH, "run-1"), graph=graph)
        retired = retire_experience(memory, first.key, reason="wrong", graph=graph)
        again = add_experience(memory, candidate(APRIL, "run-2"), graph=graph)
        active = experiences(memory)
        archived = experiences(memory, archived=True)

    assert retired == {"key": first.key, "id": first.memory_id, "action": "retired"}
    assert (again.action, active) == ("blocked", [])
    assert only(archived)["archived"] is True
    node = graph.node(first.key)
    assert node is not None and node.metadata["status"] == RETIRED


def test_retire_by_memory_id_and_recall_by_task(workspace: Path, database: Path) -> None:
    with open_memory(workspace, database) as memory:
        kept = add_experience(memory, candidate(MARCH, "run-1"))
        gone = add_experience(
            memory, candidate("Ask before File.write: the user refuses it.", "run-1")
        )
        retire_experience(memory, str(gone.memory_id), reason="outdated")
        memory.remember("Sum the March report: a note, not an experience")
        found = recall_experiences(memory, "sum the march report", limit=5)

    assert [hit["key"] for hit in found] == [kept.key]


# ----------------------------------------------------------------------------- sensitive values


def test_secrets_and_outside_paths_are_summarised_before_they_are_stored(
    workspace: Path, database: Path
) -> None:
    lesson = f"Http.get failed with token {SECRET_TOKEN}; it read /etc/agent/keys.yml first."
    raw = candidate(
        lesson,
        "run-1",
        task=f"deploy with {SECRET_TOKEN}",
        evidence=Evidence(run_id="run-1", files=("/etc/agent/keys.yml",)),
    )
    with open_memory(workspace, database) as memory:
        add_experience(memory, raw)
        entry = memory.get(only(experiences(memory))["id"])

    stored = entry["title"] + entry["body"] + entry["context"]
    assert SECRET_TOKEN not in stored and "/etc/agent" not in stored
    assert SECRET in entry["body"] and "[outside workspace #" in entry["body"]


def test_a_run_with_a_secret_argument_keeps_it_out_of_memory(
    workspace: Path, database: Path
) -> None:
    secret_task = f"Sum the report with key {SECRET_TOKEN}"
    outside = "/etc/agentscript-test/elsewhere.csv"
    ran = learned_run(workspace, database, [{"file": outside, "look_up": False}], task=secret_task)

    assert ran.error is not None and ran.problems == []
    with open_memory(workspace, database) as memory:
        texts = [memory.get(hit["id"]) for hit in memory.recall("", limit=50)["results"]]
    assert len(texts) == 2  # the run memory and the failure experience
    for text in texts:
        dumped = str(text)
        assert SECRET_TOKEN not in dumped and outside not in dumped


# ----------------------------------------------------------------------------- run memories


def test_every_finished_run_leaves_one_run_memory(workspace: Path, database: Path) -> None:
    ran = learned_run(workspace, database, [FOUND, TOTAL])

    with open_memory(workspace, database) as memory:
        versions = memory.history(run_memory_key(ran.run_id))["versions"]
    entry = only(versions)
    assert (entry["kind"], entry["scope"], entry["tags"]) == (
        "episodic",
        memory.workspace,
        ["run", "ok", "task:reader"],
    )
    assert entry["title"] == "reader.as succeeded: Sum the data report"
    assert entry["source"] == {"run": ran.run_id, "reason": "run-memory"}
    lines = entry["body"].splitlines()
    assert lines[:3] == [
        f"Run {ran.run_id} of reader.as",
        "Goal: Sum the data report",
        "Outcome: ok",
    ]
    assert lines[3] == "Tools used: Find.run, File.read (in order: Find.run → File.read)"
    assert lines[4] == "Files touched: . (read), reports/data.csv (read)"
    assert lines[5].startswith("Duration: ")


def test_auto_sink_false_in_memory_yml_writes_no_run_memory(
    workspace: Path, database: Path
) -> None:
    (workspace / ".agentscript").mkdir(exist_ok=True)
    (workspace / ".agentscript" / "memory.yml").write_text("auto_sink: false\n")

    ran = learned_run(workspace, database, [FOUND, TOTAL])

    assert ran.problems == []
    with open_memory(workspace, database) as memory:
        assert memory.history(run_memory_key(ran.run_id))["versions"] == []


def test_learning_a_run_again_adds_nothing(workspace: Path, database: Path) -> None:
    ran = learned_run(workspace, database, [GUESSED])
    journal = journal_of(workspace)
    run = journal.resolve(ran.run_id)
    entries = journal.store.entries(ran.run_id)
    trace = run_trace(journal, ran.run_id)

    with open_memory(workspace, database) as memory:
        before = memory.recall("", limit=50)["results"]
        memory_again = write_run_memory(memory, run, trace)
        report = learn_from_run(memory, journal.graph, run, trace, entries)
        # Even past the episode's record of it, each experience counts the run only once.
        repeats = [
            add_experience(memory, found, graph=journal.graph)
            for found in distil(run, trace, entries, journal.graph)
        ]
        after = memory.recall("", limit=50)["results"]

    assert memory_again["action"] == "exists"
    assert report.skipped and report.results == []
    assert [added.action for added in repeats] == ["known"]
    assert len(before) == 2
    assert [(hit["id"], hit["reinforce_count"]) for hit in after] == [
        (hit["id"], hit["reinforce_count"]) for hit in before
    ]


# ----------------------------------------------------------------------------- the wiring


def test_a_journaled_run_writes_its_memory_and_experiences(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = tmp_path / "from-environment.db"
    monkeypatch.setenv("AGENTSCRIPT_MEMORY_DB", str(database))

    ran = learned_run(workspace, None, [GUESSED])

    assert ran.error is not None and ran.problems == []
    graph = journal_of(workspace).graph
    node = only(experiences_of_run(graph, ran.run_id))
    assert (node.metadata["kind"], node.metadata["cause"]) == ("failure", "not_found")
    edge = only(graph.store.edges(source=episode_node_id(ran.run_id), target=node.node_id))
    assert edge.edge_type is EdgeType.REFERENCE
    with open_memory(workspace, database) as memory:
        entry = only(experiences(memory))
        assert entry["key"] == node.node_id
        assert memory.history(run_memory_key(ran.run_id))["versions"]
    episode = graph.node(episode_node_id(ran.run_id))
    assert episode is not None
    assert episode.metadata["learning"]["experiences"] == [
        {
            "action": "created",
            "key": node.node_id,
            "kind": "failure",
            "memory_id": entry["id"],
            "confidence": 0.7,
            "trigger": RUN_ERROR,
        }
    ]


def test_the_lesson_of_a_failure_reaches_the_next_run_of_the_task(
    workspace: Path, database: Path
) -> None:
    learned_run(workspace, database, [GUESSED])
    with open_memory(workspace, database) as memory:
        hit = only(recall_experiences(memory, "Sum the data report for April"))
    assert "find the file (for example with sh://find)" in hit["body"]


def test_learning_off_or_a_dry_run_learns_nothing(workspace: Path, database: Path) -> None:
    learned_run(workspace, database, [GUESSED], learn=False)
    dry = learned_run(workspace, database, [GUESSED], model="dry-run")
    assert dry.error is None or dry.error.journal is None
    assert not database.exists()


def test_a_live_run_told_not_to_learn_still_leaves_its_run_memory(
    workspace: Path, database: Path
) -> None:
    # A provider handed in from Python is a live model; learn=False is what --no-learn sets.
    # Learning from this failed run distils an experience (see the wiring test above).
    ran = learned_run(workspace, database, [], model=ScriptedLlm([GUESSED]), learn=False)
    assert ran.error is not None and ran.problems == []
    with open_memory(workspace, database) as memory:
        assert memory.history(run_memory_key(ran.run_id))["versions"]
        assert experiences(memory) == []
    assert experiences_of_run(journal_of(workspace).graph, ran.run_id) == []


def test_run_memory_false_leaves_nothing_even_for_a_live_run(
    workspace: Path, database: Path
) -> None:
    model = ScriptedLlm([FOUND, TOTAL])
    ran = learned_run(workspace, database, [], model=model, learn=False, run_memory=False)
    assert ran.error is None and ran.problems == []
    assert not database.exists()


def test_a_queued_run_told_not_to_learn_asks_for_its_run_memory_only(database: Path) -> None:
    live = agentscript.RunConfig(model="real", learn=False, memory_db=database)
    request = learning_request(live)
    assert request is not None and request["distil"] is False
    assert learner_from_request(request).distil is False
    # Requests queued before the flag existed learned in full, and still do.
    assert learner_from_request({"database": str(database)}).distil is True
    assert not leaves_run_memory(agentscript.RunConfig(model="mock", learn=False))
    assert leaves_run_memory(agentscript.RunConfig(model="mock", learn=True))
    assert not leaves_run_memory(agentscript.RunConfig(replay="session.jsonl"))


def test_memory_db_of_the_run_wins_over_the_environment(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, database: Path
) -> None:
    monkeypatch.setenv("AGENTSCRIPT_MEMORY_DB", str(tmp_path / "not-this.db"))
    learned_run(workspace, database, [FOUND, TOTAL])
    assert database.exists() and not (tmp_path / "not-this.db").exists()


def test_learning_that_fails_is_a_journal_problem_not_a_run_failure(
    workspace: Path, tmp_path: Path
) -> None:
    unusable = tmp_path / "a-directory.db"
    unusable.mkdir()

    ran = learned_run(workspace, unusable, [FOUND, TOTAL])

    assert ran.error is None and ran.value == TOTAL
    assert [problem.split(":")[:2] for problem in ran.problems] == [
        ["Learning", " the run memory was not written"],
        ["Learning", " experiences were not distilled"],
    ]
    assert all("unable to open database file" in problem for problem in ran.problems)


def test_interrupted_runs_are_not_learned_from(workspace: Path, database: Path) -> None:
    run = run_record(status="interrupted")
    learner = RunLearner(database)
    trace = execution_trace(run, failure="interrupted")
    assert learner(journal_of(workspace), run, [], trace) == []
    assert not database.exists()


def test_the_same_tool_failing_in_another_run_becomes_a_tool_lesson(
    workspace: Path, database: Path
) -> None:
    first = learned_run(workspace, database, [GUESSED])
    second = learned_run(workspace, database, [GUESSED], name="other.as")

    graph = journal_of(workspace).graph
    learned = experiences_of_run(graph, second.run_id)
    assert [n.metadata["trigger"] for n in learned] == [RUN_ERROR, TOOL_FAILED_AGAIN]
    again = learned[1]
    assert again.metadata["signature"] is None
    assert again.metadata["lesson"] == (
        "Before File.read, find the file (for example with sh://find) instead of guessing its "
        "path (File.read failed with a missing file in other tasks too)."
    )
    assert again.metadata["candidate"]["evidence"]["other_runs"] == [first.run_id]
    with open_memory(workspace, database) as memory:
        tags = sorted(entry["tags"] for entry in experiences(memory))
    assert tags == [
        ["experience", "failure", "task:other", "tool:file.read"],
        ["experience", "failure", "task:reader", "tool:file.read"],
        ["experience", "failure", "tool:file.read"],
    ]


def test_a_run_that_needed_a_repair_remembers_which_field_to_fix(
    workspace: Path, database: Path
) -> None:
    answers = [{"answer": "yes", "score": "high"}, {"answer": "yes", "score": 4}]
    ran = learned_run(workspace, database, answers, source=TALKER, name="talker.as")

    assert ran.value == {"answer": "yes", "score": 4}
    with open_memory(workspace, database) as memory:
        entry = only(experiences(memory))
    assert entry["title"] == 'Expect repairs in generate "Answer."'
    assert lesson_of(entry["body"]) == (
        'In generate "Answer.", answer score with a plain number, and give the generate '
        "attempts: 2 so a wrong answer is repaired (its first answer did not match its shape "
        "and was repaired)."
    )
    assert entry["source"] == {"run": ran.run_id, "reason": "experience:run_ok"}


def test_the_same_task_failing_again_reinforces_its_own_lesson(
    workspace: Path, database: Path
) -> None:
    learned_run(workspace, database, [GUESSED])
    second = learned_run(workspace, database, [GUESSED])

    graph = journal_of(workspace).graph
    assert [n.metadata["trigger"] for n in experiences_of_run(graph, second.run_id)] == [RUN_ERROR]
    with open_memory(workspace, database) as memory:
        assert only(experiences(memory))["reinforce_count"] == 1


def test_a_tool_chain_that_worked_twice_becomes_a_procedure(
    workspace: Path, database: Path
) -> None:
    runs = [learned_run(workspace, database, [FOUND, TOTAL]) for _ in range(3)]

    with open_memory(workspace, database) as memory:
        stored = {e["tags"][1]: e for e in experiences(memory)}
    assert set(stored) == {"success", "procedure"}
    assert stored["success"]["reinforce_count"] == 2
    assert stored["procedure"]["reinforce_count"] == 1
    assert lesson_of(stored["procedure"]["body"]) == (
        "To do reader.as tasks: 1) Find.run (path, name, type, max); 2) File.read (path)."
    )
    assert stored["procedure"]["source"]["run"] == runs[1].run_id


# ----------------------------------------------------------------------------- feedback


def test_good_feedback_reinforces_stores_candidates_and_keeps_a_note(
    workspace: Path, database: Path
) -> None:
    ran = learned_run(
        workspace,
        database,
        [],
        source=WRITER,
        name="writer.as",
        approve="ask",
        ask_user=lambda request: "no",
    )
    journal = journal_of(workspace)
    learned = experiences_of_run(journal.graph, ran.run_id)
    weak = only([n for n in learned if n.metadata["kind"] == "preference"])
    assert weak.metadata["status"] == CANDIDATE

    with open_memory(workspace, database) as memory:
        report = apply_feedback(journal, memory, ran.run_id, "good", "Keep notes in notes.md.")
        repeated = apply_feedback(journal, memory, ran.run_id, "good", "Keep notes in notes.md.")
        stored = {entry["key"]: entry for entry in experiences(memory)}

    assert report.promoted == [weak.node_id]
    # A refused approval is no failure lesson of the task: only the preference was learned.
    assert report.reinforced == []
    note = only(report.added)
    assert (note.action, note.kind) == ("created", "preference")
    assert lesson_of(stored[note.key]["body"]) == "Keep notes in notes.md."
    assert stored[note.key]["source"] == {"run": ran.run_id, "reason": "experience:feedback_good"}
    assert repeated.repeated and repeated.reinforced == []
    episode = journal.graph.node(episode_node_id(ran.run_id))
    assert episode is not None
    assert [(f["verdict"], f["note"]) for f in episode.metadata["feedback"]] == [
        ("good", "Keep notes in notes.md.")
    ]


def test_bad_feedback_retires_what_worked_and_stores_the_correction(
    workspace: Path, database: Path
) -> None:
    first = learned_run(workspace, database, [FOUND, TOTAL])
    journal = journal_of(workspace)
    with open_memory(workspace, database) as memory:
        report = apply_feedback(
            journal, memory, first.run_id, "bad", "The total must come from the sales column."
        )
        active = experiences(memory)

    retired = only(report.retired)
    assert journal.graph.node(retired).metadata["status"] == RETIRED  # type: ignore[union-attr]
    correction = only(report.added)
    assert [entry["key"] for entry in active] == [correction.key]
    assert lesson_of(active[0]["body"]) == "The total must come from the sales column."
    assert journal.graph.store.edges(
        source=retired, target=correction.key, edge_type=EdgeType.CAUSAL
    )

    later = learned_run(workspace, database, [FOUND, TOTAL])
    blocked = only(experiences_of_run(journal.graph, later.run_id))
    assert blocked.node_id == retired
    with open_memory(workspace, database) as memory:
        assert [entry["key"] for entry in experiences(memory)] == [correction.key]


def test_feedback_on_a_run_nothing_was_learned_from_learns_it_first(
    workspace: Path, database: Path
) -> None:
    ran = learned_run(workspace, database, [FOUND, TOTAL], learn=False)
    journal = journal_of(workspace)
    with open_memory(workspace, database) as memory:
        report = apply_feedback(journal, memory, ran.run_id, "good")
        entry = only(experiences(memory))
    assert report.reinforced == [entry["key"]]
    assert entry["reinforce_count"] == 1


def test_feedback_command_prints_what_changed(
    workspace: Path, database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = learned_run(workspace, database, [GUESSED])
    monkeypatch.setenv("AGENTSCRIPT_MEMORY_DB", str(database))
    runner = CliRunner()

    done = runner.invoke(
        feedback_command, ["last", "bad", "Never guess paths.", "--workspace", str(workspace)]
    )
    missing = runner.invoke(feedback_command, ["nope", "good", "--workspace", str(workspace)])

    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert lines[0] == f"run {ran.run_id}: bad feedback recorded"
    assert lines[1].startswith("retired    experience:reader:failure:")
    assert lines[2].startswith("created    experience:reader:failure:")
    assert missing.exit_code == 1
    assert "No run 'nope'" in missing.output


# ----------------------------------------------------------------------------- refinement


REFINED = {
    "title": "Find report files before reading",
    "lesson": "Before File.read, locate the report with sh://find; never guess its path.",
    "when": "Report tasks that read files",
}


def test_a_model_rewrites_new_experiences(workspace: Path, database: Path) -> None:
    model = ScriptedLlm({"Learner.refine": [REFINED]})

    ran = learned_run(workspace, database, [GUESSED], learn_model=model)
    again = learned_run(workspace, database, [GUESSED], learn_model=model)

    assert ran.problems == [] and again.problems == []  # the repeat never asked the model
    with open_memory(workspace, database) as memory:
        entry = only(experiences(memory))
    assert entry["title"] == REFINED["title"]
    assert entry["body"].startswith(f"{REFINED['lesson']}\n\nWhen to apply: {REFINED['when']}")
    assert entry["reinforce_count"] == 1
    node = journal_of(workspace).graph.node(entry["key"])
    assert node is not None
    assert node.metadata["rule_lesson"].startswith("Before File.read, find the file")
    assert (node.metadata["lesson"], node.metadata["reinforced"]) == (REFINED["lesson"], 1)


@pytest.mark.parametrize(
    ("answers", "reason"),
    [
        (
            [{**REFINED, "lesson": "Use Shell.exec to list the reports, then File.read."}],
            "names tools",
        ),
        ([{**REFINED, "lesson": f"Pass the key {SECRET_TOKEN} to File.read."}], "secret"),
        ([{**REFINED, "title": 42}, "not json"], "did not return JSON"),
    ],
)
def test_a_refused_rewrite_keeps_the_rules_text(
    workspace: Path, database: Path, answers: list[Any], reason: str
) -> None:
    model = ScriptedLlm({"Learner.refine": answers})

    ran = learned_run(workspace, database, [GUESSED], learn_model=model)

    problem = only(ran.problems)
    assert problem.startswith('Learning: The rewrite of the failure experience "Locate files')
    assert reason in problem and problem.endswith("the rule's text was kept")
    with open_memory(workspace, database) as memory:
        entry = only(experiences(memory))
    assert entry["title"] == "Locate files before File.read"
    assert lesson_of(entry["body"]).startswith("Before File.read, find the file")


def test_check_refinement_bounds_each_text() -> None:
    rule = candidate(MARCH, "run-1")
    assert check_refinement(rule, {**REFINED, "lesson": "x" * 401}, None) == (
        None,
        "lesson has 401 characters, not 20 to 400",
    )
    assert check_refinement(rule, {**REFINED, "when": 3}, None) == (None, "when is not text")
    refined, reason = check_refinement(rule, REFINED, None)
    assert reason is None and refined is not None and refined.lesson == REFINED["lesson"]


def test_program_model_means_the_runs_own_provider(database: Path) -> None:
    provider = ScriptedLlm({})
    live = learner_for(agentscript.RunConfig(model=provider, learn_model="program"), database)
    mock = learner_for(agentscript.RunConfig(model="mock", learn_model="program"), database)
    uri = learner_for(agentscript.RunConfig(learn_model="openai://gpt-4.1-mini"), database)

    assert live.learn_model is not None and live.learn_model.llm is provider
    assert mock.learn_model is None
    assert uri.learn_model is not None and uri.learn_model.uri == "openai://gpt-4.1-mini"
    refiner = uri.learn_model.refiner([])
    assert isinstance(refiner, Refiner) and refiner.llm is None
    assert refiner.uri == "openai://gpt-4.1-mini"


RECALLER = """import tool Memory from "memory://workspace"

main agent Recaller {
  main func(input { task string }) {
    Memory.experiences({ task: input.task, limit: 5 })
  }
}
"""


def test_a_program_recalls_the_lessons_through_memory_experiences(
    workspace: Path, database: Path
) -> None:
    failed = learned_run(workspace, database, [GUESSED])
    recalled = learned_run(
        workspace, database, [], task="Sum the data report", source=RECALLER, name="recall.as"
    )

    line = only(recalled.value.splitlines())
    assert line.startswith("- Before File.read, find the file (for example with sh://find)")
    assert line.endswith("(confidence 0.70, 1 run)")
    assert failed.run_id not in line and str(workspace) not in line


def test_the_evidence_says_how_the_run_ended_and_what_was_approved() -> None:
    run = run_record(status="error")
    failure = "Tool File.read (file://workspace) failed: File not found: data.csv"
    trace = execution_trace(run, approvals=[refusal(by="user")], failure=failure)

    lesson = next(c for c in distil(run, trace) if c.kind == "failure")

    assert (lesson.evidence.success, lesson.evidence.approval_trace) == (
        False,
        ("File.write refused (user)",),
    )
    assert f"- run {run.run_id} (failed)" in lesson.body()
    assert "- approvals File.write refused (user)" in lesson.body()
    assert Evidence.from_json(lesson.evidence.to_json()) == lesson.evidence
