"""Where the task graph's nodes go on the page: a tidy tree, left to right.

The graph of a run is a tree (hierarchy edges from the run to agent calls, generates, approvals
and tool calls; each tool result under its call; a file under the first result that touched it;
experiences under the episode) plus a few cross links (temporal, dependency, causal, later
references). The tree is drawn as such: one column per depth, every leaf on a row of its own
and each parent centred on its children, so labels never overlap and tree edges never cross.
Cross links are drawn too, but as arcs the page can hide.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from agentscript.learn.graph import Edge, EdgeType, Node, NodeType

COLUMN_WIDTH = 210
ROW_HEIGHT = 30
MARGIN = 20
LABEL_CHARACTERS = 28


@dataclass(frozen=True, slots=True)
class PlacedNode:
    node: Node
    x: float
    y: float
    step: int | None

    def to_json(self) -> dict[str, Any]:
        label = self.node.label
        return {
            "id": self.node.node_id,
            "type": self.node.node_type.value,
            "label": label,
            "short": label
            if len(label) <= LABEL_CHARACTERS
            else label[: LABEL_CHARACTERS - 1] + "…",
            "x": self.x,
            "y": self.y,
            "step": self.step,
        }


@dataclass(frozen=True, slots=True)
class GraphLayout:
    nodes: list[PlacedNode]
    tree_edges: list[tuple[str, str]]
    cross_edges: list[Edge]
    width: float
    height: float

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": [node.to_json() for node in self.nodes],
            "tree": [list(edge) for edge in self.tree_edges],
            "links": [
                {"source": e.source, "target": e.target, "type": e.edge_type.value}
                for e in self.cross_edges
            ],
            "width": self.width,
            "height": self.height,
        }


def lay_out(nodes: list[Node], edges: list[Edge]) -> GraphLayout:
    """Place every node; the first RUN node is the root (nodes no edge reaches hang under it)."""
    by_id = {node.node_id: node for node in nodes}
    parent_of: dict[str, str] = {}
    tree_edges: list[tuple[str, str]] = []
    cross: list[Edge] = []

    def preference(edge: Edge) -> int:
        target = by_id.get(edge.target)
        if (
            edge.edge_type is EdgeType.CAUSAL
            and target
            and target.node_type is NodeType.TOOL_RESULT
        ):
            return -1  # a result hangs under its call rather than beside it
        return _TREE_PREFERENCE.get(edge.edge_type, 9)

    for edge in sorted(edges, key=preference):
        if edge.source not in by_id or edge.target not in by_id:
            continue
        if (
            edge.edge_type in _TREE_TYPES
            and edge.target not in parent_of
            and by_id[edge.target].node_type is not NodeType.RUN
            and not _is_ancestor(edge.target, edge.source, parent_of)
        ):
            parent_of[edge.target] = edge.source
            tree_edges.append((edge.source, edge.target))
        elif edge.edge_type is not EdgeType.HIERARCHY:  # a second parent adds nothing to see
            cross.append(edge)
    roots = [node for node in nodes if node.node_id not in parent_of]
    children: dict[str, list[Node]] = defaultdict(list)
    for node in nodes:
        if node.node_id in parent_of:
            children[parent_of[node.node_id]].append(node)
    for kids in children.values():
        kids.sort(key=lambda n: (n.seq, _TYPE_ORDER.get(n.node_type, 9), n.node_id))
    roots.sort(key=lambda n: (n.node_type is not NodeType.RUN, n.seq, n.node_id))
    placed: dict[str, PlacedNode] = {}
    next_row = 0
    deepest = 0
    # Iterative post-order: a leaf takes the next row, a parent the middle of its children.
    for root in roots:
        stack: list[tuple[Node, int, bool]] = [(root, 0, False)]
        while stack:
            node, depth, expanded = stack.pop()
            kids = children.get(node.node_id, [])
            deepest = max(deepest, depth)
            if kids and not expanded:
                stack.append((node, depth, True))
                stack.extend((kid, depth + 1, False) for kid in reversed(kids))
                continue
            if kids:
                first, last = placed[kids[0].node_id].y, placed[kids[-1].node_id].y
                y = (first + last) / 2
            else:
                y = MARGIN + next_row * ROW_HEIGHT
                next_row += 1
            placed[node.node_id] = PlacedNode(
                node, MARGIN + depth * COLUMN_WIDTH, y, _step_of(node)
            )
    ordered = [placed[node.node_id] for node in nodes if node.node_id in placed]
    return GraphLayout(
        ordered,
        tree_edges,
        cross,
        width=2 * MARGIN + (deepest + 1) * COLUMN_WIDTH,
        height=2 * MARGIN + max(1, next_row) * ROW_HEIGHT,
    )


def _step_of(node: Node) -> int | None:
    event = node.metadata.get("source_event_id")
    return event if isinstance(event, int) else None


def _is_ancestor(candidate: str, node: str, parent_of: dict[str, str]) -> bool:
    """Whether `candidate` is `node` or above it (taking the edge would close a cycle)."""
    current: str | None = node
    while current is not None:
        if current == candidate:
            return True
        current = parent_of.get(current)
    return False


# Edges that may carry the tree, best first: structure, then a result under its call, then a
# file under what touched it.
_TREE_PREFERENCE = {EdgeType.HIERARCHY: 0, EdgeType.CAUSAL: 1, EdgeType.REFERENCE: 2}
_TREE_TYPES = frozenset(_TREE_PREFERENCE)
_TYPE_ORDER = {
    NodeType.AGENT_CALL: 0,
    NodeType.GENERATE: 0,
    NodeType.APPROVAL: 0,
    NodeType.TOOL_CALL: 0,
    NodeType.TOOL_RESULT: 1,
    NodeType.FILE: 2,
    NodeType.EPISODE: 3,
    NodeType.EXPERIENCE: 4,
}
