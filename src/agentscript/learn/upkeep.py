"""Decay that acts: once a day, lazily, the task graph is pruned and lessons nobody has seen
for long fade out of what programs are told.

Weights are never rewritten by time (graph.decayed computes them when read), so upkeep only
has to remove what has faded: nodes, edges and tool links below PRUNE_BELOW (graph.py), and
stored experiences whose weight fell under FADE_BELOW — not repeated, reinforced or confirmed
for about a year (their half-life). A faded experience is archived in memory (history keeps
it) and its node says `faded`; a run that teaches it again stores it again. Retired and
IMPORTANT (user-confirmed) lessons never fade. It runs from the journal's step after each
learned run (learn/run_memory.py), at most once per UPKEEP_EVERY, whichever process claims it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentscript.learn.experiences import FADED, STORED, active_entry
from agentscript.learn.graph import DAY, HALF_LIVES, NodeType, PruneReport, decayed

if TYPE_CHECKING:
    from agentscript.learn.graph import TaskGraph
    from agentscript.memory.service import MemoryService

UPKEEP_NAME = "decay"
UPKEEP_EVERY = DAY
FADE_BELOW = 0.5


@dataclass(frozen=True, slots=True)
class UpkeepReport:
    pruned: PruneReport
    faded: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes_removed": self.pruned.nodes_removed,
            "edges_removed": self.pruned.edges_removed,
            "links_removed": self.pruned.links_removed,
            "faded": list(self.faded),
        }


def keep_up(
    graph: TaskGraph, service: MemoryService | None, now: float | None = None
) -> UpkeepReport | None:
    """Prune and fade if a day has passed since the last upkeep; None when it was not due.
    Without `service`, faded lessons wait for an upkeep that has memory at hand."""
    at = graph.clock() if now is None else now
    if not graph.store.claim_upkeep(UPKEEP_NAME, at, UPKEEP_EVERY):
        return None
    pruned = graph.decay_and_prune(at)
    faded = fade_experiences(graph, service, at) if service is not None else ()
    return UpkeepReport(pruned, faded)


def fade_experiences(graph: TaskGraph, service: MemoryService, at: float) -> tuple[str, ...]:
    """Archive the stored, unconfirmed experiences whose weight is below FADE_BELOW."""
    half_life = HALF_LIVES[NodeType.EXPERIENCE]
    faded: list[str] = []
    for node in graph.nodes(NodeType.EXPERIENCE):
        metadata = node.metadata
        if metadata.get("status") != STORED or metadata.get("important"):
            continue
        if decayed(node.weight, node.weight_at, half_life, at) >= FADE_BELOW:
            continue
        entry = active_entry(service, node.node_id)
        if entry is not None:
            service.forget(entry["id"], reason="faded: not seen for a year", scope=entry["scope"])
        graph.store.set_metadata(node.node_id, {"status": FADED, "faded_at": at})
        faded.append(node.node_id)
    return tuple(faded)
