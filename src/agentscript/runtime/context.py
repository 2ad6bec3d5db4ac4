"""Prompt construction: context items from `use`, budget clipping, and the two messages sent.

The layout is the 0.1.0 one (reference §3.7): a system message naming the agent, its role and
description, and one user message with the context items, the instruction and the schema.
Budgets count characters of the rendered text in UTF-16 units, as the original did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentscript.lang.ast import Budget
from agentscript.runtime.jsjson import stringify, utf16_length, utf16_prefix
from agentscript.runtime.values import LlmBinding, render_text, sanitize


@dataclass(slots=True)
class ContextItem:
    """One visible `use`, evaluated and clipped to its budget."""

    index: int
    source: str | None
    value: Any
    text: str
    budget: Budget | None
    clipped: bool
    original_size: int
    clipped_size: int
    label: str | None = None

    @property
    def heading(self) -> str:
        """`[0] input.question:`; a label replaces the index: `[evidence] input.docs:`."""
        name = self.label if self.label is not None else str(self.index)
        return f"[{name}] {self.source}:"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "index": self.index,
            "source": self.source,
            "value": self.value,
            "text": self.text,
            "budget": self.budget.to_json() if self.budget else None,
            "clipped": self.clipped,
            "originalSize": self.original_size,
            "clippedSize": self.clipped_size,
        }
        if self.label is not None:
            data["label"] = self.label
        return data


def make_context_item(
    index: int, source: str | None, value: Any, budget: Budget | None, label: str | None = None
) -> ContextItem:
    """Render `value` for the prompt and clip it to `budget` (reference §3.7, budget clipping)."""
    safe = sanitize(value)
    text = render_text(safe)
    original_size = utf16_length(text)
    clipped_value = safe
    clipped_text = text
    if budget is not None:
        limit = budget.character_limit()
        if original_size > limit:
            clipped_value = _clip(safe, limit)
            clipped_text = render_text(clipped_value)
    return ContextItem(
        index=index,
        source=source,
        value=clipped_value,
        text=clipped_text,
        budget=budget,
        clipped=clipped_text != text,
        original_size=original_size,
        clipped_size=utf16_length(clipped_text),
        label=label,
    )


def _clip(value: Any, limit: int) -> Any:
    """Strings keep their first `limit` characters; lists and objects keep the longest prefix
    of items (entries) whose pretty JSON fits; other scalars are left as they are."""
    if isinstance(value, str):
        return utf16_prefix(value, limit)
    if isinstance(value, list):
        count = _longest_fitting_prefix(len(value), lambda n: value[:n], limit)
        return value[:count]
    if isinstance(value, dict):
        entries = list(value.items())
        count = _longest_fitting_prefix(len(entries), lambda n: dict(entries[:n]), limit)
        return dict(entries[:count])
    return value


def _longest_fitting_prefix(total: int, prefix: Any, limit: int) -> int:
    low, high = 0, total
    while low < high:
        middle = (low + high + 1) // 2
        if utf16_length(stringify(prefix(middle), 2)) <= limit:
            low = middle
        else:
            high = middle - 1
    return low


def system_message(agent_name: str, identity: dict[str, str]) -> str:
    return "\n".join(
        [
            f"You are {agent_name}.",
            f"role: {identity.get('role', '')}",
            f"description: {identity.get('description', '')}",
        ]
    )


def user_message(items: list[ContextItem], instruction: Any, schema: dict[str, Any] | None) -> str:
    lines: list[str] = []
    if items:
        lines.append("Context:")
        for item in items:
            lines.append(item.heading)
            lines.append(item.text)
    lines.append("Instruction:")
    lines.append(render_text(instruction))
    if schema is not None:
        lines.append("Return JSON matching this schema:")
        lines.append(stringify(schema, 2))
    return "\n".join(lines)


@dataclass(slots=True)
class BuiltContext:
    """The full prompt of one attempt, as it is sent and as the trace records it."""

    agent_name: str
    model: LlmBinding | None
    identity: dict[str, str]
    system: str
    context: list[ContextItem]
    instruction: Any
    return_schema: dict[str, Any] | None
    budget: Budget | None
    final_user_message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "agentName": self.agent_name,
            "model": {"name": self.model.name, "uri": self.model.uri} if self.model else None,
            "identity": dict(self.identity),
            "system": self.system,
            "context": [item.to_json() for item in self.context],
            "instruction": sanitize(self.instruction),
            "returnSchema": self.return_schema,
            "budget": self.budget.to_json() if self.budget else None,
            "finalUserMessage": self.final_user_message,
        }


def build_context(
    agent_name: str,
    model: LlmBinding | None,
    identity: dict[str, str],
    items: list[ContextItem],
    instruction: Any,
    schema: dict[str, Any] | None,
    budget: Budget | None,
) -> BuiltContext:
    return BuiltContext(
        agent_name=agent_name,
        model=model,
        identity=identity,
        system=system_message(agent_name, identity),
        context=items,
        instruction=instruction,
        return_schema=schema,
        budget=budget,
        final_user_message=user_message(items, instruction, schema),
    )
