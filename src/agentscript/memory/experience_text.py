"""Experiences as a program `use`s them: one short line per lesson, within a token budget.

A recalled experience entry carries an id, a key, scores, tags, the evidence list and more —
what an auditor wants, and noise (and tokens) in a prompt. A program that asks
`Memory.experiences` gets this text instead: the lesson itself, how sure learning is of it and
how many runs showed it, never an id, a run id or a path outside the workspace (lessons are
summarised before they are stored; see learn/sensitive.py). Lines are added best first until
the next one would pass the budget the program set. The run count is one plus the entry's
reinforcements (every run that repeated it, and every confirmation).

Ranking: user-confirmed lessons (the IMPORTANT tier, tag `important`) first, then the most
reinforced, then the lessons about the tools this workspace's runs use most together (the task
graph's tool links, read through the `ToolUsage` port the application wires in), then recall's
own order.

The body convention is learn/experiences.py's: the lesson, "When to apply: …", "Evidence:" and
a last "Confidence: <0..1>" line (entries stored before that line existed show no confidence).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from agentscript.memory.results import RecallHit
from agentscript.runtime.tokens import estimate_tokens

# What `use` of experiences may cost when the program sets nothing.
DEFAULT_BUDGET_TOKENS = 240
NO_EXPERIENCES = "(no experiences yet)"
# A user-confirmed lesson is marked, and ranked first.
IMPORTANT_TAG = "important"
# Experiences name the tools they are about with tags `tool:<Name.method>`.
TOOL_TAG_PREFIX = "tool:"

_CONFIDENCE = re.compile(r"^Confidence: (?P<value>[01](?:\.\d+)?)$", re.M)


class ToolUsage(Protocol):
    """How strongly the workspace's runs use `tool` together with other tools now (the sum of
    its decayed tool-link weights; 0 for a tool no run links)."""

    def strength(self, tool: str) -> float: ...


def lesson_text(body: str) -> str:
    """The lesson part of an experience's body, on one line."""
    return " ".join(body.split("\n\nWhen to apply:", 1)[0].split())


def confidence_of(body: str) -> float | None:
    found = _CONFIDENCE.search(body)
    return float(found["value"]) if found else None


def with_confidence(body: str, confidence: float) -> str:
    """The body with its confidence line set to `confidence` (added when it has none)."""
    line = f"Confidence: {confidence:.2f}"
    if _CONFIDENCE.search(body):
        return _CONFIDENCE.sub(line, body)
    return f"{body}\n\n{line}"


def experience_line(hit: RecallHit) -> str:
    """`- <lesson> (confidence 0.70, 3 runs)`; `- IMPORTANT: …` for a confirmed one."""
    runs = 1 + hit.reinforce_count
    facts = [f"{runs} run{'s' if runs != 1 else ''}"]
    confidence = confidence_of(hit.body)
    if confidence is not None:
        facts.insert(0, f"confidence {confidence:.2f}")
    marker = "IMPORTANT: " if IMPORTANT_TAG in hit.tags else ""
    return f"- {marker}{lesson_text(hit.body)} ({', '.join(facts)})"


def tools_of(hit: RecallHit) -> list[str]:
    return [tag[len(TOOL_TAG_PREFIX) :] for tag in hit.tags if tag.startswith(TOOL_TAG_PREFIX)]


def rank_experiences(hits: Sequence[RecallHit], usage: ToolUsage | None = None) -> list[RecallHit]:
    """`hits` best first (see the module's docstring); the sort is stable."""

    def link_strength(hit: RecallHit) -> float:
        if usage is None:
            return 0.0
        return max((usage.strength(tool) for tool in tools_of(hit)), default=0.0)

    return sorted(
        hits,
        key=lambda hit: (IMPORTANT_TAG not in hit.tags, -hit.reinforce_count, -link_strength(hit)),
    )


def experiences_text(
    ranked: Sequence[RecallHit], budget_tokens: int = DEFAULT_BUDGET_TOKENS
) -> str:
    """The lines of `ranked` (best first) that fit `budget_tokens`."""
    lines: list[str] = []
    used = 0
    for hit in ranked:
        line = experience_line(hit)
        cost = estimate_tokens(line) + 1
        if used + cost > budget_tokens:
            break
        lines.append(line)
        used += cost
    return "\n".join(lines) if lines else NO_EXPERIENCES
