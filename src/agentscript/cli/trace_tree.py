"""The trace as a tree a person reads: what the agent did, step by step, in a few lines.

Built from the trace JSON alone (a run's result, a trace file, a journal), so every view of a
run draws the same tree. Agent calls and `parallel for` iterations nest as the trace nests them;
loop rounds nest between their markers (`for` / `loop` events open a round, `loop_end` closes the
loop). Each line is short: generates show their result, attempts ("attempt 2/3") and why earlier
attempts failed, tokens and duration; tools show their result in brief.

`tree_lines` gives stable plain text (pipes, files, tests); `print_tree` draws it with rich
colours when the stream is a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from agentscript.runtime.jsjson import stringify

if TYPE_CHECKING:
    from rich.tree import Tree

_CUT = 64
_FIELD_CUT = 20


@dataclass(slots=True)
class Node:
    """One line of the tree: what happened (`label`), its kind for colour, facts shown dimmed
    after it (attempts, tokens, duration), whether it failed, and what happened inside it."""

    label: str
    kind: str = ""
    facts: list[str] = field(default_factory=list)
    failed: bool = False
    children: list[Node] = field(default_factory=list)

    def text(self) -> str:
        mark = "✗ " if self.failed else ""
        facts = f"  [{', '.join(self.facts)}]" if self.facts else ""
        return f"{mark}{self.label}{facts}"


# ----------------------------------------------------------------------------- short values


def brief(value: Any, limit: int = 96, field_room: int = _FIELD_CUT) -> str:
    """A value in one short line: strings quoted, objects as `{key: value, …}` with each
    string field cut to `field_room`, long lists as their length, all cut to `limit`."""
    text = _brief(value, 0, field_room)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _brief(value: Any, depth: int, field_room: int) -> str:
    if isinstance(value, str):
        # Inside an object each field gets a little room, so every field stays visible.
        room = _CUT if depth == 0 else field_room
        one_line = " ".join(value.split())
        return stringify(one_line if len(one_line) <= room else one_line[: room - 1] + "…")
    if isinstance(value, list):
        if depth > 0 or len(value) > 3:
            return f"[{len(value)} item{'' if len(value) == 1 else 's'}]"
        return "[" + ", ".join(_brief(item, depth + 1, field_room) for item in value) + "]"
    if isinstance(value, dict):
        if depth > 0:
            return "{…}"
        fields = (f"{key}: {_brief(item, 1, field_room)}" for key, item in value.items())
        return "{" + ", ".join(fields) + "}"
    return stringify(value)


def _tokens(usage: Any) -> int:
    if not isinstance(usage, dict):
        return 0
    return int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)


def duration(ms: Any) -> str:
    """`12 ms` or `1.4 s`."""
    if not isinstance(ms, int | float):
        return ""
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def _timing(data: dict[str, Any]) -> list[str]:
    shown = duration(data.get("duration_ms"))
    return [shown] if shown else []


# ----------------------------------------------------------------------------- building


def build_tree(trace: list[dict[str, Any]]) -> list[Node]:
    """The top-level nodes of a trace."""
    return _Builder().build(trace)


class _Builder:
    """Walks one event list, keeping the loops that are open so rounds nest under them."""

    def build(self, trace: list[dict[str, Any]]) -> list[Node]:
        top: list[Node] = []
        # Open loops, innermost last: (site, the loop's node, the current round's node).
        loops: list[tuple[str, Node, Node]] = []
        for event in trace:
            kind = str(event.get("kind"))
            data = event.get("data") or {}
            site = str(data.get("loop", ""))
            if kind in ("for", "loop") and site:
                open_sites = [open_site for open_site, _, _ in loops]
                if site in open_sites:
                    del loops[open_sites.index(site) + 1 :]
                    _, loop_node, _ = loops.pop()
                else:
                    loop_node = Node(_loop_label(kind, data), kind="loop")
                    (loops[-1][2].children if loops else top).append(loop_node)
                round_node = Node(_round_label(kind, data), kind="round")
                loop_node.children.append(round_node)
                loops.append((site, loop_node, round_node))
                continue
            if kind == "loop_end":
                open_sites = [open_site for open_site, _, _ in loops]
                if site in open_sites:
                    _, loop_node, _ = loops[open_sites.index(site)]
                    del loops[open_sites.index(site) :]
                    rounds = int(data.get("rounds") or len(loop_node.children))
                    loop_node.facts = [
                        f"{rounds} round{'' if rounds == 1 else 's'}",
                        *_bound(data),
                        *_timing(data),
                    ]
                continue
            if kind == "approval" and data.get("decision") == "pending":
                continue  # the decision follows as its own event
            (loops[-1][2].children if loops else top).append(self.node(kind, data))
        return top

    def node(self, kind: str, data: dict[str, Any]) -> Node:
        describe = _DESCRIBERS.get(kind)
        if describe is not None:
            return describe(self, data)
        return Node(kind, kind=kind)


def _loop_label(kind: str, data: dict[str, Any]) -> str:
    if kind == "for":
        return f"for {data.get('item', '?')}"
    return str(data.get("statement") or "loop")


def _bound(data: dict[str, Any]) -> list[str]:
    """A `loop until` that ran out of rounds: its condition never held before a round."""
    if data.get("bound_reached") is not True:
        return []
    return [f"stopped at its bound (max {data.get('limit', '?')}), condition never met"]


def _round_label(kind: str, data: dict[str, Any]) -> str:
    index = data.get("index", "?")
    if kind == "for":
        return f"[{index}] {brief(data.get('value'), 48)}"
    return f"round {int(index) + 1 if isinstance(index, int) else index}"


def _agent(builder: _Builder, data: dict[str, Any]) -> Node:
    args = data.get("args") or []
    shown_args = ", ".join(brief(arg, 40) for arg in args)
    label = f"{data.get('agent', '?')}.{data.get('function', '?')}({shown_args})"
    failed = "error" in data
    if failed:
        label += f" failed: {brief(data.get('error'), 80)}"
    else:
        label += f" → {brief(data.get('result'))}"
    return Node(label, "agent", _timing(data), failed, builder.build(list(data.get("trace") or [])))


def _generate(builder: _Builder, data: dict[str, Any]) -> Node:
    failed = data.get("ok") is False
    attempts = int(data.get("attempts") or 1)
    allowed = int(data.get("max_attempts") or attempts)
    instruction = brief(data.get("instruction"), 40)
    if failed:
        label = f"generate {instruction} failed: {brief(data.get('error'), 80)}"
    else:
        label = f"generate {instruction} → {brief(data.get('result'))}"
    facts: list[str] = []
    if attempts > 1 or failed or allowed > 1:
        facts.append(f"attempt {attempts}/{allowed}")
    tokens = _tokens(data.get("usage"))
    if tokens:
        facts.append(f"{tokens:,} tokens")
    facts.extend(_timing(data))
    errors = list(data.get("errors") or [])
    repaired = errors[:-1] if failed else errors
    children = [
        Node(f"attempt {number}/{allowed} failed: {brief(error, 80)}", "repair", failed=True)
        for number, error in enumerate(repaired, start=1)
    ]
    return Node(label, "generate", facts, failed, children)


def _tool(builder: _Builder, data: dict[str, Any]) -> Node:
    label = f"tool {data.get('tool', '?')}.{data.get('method', '?')} → {brief(data.get('result'))}"
    facts = _timing(data)
    effects = data.get("effects")
    if isinstance(effects, list) and effects:
        facts.insert(0, f"{len(effects)} effect{'' if len(effects) == 1 else 's'}")
    return Node(label, "tool", facts)


def _memory(builder: _Builder, data: dict[str, Any]) -> Node:
    operation = data.get("operation", "?")
    if operation == "query":
        outcome = f"{data.get('count', 0)} records"
    else:
        outcome = f"stored {brief(data.get('args'), 40)}"
    return Node(f"memory {data.get('memory', '?')}.{operation} → {outcome}", "memory")


def _use(builder: _Builder, data: dict[str, Any]) -> Node:
    label = f"use {data.get('source', '?')}"
    budget = data.get("budget")
    if isinstance(budget, dict) and budget.get("amount") is not None:
        label += f" max {budget['amount']}{budget.get('unit') or ''}"
    if data.get("label"):
        label += f" as {stringify(data['label'])}"
    return Node(label, "use")


def _input(builder: _Builder, data: dict[str, Any]) -> Node:
    return Node(f"input {data.get('path', '?')} = {brief(data.get('value'))}", "input")


def _approval(builder: _Builder, data: dict[str, Any]) -> Node:
    decision = str(data.get("decision", "?"))
    by = f" by {data['by']}" if data.get("by") else ""
    label = f"approval {data.get('tool', '?')}.{data.get('method', '?')} {decision}{by}"
    return Node(label, "approval", failed=decision != "approved")


def _retry(builder: _Builder, data: dict[str, Any]) -> Node:
    label = f"retry {data.get('provider', '?')} after {data.get('status', '?')}"
    return Node(label, "llm_retry", [f"waited {data.get('wait_ms', '?')} ms"])


def _wait(builder: _Builder, data: dict[str, Any]) -> Node:
    label = f"wait for the limit {data.get('limit', '?')}"
    return Node(label, "llm_retry", [f"waited {data.get('wait_ms', '?')} ms"])


def _parallel_for(builder: _Builder, data: dict[str, Any]) -> Node:
    label = f"parallel for {data.get('item', '?')} in {data.get('source', '?')}"
    facts = [f"{data.get('items', '?')} items", f"concurrency {data.get('concurrency', '?')}"]
    children = [
        Node(
            f"[{iteration.get('index')}] {brief(iteration.get('input'), 40)}"
            + (
                f" → {brief(iteration.get('result'))}"
                if iteration.get("ok")
                else f" failed: {brief(iteration.get('error'), 80)}"
            ),
            "round",
            failed=not iteration.get("ok"),
            children=builder.build(list(iteration.get("trace") or [])),
        )
        for iteration in data.get("iterations") or []
    ]
    return Node(label, "parallel_for", facts + _timing(data), data.get("ok") is False, children)


_DESCRIBERS = {
    "agent": _agent,
    "generate": _generate,
    "tool": _tool,
    "memory": _memory,
    "use": _use,
    "input": _input,
    "approval": _approval,
    "llm_retry": _retry,
    "llm_wait": _wait,
    "parallel_for": _parallel_for,
}


# ----------------------------------------------------------------------------- the run


def run_summary(trace: list[dict[str, Any]], usage: dict[str, float | int] | None) -> str:
    """The facts of the whole run for the root line: generates, tool calls, tokens, time."""
    counts = {"generate": 0, "tool": 0}
    tokens = 0

    def walk(events: list[Any]) -> None:
        nonlocal tokens
        for event in events:
            kind = event.get("kind")
            data = event.get("data") or {}
            if kind in counts:
                counts[kind] += 1
            if kind == "generate":
                tokens += _tokens(data.get("usage"))
            walk(list(data.get("trace") or []))
            for iteration in data.get("iterations") or []:
                walk(list(iteration.get("trace") or []))

    walk(trace)
    if usage:
        tokens = int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
    parts = [
        f"{counts['generate']} generate{'' if counts['generate'] == 1 else 's'}",
        f"{counts['tool']} tool call{'' if counts['tool'] == 1 else 's'}",
        f"{tokens:,} tokens",
    ]
    if usage and "seconds" in usage:
        parts.append(duration(float(usage["seconds"]) * 1000))
    return ", ".join(parts)


def run_tree(
    title: str, trace: list[dict[str, Any]], usage: dict[str, float | int] | None = None
) -> Node:
    """The whole run as one tree: `title` (the entry call) over the top-level events."""
    return Node(title, "run", [run_summary(trace, usage)], children=build_tree(trace))


def tree_lines(root: Node) -> list[str]:
    """Plain text with box-drawing guides, one line per node."""
    lines = [root.text()]

    def add(children: list[Node], prefix: str) -> None:
        for position, child in enumerate(children):
            last = position == len(children) - 1
            lines.append(prefix + ("└─ " if last else "├─ ") + child.text())
            add(child.children, prefix + ("   " if last else "│  "))

    add(root.children, "")
    return lines


def print_tree(root: Node, stream: TextIO) -> None:
    """Draw the tree: colours and rich guides at a terminal, plain lines anywhere else."""
    if not stream.isatty():
        stream.write("\n".join(tree_lines(root)) + "\n")
        return
    from rich.console import Console
    from rich.tree import Tree

    tree = Tree(_styled(root), guide_style="dim")
    _add_rich(tree, root.children)
    Console(file=stream, highlight=False, soft_wrap=True).print(tree)


def _add_rich(parent: Tree, children: list[Node]) -> None:
    for child in children:
        _add_rich(parent.add(_styled(child)), child.children)


_STYLES = {
    "run": "bold",
    "agent": "bold magenta",
    "generate": "cyan",
    "tool": "yellow",
    "memory": "green",
    "input": "blue",
    "loop": "bold",
    "round": "dim",
    "use": "dim",
    "approval": "red",
    "parallel_for": "bold magenta",
    "llm_retry": "yellow",
    "repair": "red",
}


def _styled(node: Node) -> Any:
    from rich.text import Text

    text = Text()
    if node.failed:
        text.append("✗ ", style="bold red")
    text.append(node.label, style="red" if node.failed else _STYLES.get(node.kind, ""))
    if node.facts:
        text.append(f"  [{', '.join(node.facts)}]", style="dim")
    return text
