"""Approvals that keep being given become a proposal to the user: allow that call in the
approval policy, instead of being asked every run.

Seed 003 asks that approval decisions evolve the allow-list. Nothing here changes a policy on
its own (a program, or a model writing its arguments, must never widen what it may do): the
task graph's APPROVAL decisions are read, and a tool method the user approved themselves
(`user` or `always`) in at least PROPOSE_AFTER different runs, and never refused, is proposed
with the rule line to add under `rules:` of an approval policy (`--approvals FILE`). A
refusal by the user, in any run the graph still holds, withdraws the proposal. Old approvals
fade from the graph (their half-life) and take their weight in the count with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentscript.learn.graph import NodeType

if TYPE_CHECKING:
    from agentscript.learn.graph import TaskGraph

# How many runs with the user's own approval of one tool method make a proposal.
PROPOSE_AFTER = 3
# Who decided an approval the user gave in person.
USER_DECIDERS = frozenset({"user", "always"})


@dataclass(frozen=True, slots=True)
class PolicyProposal:
    """Allow `tool.method` (on `scheme`) without asking: what the user did that suggests it,
    and the rule that would do it."""

    scheme: str | None
    tool: str
    method: str
    runs: tuple[str, ...]

    @property
    def rule(self) -> str:
        scheme = f"scheme: {self.scheme}, " if self.scheme else ""
        return f"- {{{scheme}tool: {self.tool}, method: {self.method}, decision: run}}"

    def describe(self) -> str:
        return (
            f"You approved {self.tool}.{self.method} yourself in {len(self.runs)} runs and "
            f"refused it in none. To stop being asked, add under `rules:` in your approval "
            f"policy (--approvals FILE): {self.rule}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "scheme": self.scheme,
            "tool": self.tool,
            "method": self.method,
            "runs": list(self.runs),
            "rule": self.rule,
            "text": self.describe(),
        }


def policy_proposals(graph: TaskGraph, propose_after: int = PROPOSE_AFTER) -> list[PolicyProposal]:
    """The proposals the graph's approval decisions make, most approved first."""
    approved: dict[tuple[str | None, str], list[str]] = {}
    refused: set[tuple[str | None, str]] = set()
    for node in graph.nodes(NodeType.APPROVAL):
        metadata = node.metadata
        if metadata.get("phase") != "decision" or metadata.get("by") not in USER_DECIDERS:
            continue
        key = (metadata.get("scheme"), str(metadata.get("tool_name")))
        if metadata.get("decision") == "refused":
            refused.add(key)
        elif metadata.get("decision") == "approved" and node.run_id is not None:
            runs = approved.setdefault(key, [])
            if node.run_id not in runs:
                runs.append(node.run_id)
    proposals = [
        PolicyProposal(scheme, *_split(name), tuple(runs))
        for (scheme, name), runs in approved.items()
        if len(runs) >= propose_after and (scheme, name) not in refused
    ]
    return sorted(proposals, key=lambda found: (-len(found.runs), found.tool, found.method))


def _split(name: str) -> tuple[str, str]:
    tool, _, method = name.partition(".")
    return tool, method
