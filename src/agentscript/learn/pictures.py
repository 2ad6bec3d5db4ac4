"""Pictures of a run: a self-contained HTML page with the task graph drawn in inline SVG, and a
terminal tree of the tool chain. The page also shows the experiences the run taught, repeated,
confirmed or was blocked by, from the task graph where learning recorded them.

The page loads nothing from anywhere (no scripts, fonts or styles from the network) and shows
only what the graph keeps, which is already summarised; every text is escaped.
"""

from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text
from rich.tree import Tree

from agentscript.learn.execution_trace import ApprovalStep, TaskExecutionTrace, ToolStep
from agentscript.learn.experiences import experience_links
from agentscript.learn.graph import (
    Edge,
    EdgeType,
    Node,
    NodeType,
    build_run_graph,
    run_node_id,
)
from agentscript.learn.journal import Journal, run_trace
from agentscript.learn.journal_store import RunRecord, dumps
from agentscript.learn.sensitive import summarise_text

# Rows of the drawing, top to bottom, and their colours.
LANES: tuple[NodeType, ...] = (
    NodeType.RUN,
    NodeType.AGENT_CALL,
    NodeType.GENERATE,
    NodeType.APPROVAL,
    NodeType.TOOL_CALL,
    NodeType.TOOL_RESULT,
    NodeType.FILE,
    NodeType.EPISODE,
    NodeType.EXPERIENCE,
)
NODE_COLOURS: dict[NodeType, str] = {
    NodeType.RUN: "#394b59",
    NodeType.AGENT_CALL: "#5c7cfa",
    NodeType.GENERATE: "#7950f2",
    NodeType.APPROVAL: "#f59f00",
    NodeType.TOOL_CALL: "#2b8a3e",
    NodeType.TOOL_RESULT: "#66a80f",
    NodeType.FILE: "#868e96",
    NodeType.EPISODE: "#1098ad",
    NodeType.EXPERIENCE: "#d6336c",
}
EDGE_COLOURS: dict[EdgeType, str] = {
    EdgeType.HIERARCHY: "#ced4da",
    EdgeType.REFERENCE: "#868e96",
    EdgeType.DEPENDENCY: "#e8590c",
    EdgeType.CAUSAL: "#c92a2a",
    EdgeType.TEMPORAL: "#1971c2",
}
# Beyond this many nodes the drawing shows the first ones and says how many it left out.
MAX_DRAWN = 300
_BOX_W, _BOX_H, _STEP_X, _STEP_Y, _MARGIN = 150, 34, 170, 70, 20


@dataclass(frozen=True, slots=True)
class RunPicture:
    """What both pictures draw: the run, its graph (its own nodes and the files it touched),
    its execution trace and the EXPERIENCE nodes of the task graph its episode links to."""

    run: RunRecord
    nodes: list[Node]
    edges: list[Edge]
    trace: TaskExecutionTrace
    experiences: list[Node]


def run_picture(journal: Journal, reference: str) -> RunPicture:
    """Gather a run's picture. The graph is built from the journal, so it shows the run as it
    happened (also while it runs, or after decay pruned its nodes from the task graph); the
    experiences come from the task graph, where learning linked them to the run's episode."""
    trace = run_trace(journal, reference)
    run = journal.resolve(trace.run_id)
    graph = build_run_graph(run, journal.store.entries(run.run_id), trace.status)
    links = experience_links(journal.graph, run.run_id)
    experiences = [link.node for link in links]
    return RunPicture(
        run,
        [*graph.nodes, *experiences],
        [*graph.edges, *(link.edge for link in links)],
        trace,
        experiences,
    )


def render_run_html(journal: Journal, reference: str, path: str | Path) -> Path:
    """Write the run's page to `path` and return it."""
    picture = run_picture(journal, reference)
    target = Path(path)
    target.write_text(run_html(picture), encoding="utf-8")
    return target


def run_html(picture: RunPicture) -> str:
    run, trace = picture.run, picture.trace
    title = f"Run {run.run_id}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{_e(title)} <span class='status {_e(trace.status)}'>{_e(trace.status)}</span></h1>",
        _summary(run, trace),
        "<h2>Task graph</h2>",
        _svg(picture.nodes, picture.edges),
        _legend(),
        "<h2>Tool chain</h2>",
        _tool_table(trace),
        "<h2>Approvals</h2>",
        _approval_table(trace),
        "<h2>Experiences</h2>",
        _experience_table(picture.experiences),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def tool_chain_tree(picture: RunPicture) -> Tree:
    """The run's agent calls as a tree with each tool call in order under the call that made
    it: its result, the files it touched and the approval it needed. Refused approvals show
    where the call would have been."""
    run, trace = picture.run, picture.trace
    root = Tree(
        Text.assemble((f"run {run.run_id}", "bold"), " ", _status_text(trace.status)),
        guide_style="dim",
    )
    by_id = {node.node_id: node for node in picture.nodes}
    children: dict[str, list[Node]] = {}
    for edge in picture.edges:
        if edge.edge_type is EdgeType.HIERARCHY and edge.target in by_id:
            children.setdefault(edge.source, []).append(by_id[edge.target])
    steps = {step["pair_id"]: step for step in trace.tool_chain}
    decisions = {step["approval_id"]: step for step in trace.approval_trace}

    def lines(node_id: str) -> list[tuple[Text, list[Any]]]:
        """The tree below a node, leaving out agent calls that used no tool."""
        found: list[tuple[Text, list[Any]]] = []
        for child in sorted(children.get(node_id, []), key=lambda node: node.seq):
            if child.node_type is NodeType.AGENT_CALL:
                below = lines(child.node_id)
                if below:
                    label = Text(f"agent {child.label}", style="bold")
                    if child.metadata.get("ok") is False:
                        label.append(" failed", style="red")
                    found.append((label, below))
            elif child.node_type is NodeType.TOOL_CALL:
                step = steps.get(int(child.metadata.get("source_event_id", -1)))
                found.append((_tool_text(child, step, decisions), []))
            elif (
                child.node_type is NodeType.APPROVAL and child.metadata.get("decision") == "refused"
            ):
                tool, by = child.metadata.get("tool_name"), child.metadata.get("by")
                found.append((Text(f"{tool} refused ({by})", style="red"), []))
        return found

    def add(branch: Tree, below: list[tuple[Text, list[Any]]]) -> None:
        for label, more in below:
            add(branch.add(label), more)

    add(root, lines(run_node_id(run.run_id)))
    if trace.failure_reason:
        root.add(Text(trace.failure_reason, style="red"))
    return root


# ----------------------------------------------------------------------------- terminal


def _status_text(status: str) -> Text:
    style = {"ok": "green", "error": "red", "interrupted": "yellow"}.get(status, "cyan")
    return Text(status, style=style)


def _tool_text(node: Node, step: ToolStep | None, decisions: dict[str, ApprovalStep]) -> Text:
    order = int(node.metadata.get("order", 0)) + 1
    text = Text(f"{order}. {node.label}", style="bold")
    if step is None:
        return text
    text.append("  ok" if step["ok"] else "  failed", style="green" if step["ok"] else "red")
    if step["files"]:
        text.append("  " + ", ".join(step["files"]), style="cyan")
    approval = decisions.get(step["approval_id"] or "")
    if approval is not None:
        text.append(f"  [{approval['decision']} by {approval['by']}]", style="yellow")
    return text


# ----------------------------------------------------------------------------- HTML


_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #212529; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
.status { font-size: 13px; padding: 2px 8px; border-radius: 10px; color: #fff; background: #495057; }
.status.ok { background: #2b8a3e; } .status.error { background: #c92a2a; }
.status.interrupted { background: #e67700; }
table { border-collapse: collapse; } td, th { border: 1px solid #dee2e6; padding: 4px 8px;
  text-align: left; vertical-align: top; }
code { font-size: 12px; white-space: pre-wrap; word-break: break-all; }
.graph { overflow-x: auto; border: 1px solid #dee2e6; }
.legend span { display: inline-block; margin-right: 14px; }
.swatch { display: inline-block; width: 12px; height: 12px; margin-right: 4px;
  vertical-align: middle; }
""".strip()


def _e(value: Any) -> str:
    return html.escape(value if isinstance(value, str) else dumps(value), quote=True)


def _summary(run: RunRecord, trace: TaskExecutionTrace) -> str:
    rows = [
        ("program", summarise_text(run.program, run.workspace) if run.program else "-"),
        ("entry", run.entry or "main"),
        ("goal", trace.goal),
        ("result", trace.result),
        ("success", trace.success),
        ("failure", trace.failure_reason or "-"),
        ("repair attempts", trace.retry_count),
        ("events", run.events),
    ]
    cells = "".join(
        f"<tr><th>{_e(name)}</th><td><code>{_e(value)}</code></td></tr>" for name, value in rows
    )
    return f"<table>{cells}</table>"


def _tool_table(trace: TaskExecutionTrace) -> str:
    if not trace.tool_chain:
        return "<p>No tool calls.</p>"
    head = "<tr><th>#</th><th>tool</th><th>arguments</th><th>ok</th><th>files</th><th>approval</th></tr>"
    rows = [
        "<tr>"
        f"<td>{index}</td><td>{_e(step['tool'])}</td><td><code>{_e(step['args'])}</code></td>"
        f"<td>{'yes' if step['ok'] else 'no'}</td><td>{_e(', '.join(step['files']))}</td>"
        f"<td>{_e(step['approval_id'] or '-')}</td>"
        "</tr>"
        for index, step in enumerate(trace.tool_chain, start=1)
    ]
    return f"<table>{head}{''.join(rows)}</table>"


def _approval_table(trace: TaskExecutionTrace) -> str:
    if not trace.approval_trace:
        return "<p>No approvals.</p>"
    head = "<tr><th>id</th><th>tool</th><th>risk</th><th>decision</th><th>mode</th><th>by</th></tr>"
    rows = [
        "<tr>"
        f"<td>{_e(step['approval_id'])}</td><td>{_e(step['tool'])}</td>"
        f"<td>{_e(step['risk'] or '-')}</td><td>{_e(step['decision'])}</td>"
        f"<td>{_e(step['mode'] or '-')}</td><td>{_e(step['by'] or '-')}</td>"
        "</tr>"
        for step in trace.approval_trace
    ]
    return f"<table>{head}{''.join(rows)}</table>"


def _experience_table(experiences: list[Node]) -> str:
    """What the run taught or repeated: the lesson as the task graph keeps it (summarised
    before it was stored), its status and how many runs it stands on."""
    if not experiences:
        return "<p>No experiences.</p>"
    head = "<tr><th>kind</th><th>lesson</th><th>status</th><th>confidence</th><th>runs</th></tr>"
    rows = [
        "<tr>"
        f"<td>{_e(node.metadata.get('kind', '-'))}</td>"
        f"<td><b>{_e(node.label)}</b><br>{_e(node.metadata.get('lesson', ''))}</td>"
        f"<td>{_e(node.metadata.get('status', '-'))}</td>"
        f"<td>{_e(node.metadata.get('confidence', '-'))}</td>"
        f"<td>{_e(node.metadata.get('run_count', 0))}</td>"
        "</tr>"
        for node in experiences
    ]
    return f"<table>{head}{''.join(rows)}</table>"


def _legend() -> str:
    nodes = "".join(
        f"<span><i class='swatch' style='background:{NODE_COLOURS[lane]}'></i>{_e(lane.value)}</span>"
        for lane in LANES
    )
    edges = "".join(
        f"<span><i class='swatch' style='background:{colour}'></i>{_e(edge.value)}</span>"
        for edge, colour in EDGE_COLOURS.items()
    )
    return f"<p class='legend'>{nodes}</p><p class='legend'>{edges}</p>"


def _svg(nodes: list[Node], edges: list[Edge]) -> str:
    """Nodes in lanes by type, left to right in the order the run recorded them. A FILE node
    stands under the first result that touched it, an EXPERIENCE node under the episode that
    links to it; several under one node go side by side."""
    below = (NodeType.FILE, NodeType.EXPERIENCE)
    drawn = sorted(
        (node for node in nodes if node.node_type not in below),
        key=lambda node: (node.seq, LANES.index(node.node_type) if node.node_type in LANES else 99),
    )
    left_out = max(0, len(drawn) - MAX_DRAWN)
    drawn = drawn[:MAX_DRAWN]
    columns: dict[int, int] = {}
    for node in drawn:
        columns.setdefault(node.seq, len(columns))
    position: dict[str, tuple[int, int]] = {}
    for node in drawn:
        position[node.node_id] = (columns[node.seq], LANES.index(node.node_type))
    types = {node.node_id: node.node_type for node in nodes}
    placed: Counter[tuple[str, NodeType]] = Counter()
    for edge in edges:
        kind = types.get(edge.target)
        if (
            edge.edge_type is EdgeType.REFERENCE
            and edge.source in position
            and kind in below
            and edge.target not in position
        ):
            assert kind is not None
            column = position[edge.source][0] + placed[edge.source, kind]
            placed[edge.source, kind] += 1
            position[edge.target] = (column, LANES.index(kind))
    shown = {node.node_id: node for node in nodes if node.node_id in position}
    span = max((column for column, _ in position.values()), default=0) + 1
    width = _MARGIN * 2 + _STEP_X * span - (_STEP_X - _BOX_W)
    height = _MARGIN * 2 + _STEP_Y * len(LANES)

    def centre(node_id: str) -> tuple[float, float]:
        column, lane = position[node_id]
        return (_MARGIN + column * _STEP_X + _BOX_W / 2, _MARGIN + lane * _STEP_Y + _BOX_H / 2)

    svg = [
        f'<svg width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="task graph">'
    ]
    for lane_index, lane in enumerate(LANES):
        y = _MARGIN + lane_index * _STEP_Y - 6
        svg.append(f'<text x="4" y="{y}" font-size="10" fill="#adb5bd">{_e(lane.value)}</text>')
    for edge in edges:
        if edge.source not in position or edge.target not in position:
            continue
        (x1, y1), (x2, y2) = centre(edge.source), centre(edge.target)
        bend = (y2 - y1) / 2 if y1 != y2 else -_STEP_Y / 2
        svg.append(
            f'<path d="M{x1:.0f},{y1:.0f} C{x1:.0f},{y1 + bend:.0f} {x2:.0f},{y2 - bend:.0f} '
            f'{x2:.0f},{y2:.0f}" fill="none" stroke="{EDGE_COLOURS[edge.edge_type]}" '
            f'stroke-width="1.5" opacity="0.8"><title>{_e(edge.edge_type.value)}</title></path>'
        )
    for node_id, node in shown.items():
        column, row = position[node_id]
        x, y = _MARGIN + column * _STEP_X, _MARGIN + row * _STEP_Y
        label = node.label if len(node.label) <= 22 else node.label[:21] + "…"
        tip = f"{node.node_type.value}: {node.label}\n{dumps(node.metadata)[:600]}"
        svg.append(
            f"<g><title>{_e(tip)}</title>"
            f'<rect x="{x}" y="{y}" width="{_BOX_W}" height="{_BOX_H}" rx="6" '
            f'fill="{NODE_COLOURS[node.node_type]}"/>'
            f'<text x="{x + 8}" y="{y + 21}" font-size="12" fill="#fff">{_e(label)}</text></g>'
        )
    svg.append("</svg>")
    note = f"<p>{left_out} more nodes are not drawn.</p>" if left_out else ""
    return f"<div class='graph'>{''.join(svg)}</div>{note}"
