"""The two prompt layouts: 0.1.0 exactly as the original wrote it (mock and dry run), compact for
providers that enforce the shape themselves; compact values, budgets on the text sent, and the
estimated tokens of each part."""

from __future__ import annotations

from typing import Any

import pytest

import agentscript
from agentscript.app.configuration import RunConfig
from agentscript.lang.ast import Budget
from agentscript.providers.llm.layout import FixedLayout
from agentscript.providers.llm.mock import ScriptedLlm
from agentscript.runtime.context import (
    PromptLayout,
    build_context,
    compact_text,
    make_context_item,
)
from agentscript.runtime.generate import prompt_layout_of
from agentscript.runtime.jsjson import stringify
from agentscript.runtime.ports import GenerateRequest
from agentscript.runtime.tokens import estimate_tokens

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}
IDENTITY = {"role": "analyst", "description": "Answers briefly."}
RECORDS = [
    {"path": "notes/a.md", "line": 3, "text": "Python 3.10 added match"},
    {"path": "notes/b.md", "line": 7, "text": "PEP 634 specifies it"},
]

PROGRAM = """
import llm Model from "openai://gpt-4.1-mini"

agent Asker {
  model Model
  role "analyst"
  description "Answers briefly."
  main func(input { question string, notes list[json] }) {
    use input.question as question
    use input.notes
    generate({ input: "Answer." }) -> { answer string }
  }
}
"""


def test_compact_text_keeps_strings_and_writes_other_values_as_compact_json() -> None:
    assert compact_text("as it is\n") == "as it is\n"
    assert compact_text({"a": [1, 2], "b": None}) == '{"a":[1,2],"b":null}'
    assert compact_text([1, 2]) == "[1,2]"


def test_lists_of_flat_records_become_a_table_with_one_header() -> None:
    assert compact_text(RECORDS) == (
        "path | line | text\n"
        "notes/a.md | 3 | Python 3.10 added match\n"
        "notes/b.md | 7 | PEP 634 specifies it"
    )


@pytest.mark.parametrize(
    "records",
    [
        [{"a": "x | y"}, {"a": "z"}],  # a separator inside a value
        [{"a": "two\nlines"}, {"a": "z"}],  # a line break inside a value
        [{"a": "12"}, {"a": "z"}],  # a string that would read as a number
        [{"a": "true"}, {"a": "z"}],  # a string that would read as a boolean
        [{"a": ""}, {"a": "z"}],  # an empty string would vanish
        [{"a": 1}, {"b": 2}],  # different fields
        [{"a": [1]}, {"a": [2]}],  # a value that is not a scalar
        [{"a": 1}],  # a single record
    ],
)
def test_records_that_a_table_would_misstate_stay_json(records: list[dict[str, Any]]) -> None:
    assert compact_text(records) == stringify(records)


def test_the_original_layout_is_byte_for_byte_the_0_1_0_one() -> None:
    item = make_context_item(0, "input.notes", RECORDS[:1], None)
    built = build_context("Asker", None, IDENTITY, [item], {"input": "Answer."}, SCHEMA, None)
    assert built.system == "You are Asker.\nrole: analyst\ndescription: Answers briefly."
    assert built.final_user_message == (
        "Context:\n[0] input.notes:\n"
        '[\n  {\n    "path": "notes/a.md",\n    "line": 3,\n    "text": "Python 3.10 added match"'
        "\n  }\n]\nInstruction:\n"
        '{\n  "input": "Answer."\n}\nReturn JSON matching this schema:\n'
        '{\n  "type": "object",\n  "properties": {\n    "answer": {\n      "type": "string"\n'
        '    }\n  },\n  "required": [\n    "answer"\n  ],\n  "additionalProperties": false\n}'
    )
    assert "layout" not in built.to_json()


def test_the_compact_layout_prints_no_schema_and_renders_values_compactly() -> None:
    compact = PromptLayout.COMPACT
    items = [
        make_context_item(0, "input.question", "Why?", None, "question", compact),
        make_context_item(1, "input.notes", RECORDS, None, None, compact),
    ]
    built = build_context("Asker", None, IDENTITY, items, "Answer.", SCHEMA, None, compact)
    assert built.system == "Role: analyst. Answers briefly."
    # Nothing about the shape is printed: the provider enforces the schema sent beside it.
    assert built.final_user_message == (
        "question:\nWhy?\n"
        "input.notes:\npath | line | text\n"
        "notes/a.md | 3 | Python 3.10 added match\nnotes/b.md | 7 | PEP 634 specifies it\n"
        "Instruction:\nAnswer."
    )
    assert built.to_json()["layout"] == "compact"
    assert built.to_json()["returnSchema"] == SCHEMA


@pytest.mark.parametrize(
    ("identity", "system"),
    [
        ({"role": "analyst", "description": "Answers briefly."}, "Role: analyst. Answers briefly."),
        ({"role": "an analyst.", "description": ""}, "Role: an analyst."),
        ({"role": "", "description": "Answers briefly."}, "You are A. Answers briefly."),
        ({"role": "", "description": ""}, "You are A."),
    ],
)
def test_the_compact_system_message_names_the_agent_only_when_it_has_no_role(
    identity: dict[str, str], system: str
) -> None:
    built = build_context("A", None, identity, [], "x", None, None, PromptLayout.COMPACT)
    assert built.system == system


def test_a_compact_instruction_alone_needs_no_heading() -> None:
    built = build_context("A", None, IDENTITY, [], "Answer.", SCHEMA, None, PromptLayout.COMPACT)
    assert built.final_user_message == "Answer."
    original = build_context("A", None, IDENTITY, [], "Answer.", None, None)
    assert original.final_user_message == "Instruction:\nAnswer."


def test_budgets_count_the_text_of_the_layout_that_is_sent() -> None:
    records = [{"id": n, "title": f"note {n}"} for n in range(40)]
    budget = Budget(amount=200, unit=None)
    original = make_context_item(0, "notes", records, budget)
    compact = make_context_item(0, "notes", records, budget, layout=PromptLayout.COMPACT)
    assert original.clipped and compact.clipped
    assert original.clipped_size <= 200 and compact.clipped_size <= 200
    # The same budget carries about three times as many records in the compact text.
    assert len(compact.value) >= 2 * len(original.value)
    assert compact.original_size == len(compact_text(records))


def test_the_token_breakdown_names_every_part_and_adds_up() -> None:
    compact = PromptLayout.COMPACT
    items = [
        make_context_item(0, "input.question", "Why is the sky blue?", None, "question", compact),
        make_context_item(1, "input.notes", RECORDS, None, None, compact),
    ]
    built = build_context("Asker", None, IDENTITY, items, "Answer.", SCHEMA, None, compact)
    parts = built.token_breakdown()
    assert [entry["index"] for entry in parts["context"]] == [0, 1]
    assert parts["context"][0]["label"] == "question"
    assert parts["schema"] == estimate_tokens(stringify(SCHEMA))  # the schema sent beside it
    assert parts["total"] == (
        parts["system"]
        + parts["instruction"]
        + parts["schema"]
        + sum(entry["tokens"] for entry in parts["context"])
    )
    assert parts["estimate"] is True


def test_estimated_tokens_grow_with_the_text() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("the cat sat") == 3
    assert estimate_tokens("internationalisation") > 1
    assert estimate_tokens("word " * 100) == pytest.approx(100, abs=2)


def run_with(llm: Any) -> list[GenerateRequest]:
    seen: list[GenerateRequest] = []

    class Spy:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def prompt_layout(self, model: Any) -> PromptLayout:
            return prompt_layout_of(self.inner, model)

        def generate(self, request: GenerateRequest) -> Any:
            seen.append(request)
            return self.inner.generate(request)

    agentscript.run(
        agentscript.load_source(PROGRAM),
        {"question": "Why?", "notes": RECORDS},
        RunConfig(model=Spy(llm), journal=False, learn=False),
    )
    return seen


def test_scripted_answers_get_the_0_1_0_layout() -> None:
    (request,) = run_with(ScriptedLlm([{"answer": "x"}]))
    assert request.built.layout is PromptLayout.ORIGINAL
    assert "Return JSON matching this schema:" in request.built.final_user_message


def test_a_fixed_layout_overrides_what_the_provider_would_choose() -> None:
    (request,) = run_with(FixedLayout(ScriptedLlm([{"answer": "x"}]), PromptLayout.COMPACT))
    assert request.built.layout is PromptLayout.COMPACT
    assert request.built.final_user_message.startswith("question:\nWhy?\ninput.notes:\npath |")


def test_the_generate_event_carries_the_token_breakdown() -> None:
    result = agentscript.run(
        agentscript.load_source(PROGRAM),
        {"question": "Why?", "notes": RECORDS},
        RunConfig(model=ScriptedLlm([{"answer": "x"}]), journal=False, learn=False),
    )
    (event,) = [event for event in result.trace if event["kind"] == "generate"]
    breakdown = event["data"]["promptTokens"]
    assert breakdown["total"] > 0
    assert [entry["index"] for entry in breakdown["context"]] == [0, 1]
