"""The task graph: what runs did, as typed nodes and edges derived from their journal entries.

A run becomes a RUN node with its EPISODE (the execution trace), AGENT_CALL and GENERATE nodes,
a TOOL_CALL / TOOL_RESULT pair per tool event, an APPROVAL node per request and decision, and
FILE nodes shared by every run that touched the file. Node ids come from run and event ids, so
ingesting a run twice adds nothing. Weights fade with a per-type half-life from a base time that
moves with every update (weight(t) = weight * 0.5 ** ((t - weight_at) / half_life)), so decay
never compounds; tools used one after the other strengthen a link between them (Hebbian).
The graph holds summaries (see `sensitive`), never the raw payloads the journal keeps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from agentscript.learn.journal_store import RUN_KIND, JournalEntry, RunRecord, RunStatus
from agentscript.learn.sensitive import summarise, summarise_path, summarise_text

if TYPE_CHECKING:
    from agentscript.learn.graph_store import GraphStore


class NodeType(StrEnum):
    RUN = "run"
    AGENT_CALL = "agent_call"
    GENERATE = "generate"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    APPROVAL = "approval"
    EPISODE = "episode"
    EXPERIENCE = "experience"
    FILE = "file"


class EdgeType(StrEnum):
    HIERARCHY = "hierarchy"
    REFERENCE = "reference"
    DEPENDENCY = "dependency"
    CAUSAL = "causal"
    TEMPORAL = "temporal"


HOUR = 3600.0
DAY = 24 * HOUR
# How fast each kind of memory fades: single tool calls and generates within days, the record
# of a run within a month, approvals (the user's standing preferences) and experiences slowly.
HALF_LIVES: dict[NodeType, float] = {
    NodeType.TOOL_CALL: 3 * DAY,
    NodeType.TOOL_RESULT: 3 * DAY,
    NodeType.GENERATE: 3 * DAY,
    NodeType.AGENT_CALL: 7 * DAY,
    NodeType.RUN: 30 * DAY,
    NodeType.FILE: 30 * DAY,
    NodeType.EPISODE: 90 * DAY,
    NodeType.APPROVAL: 180 * DAY,
    NodeType.EXPERIENCE: 365 * DAY,
}
# Edges that fade on their own: a file reference lasts as long as a file node does. The
# others (hierarchy, causal, temporal, dependency) are the structure of a run: they do not
# fade, and go when one of their nodes goes.
EDGE_HALF_LIVES: dict[EdgeType, float] = {EdgeType.REFERENCE: HALF_LIVES[NodeType.FILE]}
TOOL_LINK_HALF_LIFE = 30 * DAY
# Below this weight a node, edge or tool link is pruned.
PRUNE_BELOW = 0.05
# Hebbian step for tools used one after the other in a run (zulong's η).
HEBBIAN_RATE = 0.1
# How far a FILE node is restored towards 1 when another run touches it.
REINFORCE_RATE = 0.5

Direction = Literal["out", "in", "both"]


@dataclass(frozen=True, slots=True)
class Node:
    node_id: str
    node_type: NodeType
    run_id: str | None
    # The journal `seq` of the entry the node came from (orders a run's nodes).
    seq: int
    label: str
    created_at: float
    weight: float = 1.0
    # When `weight` was true; decay is computed from here.
    weight_at: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def half_life(self) -> float:
        return HALF_LIVES[self.node_type]

    def weight_now(self, now: float) -> float:
        return decayed(self.weight, self.weight_at, self.half_life, now)


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    edge_type: EdgeType
    run_id: str | None
    created_at: float
    weight: float = 1.0
    weight_at: float = 0.0
    # None: structural, does not fade on its own.
    half_life: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.source, self.target, self.edge_type.value)

    def weight_now(self, now: float) -> float:
        if self.half_life is None:
            return self.weight
        return decayed(self.weight, self.weight_at, self.half_life, now)


@dataclass(frozen=True, slots=True)
class ToolLink:
    """Two tools used one right after the other (`first` then `second`), across runs."""

    first: str
    second: str
    weight: float
    weight_at: float
    activations: int

    def weight_now(self, now: float) -> float:
        return decayed(self.weight, self.weight_at, TOOL_LINK_HALF_LIFE, now)


@dataclass(frozen=True, slots=True)
class Neighbour:
    edge: Edge
    node: Node


@dataclass(frozen=True, slots=True)
class IngestReport:
    nodes_added: int
    edges_added: int
    links_strengthened: int


@dataclass(frozen=True, slots=True)
class PruneReport:
    nodes_removed: int
    edges_removed: int
    links_removed: int


# ----------------------------------------------------------------------------- weight maths


def decayed(weight: float, weight_at: float, half_life: float, now: float) -> float:
    """The weight at `now`, from the stored weight and the time it was true. Asking about a
    time before `weight_at` gives the stored weight: weights never grow by going back."""
    if now <= weight_at:
        return weight
    return weight * float(0.5 ** ((now - weight_at) / half_life))


def strengthened(
    weight: float, weight_at: float, half_life: float, at: float, rate: float
) -> tuple[float, float]:
    """One Hebbian step `w + rate * (1 - w)` at time `at`, re-based: the new weight and the
    time it is true at. An activation older than the stored base counts as its increment
    decayed to the base time, so ingesting runs out of order never makes weights grow back."""
    if at >= weight_at:
        current = decayed(weight, weight_at, half_life, at)
        return current + rate * (1.0 - current), at
    increment = rate * (1.0 - weight) * 0.5 ** ((weight_at - at) / half_life)
    return weight + increment, weight_at


# ----------------------------------------------------------------------------- building


def run_node_id(run_id: str) -> str:
    return f"run:{run_id}"


def episode_node_id(run_id: str) -> str:
    return f"episode:{run_id}"


def event_node_id(run_id: str, event_id: int) -> str:
    return f"{run_id}#{event_id}"


def file_node_id(path: str) -> str:
    return f"file:{path}"


@dataclass(slots=True)
class RunGraph:
    """The nodes and edges one run contributes, and the tool pairs it used one after the
    other (with the time of the second call)."""

    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    tool_pairs: list[tuple[str, str, float]] = field(default_factory=list)


def tool_name(data: dict[str, Any]) -> str:
    """`Tool.method`, as the trace names a call."""
    return f"{data.get('tool')}.{data.get('method')}"


def touched_files(data: dict[str, Any], workspace: str | None) -> list[tuple[str, str]]:
    """(path as memory keeps it, action) for every file a tool event read or changed: the
    paths of its effect records, the `path` argument of `file://` and `sh://` calls, and the
    records a `File.undo` was given. Sorted, without repeats."""
    found: set[tuple[str, str]] = set()
    for effect in _records(data.get("effects")):
        found.add((_effect_path(effect, workspace), str(effect.get("action") or "change")))
    scheme = data.get("scheme")
    args = data.get("args")
    first = args[0] if isinstance(args, list) and args else None
    method = str(data.get("method"))
    if scheme == "file" and method == "undo":
        for effect in _records(first):
            found.add((_effect_path(effect, workspace), "undo"))
    elif (
        scheme in ("file", "sh") and isinstance(first, dict) and isinstance(first.get("path"), str)
    ):
        action = method if scheme == "file" and method in ("write", "patch") else "read"
        found.add((summarise_path(first["path"], workspace), action))
    return sorted(found)


def _records(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict) and isinstance(item.get("path"), str)]


def _effect_path(effect: dict[str, Any], workspace: str | None) -> str:
    path = str(effect["path"])
    root = effect.get("workspace")
    if isinstance(root, str) and workspace is not None and root != workspace:
        return summarise_path(f"{root.rstrip('/')}/{path}", workspace)
    return summarise_path(path, workspace)


def tool_succeeded(data: dict[str, Any]) -> bool:
    """A tool event failed when the call raised (it carries `error`) or its result says
    `ok: false`."""
    if "error" in data:
        return False
    result = data.get("result")
    return not (isinstance(result, dict) and result.get("ok") is False)


def build_run_graph(run: RunRecord, entries: Sequence[JournalEntry], status: RunStatus) -> RunGraph:
    """The graph of one run from its journal entries (in `seq` order). Pure: the same entries
    always give the same nodes and edges."""
    return _RunGraphBuilder(run, status).build(entries)


class _RunGraphBuilder:
    def __init__(self, run: RunRecord, status: RunStatus) -> None:
        self.run = run
        self.status = status
        self.workspace = run.workspace
        self.graph = RunGraph()
        self.agents: dict[int, Node] = {}
        self.requests: dict[str, Node] = {}
        # Approved decisions waiting for their tool event, by (parent, tool, method, uri).
        self.decisions: dict[tuple[int | None, str, str, str], Node] = {}
        # Call nodes by the effect records they produced, for DEPENDENCY edges.
        self.producers: dict[tuple[str, str], str] = {}
        self.previous_call: Node | None = None
        self.calls = 0
        self.files: dict[str, Node] = {}

    def build(self, entries: Sequence[JournalEntry]) -> RunGraph:
        run = self.run
        ended = run.ended_at if run.ended_at is not None else run.heartbeat_at
        run_node = Node(
            run_node_id(run.run_id),
            NodeType.RUN,
            run.run_id,
            0,
            _run_label(run),
            run.started_at,
            weight_at=run.started_at,
            metadata={
                "program": summarise_text(run.program, run.workspace) if run.program else None,
                "entry": run.entry,
                "status": self.status,
                "started_at": run.started_at,
                "ended_at": run.ended_at,
            },
        )
        episode = Node(
            episode_node_id(run.run_id),
            NodeType.EPISODE,
            run.run_id,
            entries[-1].seq if entries else 0,
            f"episode of {run.run_id}",
            ended,
            weight_at=ended,
        )
        self.graph.nodes += [run_node, episode]
        self._edge(run_node.node_id, episode.node_id, EdgeType.HIERARCHY, ended)
        for entry in entries:
            if entry.kind == RUN_KIND:
                continue
            if entry.phase == "start":
                self._agent_started(entry)
            elif entry.kind == "agent":
                self._agent_finished(entry)
            elif entry.kind == "generate":
                self._generate(entry)
            elif entry.kind == "approval":
                self._approval(entry)
            elif entry.kind == "tool":
                self._tool(entry)
        self.graph.nodes += self.agents.values()
        self.graph.nodes += self.files.values()
        return self.graph

    def _parent(self, entry: JournalEntry) -> str:
        if entry.parent is None:
            return run_node_id(self.run.run_id)
        return event_node_id(self.run.run_id, entry.parent)

    def _node(
        self,
        entry: JournalEntry,
        node_type: NodeType,
        label: str,
        metadata: dict[str, Any],
        suffix: str = "",
    ) -> Node:
        assert entry.event_id is not None
        node = Node(
            event_node_id(self.run.run_id, entry.event_id) + suffix,
            node_type,
            self.run.run_id,
            entry.seq,
            label,
            entry.at,
            weight_at=entry.at,
            metadata={"source_event_id": entry.event_id, **metadata},
        )
        self.graph.nodes.append(node)
        self._edge(self._parent(entry), node.node_id, EdgeType.HIERARCHY, entry.at)
        return node

    def _edge(
        self,
        source: str,
        target: str,
        edge_type: EdgeType,
        at: float,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.graph.edges.append(
            Edge(
                source,
                target,
                edge_type,
                self.run.run_id,
                at,
                weight_at=at,
                half_life=EDGE_HALF_LIVES.get(edge_type),
                metadata=metadata or {},
            )
        )

    def _agent_started(self, entry: JournalEntry) -> None:
        assert entry.event_id is not None
        data = entry.data
        name = f"{data.get('agent')}.{data.get('function')}"
        node = Node(
            event_node_id(self.run.run_id, entry.event_id),
            NodeType.AGENT_CALL,
            self.run.run_id,
            entry.seq,
            name,
            entry.at,
            weight_at=entry.at,
            metadata={
                "source_event_id": entry.event_id,
                "agent": data.get("agent"),
                "function": data.get("function"),
                "args": summarise(data.get("args"), self.workspace),
                "finished": False,
            },
        )
        self.agents[entry.event_id] = node
        self._edge(self._parent(entry), node.node_id, EdgeType.HIERARCHY, entry.at)

    def _agent_finished(self, entry: JournalEntry) -> None:
        assert entry.event_id is not None
        started = self.agents.get(entry.event_id)
        if started is None:
            # The journal missed the start (a sink attached mid-run): the end says it all.
            self._agent_started(replace(entry, phase="start"))
            started = self.agents[entry.event_id]
        data = entry.data
        metadata = {**started.metadata, "finished": True, "ok": "error" not in data}
        if "error" in data:
            metadata["error"] = summarise_text(str(data["error"]), self.workspace)
        else:
            metadata["result"] = summarise(data.get("result"), self.workspace)
        self.agents[entry.event_id] = replace(started, metadata=metadata)

    def _generate(self, entry: JournalEntry) -> None:
        data = entry.data
        instruction = summarise(data.get("instruction"), self.workspace, preview=120)
        ok = data.get("ok") is not False
        metadata: dict[str, Any] = {
            "instruction": instruction,
            "attempts": data.get("attempts"),
            "ok": ok,
            "repairs": max(0, int(data.get("attempts") or 1) - 1),
        }
        if not ok:
            metadata["error"] = summarise_text(str(data.get("error")), self.workspace)
        if isinstance(data.get("usage"), dict):
            metadata["usage"] = data["usage"]
        label = (
            "generate"
            if instruction is None
            else f"generate {summarise_text(str(instruction), None, 60)}"
        )
        self._node(entry, NodeType.GENERATE, label, metadata)

    def _approval(self, entry: JournalEntry) -> None:
        data = entry.data
        decision = str(data.get("decision"))
        approval_id = str(data.get("approval_id"))
        phase = "request" if decision == "pending" else "decision"
        name = tool_name(data)
        by = f" ({data['by']})" if data.get("by") else ""
        node = self._node(
            entry,
            NodeType.APPROVAL,
            f"approval {name} {decision}{by}",
            {
                "approval_id": approval_id,
                "phase": phase,
                "tool_name": name,
                "decision": decision,
                "risk_level": data.get("risk"),
                "risk_reason": _risk_reason(data),
                "scheme": str(data.get("uri") or "").partition("://")[0].lower() or None,
                "approval_mode": data.get("mode"),
                "by": data.get("by"),
                "action_summary": f"{name} {summarise_text(str(data.get('uri')), self.workspace)}",
            },
        )
        if phase == "request":
            self.requests[approval_id] = node
            return
        request = self.requests.get(approval_id)
        if request is not None:
            self._edge(request.node_id, node.node_id, EdgeType.CAUSAL, entry.at)
        if data.get("start") is None:  # a call's decision (a refused one has a failed call)
            key = (
                entry.parent,
                str(data.get("tool")),
                str(data.get("method")),
                str(data.get("uri")),
            )
            self.decisions[key] = node

    def _tool(self, entry: JournalEntry) -> None:
        data = entry.data
        assert entry.event_id is not None
        pair_id = event_node_id(self.run.run_id, entry.event_id)
        name = tool_name(data)
        files = touched_files(data, self.workspace)
        ok = tool_succeeded(data)
        key = (entry.parent, str(data.get("tool")), str(data.get("method")), str(data.get("uri")))
        decision = self.decisions.pop(key, None)
        if decision is not None:
            # The approval's request and decision name the call they were about.
            decision.metadata["pair_id"] = pair_id
            request = self.requests.get(str(decision.metadata.get("approval_id")))
            if request is not None:
                request.metadata["pair_id"] = pair_id
        order = self.calls
        self.calls += 1
        call = self._node(
            entry,
            NodeType.TOOL_CALL,
            name,
            {
                "pair_id": pair_id,
                "tool_name": name,
                "scheme": data.get("scheme"),
                "uri": summarise_text(str(data.get("uri")), self.workspace),
                "arguments_summary": summarise(data.get("args"), self.workspace),
                "order": order,
                "approved": decision is not None
                and decision.metadata.get("decision") == "approved",
                "risk_level": data.get("risk"),
            },
            suffix="/call",
        )
        result = self._node(
            entry,
            NodeType.TOOL_RESULT,
            f"{name} {'ok' if ok else 'failed'}",
            {
                "pair_id": pair_id,
                "tool_name": name,
                "success": ok,
                "latency_ms": data.get("duration_ms"),
                "result_preview": summarise(data.get("result"), self.workspace, preview=120),
                "affected_files": [path for path, action in files if action != "read"],
            },
            suffix="/result",
        )
        self._edge(call.node_id, result.node_id, EdgeType.CAUSAL, entry.at, {"pair_id": pair_id})
        if "error" in data:
            result.metadata["error"] = summarise_text(str(data["error"]), self.workspace)
        if decision is not None:
            self._edge(decision.node_id, call.node_id, EdgeType.CAUSAL, entry.at)
        if self.previous_call is not None:
            self._edge(self.previous_call.node_id, call.node_id, EdgeType.TEMPORAL, entry.at)
            self.graph.tool_pairs.append((self.previous_call.label, name, entry.at))
        self.previous_call = call
        args = data.get("args")
        if data.get("scheme") == "file" and data.get("method") == "undo" and isinstance(args, list):
            for effect in _records(args[0] if args else None):
                producer = self.producers.get(_effect_key(effect))
                if producer is not None:
                    self._edge(call.node_id, producer, EdgeType.DEPENDENCY, entry.at)
        for effect in _records(data.get("effects")):
            self.producers[_effect_key(effect)] = call.node_id
        actions: dict[str, list[str]] = {}
        for path, action in files:
            actions.setdefault(path, []).append(action)
        for path, done in actions.items():
            self._file(path, entry.at)
            self._edge(
                result.node_id,
                file_node_id(path),
                EdgeType.REFERENCE,
                entry.at,
                {"actions": done},
            )

    def _file(self, path: str, at: float) -> None:
        if path not in self.files:
            self.files[path] = Node(
                file_node_id(path),
                NodeType.FILE,
                None,
                0,
                path,
                at,
                weight_at=at,
                metadata={"path": path},
            )


def _risk_reason(data: dict[str, Any]) -> str:
    """Why the gate stopped to ask, in words: the call's risk under the run's approval mode."""
    return f"{data.get('risk') or 'unknown'} risk under --approve {data.get('mode') or 'ask'}"


def _effect_key(effect: dict[str, Any]) -> tuple[str, str]:
    return (str(effect.get("id")), str(effect.get("after_digest") or effect.get("after_sha256")))


def _run_label(run: RunRecord) -> str:
    program = run.program.replace("\\", "/").rsplit("/", 1)[-1] if run.program else "program"
    return f"{program} {run.entry}" if run.entry else program


# ----------------------------------------------------------------------------- the graph


class TaskGraph:
    """The task graph of a journal: ingest runs, query, decay and prune. `clock` is the time
    decay is computed at when no `now` is given (injectable for tests)."""

    def __init__(self, store: GraphStore, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock

    def ingest(
        self, run: RunRecord, entries: Sequence[JournalEntry], status: RunStatus
    ) -> IngestReport:
        """Add a run's nodes and edges. Idempotent: what is already there is left as it is (its
        weight is not refreshed), so only a run's first ingestion strengthens anything."""
        graph = build_run_graph(run, entries, status)
        new_nodes, new_edges = self.store.add(graph.nodes, graph.edges)
        reinforced = {
            edge.target: edge.created_at
            for edge in graph.edges
            if edge.key in new_edges
            and edge.edge_type is EdgeType.REFERENCE
            and edge.target not in new_nodes
        }
        if reinforced:
            self.store.update_node_weights(
                {
                    node_id: _reinforce(at, REINFORCE_RATE, HALF_LIVES[NodeType.FILE])
                    for node_id, at in reinforced.items()
                }
            )
        pairs = sorted({(first, second): at for first, second, at in graph.tool_pairs}.items())
        strengthened_links = self.store.record_tool_pairs(
            run.run_id, [(first, second, at) for (first, second), at in pairs], _hebbian
        )
        return IngestReport(len(new_nodes), len(new_edges), strengthened_links)

    def node(self, node_id: str) -> Node | None:
        return self.store.node(node_id)

    def nodes(self, node_type: NodeType | None = None, run_id: str | None = None) -> list[Node]:
        """Nodes of a type (and run), in the order their runs recorded them."""
        return self.store.nodes(node_type, run_id)

    def edges(self, run_id: str) -> list[Edge]:
        return self.store.edges(run_id=run_id)

    def neighbours(
        self, node_id: str, edge_type: EdgeType | None = None, direction: Direction = "both"
    ) -> list[Neighbour]:
        """Nodes one edge away, with the edge; outgoing first, each side in node order."""
        found: list[Neighbour] = []
        if direction in ("out", "both"):
            for edge in self.store.edges(source=node_id, edge_type=edge_type):
                node = self.store.node(edge.target)
                if node is not None:
                    found.append(Neighbour(edge, node))
        if direction in ("in", "both"):
            for edge in self.store.edges(target=node_id, edge_type=edge_type):
                node = self.store.node(edge.source)
                if node is not None:
                    found.append(Neighbour(edge, node))
        return found

    def tool_chain(self, run_id: str) -> list[Node]:
        """The run's tool calls in the order they finished."""
        return self.store.nodes(NodeType.TOOL_CALL, run_id)

    def runs_touching(self, path: str, workspace: str | None = None) -> list[str]:
        """Ids of the runs whose tools read or changed `path`, oldest first."""
        key = file_node_id(summarise_path(path, workspace))
        runs: dict[str, float] = {}
        for edge in self.store.edges(target=key, edge_type=EdgeType.REFERENCE):
            if edge.run_id is not None:
                runs.setdefault(edge.run_id, edge.created_at)
        return [run_id for run_id, _ in sorted(runs.items(), key=lambda item: (item[1], item[0]))]

    def tool_links(
        self, tool: str | None = None, now: float | None = None
    ) -> list[tuple[ToolLink, float]]:
        """Tool links (involving `tool`, if given) with their weight now, strongest first."""
        at = self.clock() if now is None else now
        links = [(link, link.weight_now(at)) for link in self.store.tool_links(tool)]
        return sorted(links, key=lambda item: (-item[1], item[0].first, item[0].second))

    def record_outcome(self, run_id: str, status: RunStatus, trace: dict[str, Any]) -> None:
        """Keep the run's execution trace on its EPISODE node and its status on its RUN node
        (a run first seen interrupted may end after all)."""
        self.store.set_metadata(run_node_id(run_id), {"status": status})
        self.store.set_metadata(episode_node_id(run_id), {"trace": trace})

    def episode_trace(self, run_id: str) -> dict[str, Any] | None:
        episode = self.store.node(episode_node_id(run_id))
        if episode is None:
            return None
        trace = episode.metadata.get("trace")
        return trace if isinstance(trace, dict) else None

    def decay_and_prune(self, now: float | None = None) -> PruneReport:
        """Remove what has faded below PRUNE_BELOW (a removed node takes its edges along).
        Nothing is re-weighted: weights are computed from their base time when read, so
        pruning twice, or at any interval, gives the same result as pruning once."""
        at = self.clock() if now is None else now
        # An experience's life is its status (see learn/upkeep.py): a faded or retired one is
        # kept, so its rule cannot store it again unseen.
        nodes = [
            node_id
            for node_id, node_type, weight, weight_at in self.store.node_weights()
            if node_type != NodeType.EXPERIENCE.value
            and decayed(weight, weight_at, HALF_LIVES[NodeType(node_type)], at) < PRUNE_BELOW
        ]
        edges = [
            key
            for key, weight, weight_at, half_life in self.store.edge_weights()
            if half_life is not None and decayed(weight, weight_at, half_life, at) < PRUNE_BELOW
        ]
        links = [
            (link.first, link.second)
            for link in self.store.tool_links(None)
            if link.weight_now(at) < PRUNE_BELOW
        ]
        removed_edges = self.store.remove(nodes, edges, links)
        return PruneReport(len(nodes), removed_edges, len(links))


def _reinforce(
    at: float, rate: float, half_life: float
) -> Callable[[float, float], tuple[float, float]]:
    def step(weight: float, weight_at: float) -> tuple[float, float]:
        return strengthened(weight, weight_at, half_life, at, rate)

    return step


def _hebbian(link: ToolLink | None, first: str, second: str, at: float) -> ToolLink:
    if link is None:
        return ToolLink(first, second, HEBBIAN_RATE, at, 1)
    weight, weight_at = strengthened(
        link.weight, link.weight_at, TOOL_LINK_HALF_LIFE, at, HEBBIAN_RATE
    )
    return ToolLink(first, second, weight, weight_at, link.activations + 1)
