"""Timeline steps from journal entries, and the task graph's layout."""

from __future__ import annotations

import itertools
from typing import Any

from agentscript.app.run_view.graph_layout import ROW_HEIGHT, lay_out
from agentscript.app.run_view.steps import Step, build_steps, flatten
from agentscript.learn.graph import Edge, EdgeType, Node, NodeType
from agentscript.learn.journal_store import RUN_KIND, JournalEntry


def entry(
    seq: int,
    kind: str,
    event_id: int | None,
    parent: int | None,
    depth: int,
    at: float,
    data: dict[str, Any],
    phase: str = "end",
) -> JournalEntry:
    return JournalEntry("r", seq, phase, kind, event_id, parent, depth, at, data)  # type: ignore[arg-type]


def call(agent: str) -> dict[str, Any]:
    return {"agent": agent, "function": "__main", "args": []}


def test_an_agent_call_holds_its_steps_and_lasts_from_start_to_end() -> None:
    steps = build_steps(
        [
            entry(0, RUN_KIND, None, None, 0, 10.0, {}, phase="start"),
            entry(1, "agent", 1, None, 0, 10.0, call("A"), phase="start"),
            entry(2, "tool", 2, 1, 1, 10.5, {"tool": "T", "method": "m", "duration_ms": 200}),
            entry(3, "agent", 1, None, 0, 11.0, {**call("A"), "result": 1}),
        ]
    )
    (agent,) = steps
    assert agent.duration_ms == 1000 and agent.ok and agent.data["result"] == 1
    (tool,) = agent.children
    assert tool.agent == "A" and tool.duration_ms == 200
    assert abs(tool.start - 10.3) < 1e-9


def test_parallel_iterations_get_their_own_steps_matched_by_content() -> None:
    first = {"source": "x", "budget": None, "label": "one"}
    second = {"source": "x", "budget": None, "label": "two"}
    iterations = [
        {"index": 0, "ok": True, "trace": [{"kind": "use", "data": first}]},
        {"index": 1, "ok": False, "error": "boom", "trace": [{"kind": "use", "data": second}]},
    ]
    steps = build_steps(
        [
            # Iteration events arrive first, one level deeper, in whatever order they ran.
            entry(1, "use", 1, None, 1, 1.0, second),
            entry(2, "use", 2, None, 1, 1.1, first),
            entry(
                3,
                "parallel_for",
                3,
                None,
                0,
                1.2,
                {
                    "item": "x",
                    "items": 2,
                    "duration_ms": 300,
                    "ok": False,
                    "iterations": iterations,
                },
            ),
        ]
    )
    (parallel,) = steps
    assert "iterations" not in parallel.data and not parallel.ok
    labels = [[c.data["label"] for c in it.children] for it in parallel.children]
    assert labels == [["one"], ["two"]]
    assert [it.ok for it in parallel.children] == [True, False]
    assert [s.kind for s in flatten(steps)] == [
        "parallel_for",
        "iteration",
        "use",
        "iteration",
        "use",
    ]


def test_a_killed_run_leaves_its_open_call_marked_unfinished() -> None:
    steps = build_steps(
        [
            entry(1, "agent", 1, None, 0, 1.0, call("A"), phase="start"),
            entry(2, "generate", 2, 1, 1, 1.5, {"instruction": "x", "ok": False, "error": "e"}),
        ]
    )
    (agent,) = steps
    assert agent.data["unfinished"] is True
    (generate,) = agent.children
    assert not generate.ok


def node(node_id: str, node_type: NodeType, seq: int) -> Node:
    return Node(node_id, node_type, "r", seq, node_id, 0.0)


def edge(source: str, target: str, edge_type: EdgeType) -> Edge:
    return Edge(source, target, edge_type, "r", 0.0)


def test_the_graph_is_a_tidy_tree_with_results_under_their_calls() -> None:
    nodes = [
        node("run", NodeType.RUN, 0),
        node("call", NodeType.TOOL_CALL, 1),
        node("result", NodeType.TOOL_RESULT, 1),
        node("next", NodeType.TOOL_CALL, 2),
        node("file", NodeType.FILE, 0),
    ]
    edges = [
        edge("run", "call", EdgeType.HIERARCHY),
        edge("run", "result", EdgeType.HIERARCHY),
        edge("call", "result", EdgeType.CAUSAL),
        edge("run", "next", EdgeType.HIERARCHY),
        edge("call", "next", EdgeType.TEMPORAL),
        edge("result", "file", EdgeType.REFERENCE),
    ]
    layout = lay_out(nodes, edges)
    placed = {p.node.node_id: p for p in layout.nodes}
    assert ("call", "result") in layout.tree_edges and ("result", "file") in layout.tree_edges
    assert [(e.source, e.target) for e in layout.cross_edges] == [("call", "next")]
    assert placed["run"].x < placed["call"].x < placed["result"].x < placed["file"].x
    assert placed["next"].y - placed["file"].y == ROW_HEIGHT
    ys = sorted(p.y for p in layout.nodes if p.x == placed["call"].x)
    assert all(b - a >= ROW_HEIGHT for a, b in itertools.pairwise(ys))


def test_flatten_keeps_parents_before_children() -> None:
    leaf = Step(2, "use", "- use x", 1, None, 0.0, 0.0, True, {})
    root = Step(1, "agent", "- agent A", None, "A", 0.0, 0.0, True, {}, [leaf])
    assert [s.id for s in flatten([root])] == [1, 2]
