"""Prompt construction: context items from `use`, budget clipping, and the two messages sent.

Two layouts. The 0.1.0 one (reference §3.7) is what programs written for the original expect
under the mock and the dry run: a system message naming the agent, its role and description, and
one user message with the context items as pretty JSON, the instruction and the printed schema.
The compact one is sent to providers that enforce the shape themselves (OpenAI `json_schema`,
Anthropic output format or forced tool, Ollama `format`): it leaves out what only a model without
that enforcement needs (the printed schema, any note asking for JSON), and what the program did
not declare (the agent's name when it has a role), and renders values compactly. Budgets count
characters of the text actually sent, in UTF-16 units, as the original did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agentscript.lang.ast import Budget
from agentscript.runtime.jsjson import format_number, stringify, utf16_length, utf16_prefix
from agentscript.runtime.tokens import estimate_tokens
from agentscript.runtime.values import LlmBinding, render_text, sanitize


class PromptLayout(StrEnum):
    """How a generate's prompt is laid out (docs/language.md §8.3 says which is used when)."""

    ORIGINAL = "0.1.0"
    COMPACT = "compact"


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

    @property
    def compact_heading(self) -> str:
        """`input.question:`, or the label alone when there is one: `evidence:`."""
        return f"{self.label if self.label is not None else self.source}:"

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
    index: int,
    source: str | None,
    value: Any,
    budget: Budget | None,
    label: str | None = None,
    layout: PromptLayout = PromptLayout.ORIGINAL,
) -> ContextItem:
    """Render `value` for the prompt and clip it to `budget` (reference §3.7, budget clipping),
    measuring the text of the layout that is sent."""
    render = renderer(layout)
    safe = sanitize(value)
    text = render(safe)
    original_size = utf16_length(text)
    clipped_value = safe
    clipped_text = text
    if budget is not None:
        limit = budget.character_limit()
        if original_size > limit:
            clipped_value = _clip(safe, limit, render)
            clipped_text = render(clipped_value)
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


Render = Callable[[Any], str]


def renderer(layout: PromptLayout) -> Render:
    """The text of a value in a prompt of this layout."""
    return render_text if layout is PromptLayout.ORIGINAL else compact_text


def compact_text(value: Any) -> str:
    """A string as it is; a list of flat records of the same fields as a table (a header line of
    field names, then one line of values per record) when that is shorter; anything else as
    compact JSON. Nothing the JSON says is lost: a table is only used when every value is a
    scalar that reads the same without quotes."""
    if isinstance(value, str):
        return value
    json_text = stringify(sanitize(value))
    table = _record_table(value)
    if table is not None and len(table) < len(json_text):
        return table
    return json_text


_TABLE_SEPARATOR = " | "


def _record_table(value: Any) -> str | None:
    if not isinstance(value, list) or len(value) < 2:
        return None
    first = value[0]
    if not isinstance(first, dict) or not first:
        return None
    fields = list(first)
    rows: list[str] = [_TABLE_SEPARATOR.join(fields)]
    for record in value:
        if not isinstance(record, dict) or list(record) != fields:
            return None
        cells = [_table_cell(record[field]) for field in fields]
        if any(cell is None for cell in cells):
            return None
        rows.append(_TABLE_SEPARATOR.join(cell for cell in cells if cell is not None))
    return "\n".join(rows)


def _table_cell(value: Any) -> str | None:
    """A scalar's cell text, or None when it cannot stand in a table unambiguously."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int | float):
        return format_number(value)
    if isinstance(value, str):
        if not value or "|" in value or "\n" in value or value != value.strip():
            return None
        if value in ("null", "true", "false") or _looks_numeric(value):
            return None
        return value
    return None


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _clip(value: Any, limit: int, render: Render) -> Any:
    """Strings keep their first `limit` characters; lists and objects keep the longest prefix
    of items (entries) whose rendered text fits; other scalars are left as they are."""
    if isinstance(value, str):
        return utf16_prefix(value, limit)
    if isinstance(value, list):
        count = _longest_fitting_prefix(len(value), lambda n: value[:n], limit, render)
        return value[:count]
    if isinstance(value, dict):
        entries = list(value.items())
        count = _longest_fitting_prefix(len(entries), lambda n: dict(entries[:n]), limit, render)
        return dict(entries[:count])
    return value


def _longest_fitting_prefix(total: int, prefix: Any, limit: int, render: Render) -> int:
    low, high = 0, total
    while low < high:
        middle = (low + high + 1) // 2
        if utf16_length(render(prefix(middle))) <= limit:
            low = middle
        else:
            high = middle - 1
    return low


def system_message(
    agent_name: str, identity: dict[str, str], layout: PromptLayout = PromptLayout.ORIGINAL
) -> str:
    """0.1.0: `You are A.`, `role: R`, `description: D` on three lines. Compact: `Role: R. D`
    on one line. The agent's name is a program identifier, so it stands in only when there is
    no role (`You are A. D`); an empty description is left out."""
    role = identity.get("role", "")
    description = identity.get("description", "")
    if layout is PromptLayout.ORIGINAL:
        return f"You are {agent_name}.\nrole: {role}\ndescription: {description}"
    opening = _sentence(f"Role: {role}") if role else f"You are {agent_name}."
    return f"{opening} {description}" if description else opening


def _sentence(text: str) -> str:
    """`text` ending in a full stop, unless it already ends a sentence."""
    return text if text.endswith((".", "!", "?")) else f"{text}."


def user_message(
    items: list[ContextItem],
    instruction: Any,
    schema: dict[str, Any] | None,
    layout: PromptLayout = PromptLayout.ORIGINAL,
) -> str:
    return "\n".join(part.text for part in user_message_parts(items, instruction, schema, layout))


@dataclass(frozen=True, slots=True)
class PromptPart:
    """One piece of the user message, named for the token breakdown: `context` (one item; in the
    0.1.0 layout the first carries the `Context:` heading), `instruction` or `schema` (printed in
    the 0.1.0 layout only)."""

    kind: str
    text: str
    item: ContextItem | None = None


def user_message_parts(
    items: list[ContextItem],
    instruction: Any,
    schema: dict[str, Any] | None,
    layout: PromptLayout,
) -> list[PromptPart]:
    """The 0.1.0 layout: the context items, the instruction, the printed schema. The compact
    one: the context items and the instruction, headed `Instruction:` only when items come
    before it (alone, it needs no heading); the schema travels beside the message, enforced by
    the provider, so nothing about it is printed — no schema, no note asking for JSON."""
    parts: list[PromptPart] = []
    for position, item in enumerate(items):
        if layout is PromptLayout.ORIGINAL:
            opening = "Context:\n" if position == 0 else ""
            parts.append(PromptPart("context", f"{opening}{item.heading}\n{item.text}", item))
        else:
            parts.append(PromptPart("context", f"{item.compact_heading}\n{item.text}", item))
    instruction_text = renderer(layout)(instruction)
    if layout is PromptLayout.ORIGINAL or items:
        instruction_text = f"Instruction:\n{instruction_text}"
    parts.append(PromptPart("instruction", instruction_text))
    if schema is not None and layout is PromptLayout.ORIGINAL:
        schema_text = f"Return JSON matching this schema:\n{stringify(schema, 2)}"
        parts.append(PromptPart("schema", schema_text + choices_note(schema)))
    return parts


def choices_note(schema: dict[str, Any]) -> str:
    """The fields with closed choices (an extension, `"a" | "b"`), restated in words after the
    printed schema, since a model that is only told the shape in the prompt reads a sentence
    more reliably than an `enum` inside it. Empty when no field has choices, so a shape
    without them prints exactly as in 0.1.0."""
    lines: list[str] = []
    for name, field_schema in schema.get("properties", {}).items():
        label, inner = "one of", field_schema
        while isinstance(inner, dict) and inner.get("type") == "array":
            label, inner = "each item one of", inner.get("items")
        if isinstance(inner, dict) and "enum" in inner:
            allowed = ", ".join(stringify(value) for value in inner["enum"])
            lines.append(f"{name}: {label} {allowed}")
    if not lines:
        return ""
    return "\nUse exactly one of the listed values for these fields:\n" + "\n".join(lines)


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
    layout: PromptLayout = PromptLayout.ORIGINAL

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
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
        if self.layout is not PromptLayout.ORIGINAL:
            data["layout"] = self.layout.value
        return data

    def token_breakdown(self) -> dict[str, Any]:
        """Estimated tokens this prompt sends, by part (runtime/tokens.py): the system message,
        each context item, the instruction, and the schema — printed in the message in the
        0.1.0 layout, sent beside it (where providers count it as input too) in the compact
        one. Message framing is not counted."""
        parts = user_message_parts(self.context, self.instruction, self.return_schema, self.layout)
        context: list[dict[str, Any]] = []
        totals = {"system": estimate_tokens(self.system), "instruction": 0, "schema": 0}
        for part in parts:
            tokens = estimate_tokens(part.text)
            if part.item is not None:
                entry: dict[str, Any] = {"index": part.item.index, "tokens": tokens}
                if part.item.label is not None:
                    entry["label"] = part.item.label
                context.append(entry)
            else:
                totals[part.kind] += tokens
        if self.return_schema is not None and self.layout is not PromptLayout.ORIGINAL:
            totals["schema"] += estimate_tokens(stringify(self.return_schema))
        total = sum(totals.values()) + sum(entry["tokens"] for entry in context)
        return {**totals, "context": context, "total": total, "estimate": True}


def build_context(
    agent_name: str,
    model: LlmBinding | None,
    identity: dict[str, str],
    items: list[ContextItem],
    instruction: Any,
    schema: dict[str, Any] | None,
    budget: Budget | None,
    layout: PromptLayout = PromptLayout.ORIGINAL,
) -> BuiltContext:
    return BuiltContext(
        agent_name=agent_name,
        model=model,
        identity=identity,
        system=system_message(agent_name, identity, layout),
        context=items,
        instruction=instruction,
        return_schema=schema,
        budget=budget,
        final_user_message=user_message(items, instruction, schema, layout),
        layout=layout,
    )
