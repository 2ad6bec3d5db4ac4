"""The task graph: the shape of a known run, idempotent ingestion, queries, decay without
compounding, re-basing on every update, pruning by type and Hebbian links between tools."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentscript.learn.graph import (
    DAY,
    HALF_LIVES,
    HEBBIAN_RATE,
    REINFORCE_RATE,
    TOOL_LINK_HALF_LIFE,
    EdgeType,
    IngestReport,
    NodeType,
    decayed,
    file_node_id,
    run_node_id,
    strengthened,
)
from agentscript.learn.journal import Journal
from learn_support import FixedClock, JournaledRun, journaled_run

UNDO = """import llm Model from "openai://gpt-4.1-mini"
import tool File from "file://workspace"

main agent A {
  model Model
  role "r"
  description "d"
  main func() {
    w = File.write({ path: "a.md", content: "first" })
    u = File.undo(w.effects)
    return u.ok
  }
}
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def journal(tmp_path: Path, clock: FixedClock) -> Iterator[Journal]:
    opened = Journal.open(tmp_path / "journal" / "runs.db", clock)
    yield opened
    opened.close()


@pytest.fixture
def run(journal: Journal, workspace: Path) -> JournaledRun:
    return journaled_run(journal, workspace)


def counts(journal: Journal, run_id: str) -> tuple[dict[str, int], dict[str, int]]:
    nodes = Counter(node.node_type.value for node in journal.graph.nodes(run_id=run_id))
    files = {edge.target for edge in journal.graph.edges(run_id) if edge.target.startswith("file:")}
    nodes["file"] = len(files)
    edges = Counter(edge.edge_type.value for edge in journal.graph.edges(run_id))
    return dict(nodes), dict(edges)


# ----------------------------------------------------------------------------- shape


def test_graph_shape_of_a_known_run(journal: Journal, run: JournaledRun) -> None:
    nodes, edges = counts(journal, run.run_id)
    assert nodes == {
        "run": 1,
        "episode": 1,
        # Worker.write twice, each calling Checker.check.
        "agent_call": 4,
        # Two drafts, two parallel ideas, the plan.
        "generate": 5,
        # A request and a decision for each of the two writes.
        "approval": 4,
        "tool_call": 3,
        "tool_result": 3,
        # a.md, b.md, and "." that Search.run read.
        "file": 3,
    }
    assert edges == {
        # run->episode, 2 run->Worker, 2 Worker->Checker, 5 generates, 4 approvals, 3 pairs.
        "hierarchy": 1 + 2 + 2 + 5 + 4 + 6,
        # 3 call->result, 2 request->decision, 2 decision->call.
        "causal": 3 + 2 + 2,
        "reference": 3,
        "temporal": 2,
    }


def test_reingesting_a_run_adds_nothing_and_changes_no_weight(
    journal: Journal, run: JournaledRun, clock: FixedClock
) -> None:
    before = journal.graph.nodes()
    links = journal.graph.tool_links(now=clock.now)
    clock.now += 5 * DAY
    record = journal.resolve(run.run_id)
    report = journal.graph.ingest(record, journal.store.entries(run.run_id), "ok")
    assert report == IngestReport(0, 0, 0)
    assert journal.graph.nodes() == before
    assert journal.graph.tool_links(now=clock.now - 5 * DAY) == links


def test_approval_request_decision_and_call_are_a_causal_chain(
    journal: Journal, run: JournaledRun
) -> None:
    graph = journal.graph
    first_write = graph.tool_chain(run.run_id)[0]
    (decision,) = graph.neighbours(first_write.node_id, EdgeType.CAUSAL, "in")
    assert decision.node.metadata["decision"] == "approved"
    (request,) = graph.neighbours(decision.node.node_id, EdgeType.CAUSAL, "in")
    assert request.node.metadata["phase"] == "request"
    assert request.node.metadata["approval_id"] == decision.node.metadata["approval_id"]
    (result,) = graph.neighbours(first_write.node_id, EdgeType.CAUSAL, "out")
    assert result.node.node_type is NodeType.TOOL_RESULT
    assert result.node.metadata["pair_id"] == first_write.metadata["pair_id"]
    assert result.node.metadata["affected_files"] == ["a.md"]


def test_tool_chain_is_in_order_and_linked_by_temporal_edges(
    journal: Journal, run: JournaledRun
) -> None:
    graph = journal.graph
    chain = graph.tool_chain(run.run_id)
    assert [node.label for node in chain] == ["File.write", "File.write", "Search.run"]
    for before, after in itertools.pairwise(chain):
        (step,) = graph.neighbours(before.node_id, EdgeType.TEMPORAL, "out")
        assert step.node.node_id == after.node_id


def test_nodes_by_type_and_hierarchy(journal: Journal, run: JournaledRun) -> None:
    graph = journal.graph
    agents = graph.nodes(NodeType.AGENT_CALL, run.run_id)
    assert [node.label for node in agents] == [
        "Worker.write",
        "Checker.check",
        "Worker.write",
        "Checker.check",
    ]
    below_run = graph.neighbours(run_node_id(run.run_id), EdgeType.HIERARCHY, "out")
    assert Counter(n.node.node_type.value for n in below_run) == {
        "episode": 1,
        "agent_call": 2,
        "generate": 3,
        "tool_call": 1,
        "tool_result": 1,
    }


def test_runs_that_touched_a_file(journal: Journal, workspace: Path, clock: FixedClock) -> None:
    first = journaled_run(journal, workspace)
    clock.now += 60
    second = journaled_run(journal, workspace, UNDO, input={}, name="undo.as")
    graph = journal.graph
    assert graph.runs_touching("a.md") == [first.run_id, second.run_id]
    assert graph.runs_touching(str(workspace / "b.md"), str(workspace)) == [first.run_id]
    assert graph.runs_touching("never.md") == []


def test_undo_depends_on_the_write_it_reverts(journal: Journal, workspace: Path) -> None:
    run = journaled_run(journal, workspace, UNDO, input={})
    graph = journal.graph
    write, undo = graph.tool_chain(run.run_id)
    (dependency,) = graph.neighbours(undo.node_id, EdgeType.DEPENDENCY, "out")
    assert dependency.node.node_id == write.node_id


# ----------------------------------------------------------------------------- weights


def test_decay_halves_per_half_life() -> None:
    assert decayed(1.0, 0.0, 10.0, 10.0) == 0.5
    assert decayed(0.8, 100.0, 10.0, 130.0) == pytest.approx(0.1)
    assert decayed(0.8, 100.0, 10.0, 50.0) == 0.8


def test_strengthening_re_bases_the_weight_at_the_update_time() -> None:
    weight, at = strengthened(1.0, 0.0, 10.0, 10.0, 0.1)
    assert weight == pytest.approx(0.5 + 0.1 * 0.5)
    assert at == 10.0
    # Decay from the new base only: one more half-life halves the re-based weight.
    assert decayed(weight, at, 10.0, 20.0) == pytest.approx(0.275)


def test_an_activation_older_than_the_base_adds_its_decayed_increment() -> None:
    weight, at = strengthened(0.5, 20.0, 10.0, 10.0, 0.2)
    assert weight == pytest.approx(0.5 + 0.2 * 0.5 * 0.5)
    assert at == 20.0


def test_pruning_at_any_interval_never_compounds_decay(
    journal: Journal, run: JournaledRun, clock: FixedClock
) -> None:
    graph = journal.graph
    start = clock.now
    episode = graph.nodes(NodeType.EPISODE, run.run_id)[0]
    for day in range(1, 31):
        graph.decay_and_prune(now=start + day * DAY)
    after = graph.node(episode.node_id)
    assert after is not None
    # Stored weight and base are untouched; read at day 30 it is the closed form.
    assert (after.weight, after.weight_at) == (episode.weight, episode.weight_at)
    expected = 0.5 ** (30 * DAY / HALF_LIVES[NodeType.EPISODE])
    assert after.weight_now(start + 30 * DAY) == pytest.approx(expected)


def test_tool_calls_fade_fast_and_approvals_slowly(
    journal: Journal, run: JournaledRun, clock: FixedClock
) -> None:
    graph = journal.graph
    # 3-day half-life: below 0.05 after 13 days. Agent calls (7 days) are at 0.25, approvals
    # (180 days) still near 0.95.
    report = graph.decay_and_prune(now=clock.now + 14 * DAY)
    left = Counter(node.node_type.value for node in graph.nodes(run_id=run.run_id))
    assert left == {"run": 1, "episode": 1, "agent_call": 4, "approval": 4}
    # Three tool calls and results, five generates.
    assert report.nodes_removed == 3 + 3 + 5
    (approval, *_) = graph.nodes(NodeType.APPROVAL, run.run_id)
    assert approval.weight_now(clock.now + 14 * DAY) > 0.94
    # The edges of removed nodes went with them; approvals keep their request->decision.
    assert Counter(edge.edge_type.value for edge in graph.edges(run.run_id)) == {
        "hierarchy": 1 + 2 + 2 + 4,
        "causal": 2,
    }
    # A week later the agent calls have gone too.
    graph.decay_and_prune(now=clock.now + 35 * DAY)
    left = Counter(node.node_type.value for node in graph.nodes(run_id=run.run_id))
    assert left == {"run": 1, "episode": 1, "approval": 4}


def test_everything_is_pruned_once_faded(
    journal: Journal, run: JournaledRun, clock: FixedClock
) -> None:
    graph = journal.graph
    graph.decay_and_prune(now=clock.now + 3 * 365 * DAY)
    assert graph.nodes() == []
    assert graph.tool_links() == []


def test_a_file_touched_again_is_reinforced(
    journal: Journal, workspace: Path, clock: FixedClock
) -> None:
    journaled_run(journal, workspace)
    first_touch = clock.now
    clock.now += 30 * DAY
    journaled_run(journal, workspace, UNDO, input={}, name="undo.as")
    node = journal.graph.node(file_node_id("a.md"))
    assert node is not None
    faded = decayed(1.0, first_touch, HALF_LIVES[NodeType.FILE], clock.now)
    assert faded == pytest.approx(0.5)
    assert node.weight == pytest.approx(faded + REINFORCE_RATE * (1 - faded))
    assert node.weight_at == clock.now


def test_tools_used_together_strengthen_their_link_once_per_run(
    journal: Journal, workspace: Path, clock: FixedClock
) -> None:
    journaled_run(journal, workspace)
    first = clock.now
    clock.now += 10 * DAY
    journaled_run(journal, workspace)
    links = {(link.first, link.second): link for link, _ in journal.graph.tool_links()}
    assert set(links) == {("File.write", "File.write"), ("File.write", "Search.run")}
    link = links[("File.write", "Search.run")]
    assert link.activations == 2
    faded = decayed(HEBBIAN_RATE, first, TOOL_LINK_HALF_LIFE, clock.now)
    assert link.weight == pytest.approx(faded + HEBBIAN_RATE * (1 - faded))
    assert link.weight_at == clock.now
    ranked = journal.graph.tool_links("Search.run", now=clock.now)
    assert [(found.first, found.second) for found, _ in ranked] == [("File.write", "Search.run")]
