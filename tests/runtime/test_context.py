"""Prompt construction: the system prompt, context item headings and rendering, budget clipping
of strings, lists and objects, schema conversion, and the exact final user message."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentscript.lang import ast
from agentscript.lang.formatter import format_expr
from agentscript.lang.parser import parse_program
from agentscript.runtime.context import make_context_item, system_message, user_message
from agentscript.runtime.shapes import shape_schema
from agentscript.runtime.values import FunctionBinding, ToolBinding

ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def budget(text: str) -> ast.Budget:
    """A Budget as the parser reads `use x < text`."""
    statement = parse_program(f"agent A {{ main func() {{ use x < {text} }} }}").agents[0]
    use = statement.functions[0].body[0]
    assert isinstance(use, ast.UseStmt) and use.budget is not None
    return use.budget


def output_shape(fields: str) -> ast.ShapeObjectExpr:
    program = parse_program(
        f'agent A {{ main func() {{ return generate({{ input: "i" }}) -> {{ {fields} }} }} }}'
    )
    statement = program.agents[0].functions[0].body[0]
    assert isinstance(statement, ast.ReturnStmt)
    assert isinstance(statement.value, ast.GenerateExpr)
    assert statement.value.return_shape is not None
    return statement.value.return_shape


# ----------------------------------------------------------------------------- system prompt


def test_system_prompt_names_the_agent_role_and_description() -> None:
    text = system_message("A", {"role": "Researcher", "description": "Finds facts."})
    assert text == "You are A.\nrole: Researcher\ndescription: Finds facts."


def test_system_prompt_of_a_run_does_not_mention_the_model(
    run: Callable[..., Any], program: Callable[..., str], make_llm: Callable[..., Any]
) -> None:
    llm = make_llm()
    run(program('return generate({ input: "Go." }) -> { a string }'), llm=llm)
    (request,) = llm.requests
    assert request.built.system == "You are A.\nrole: Researcher\ndescription: Finds facts."
    assert "gpt" not in request.built.system
    assert "gpt" not in request.built.final_user_message


def test_anonymous_main_agent_is_named_in_the_system_prompt(
    run: Callable[..., Any], make_llm: Callable[..., Any]
) -> None:
    llm = make_llm()
    run(
        'import llm M from "openai://x"\nmain agent {\n  model M\n  role "r"\n  description "d"\n'
        '  main func() { return generate({ input: "Go." }) -> { a string } }\n}',
        llm=llm,
    )
    assert llm.requests[0].built.system.startswith("You are __main_agent.\n")


# ----------------------------------------------------------------------------- context items


def test_string_is_clipped_to_its_budget() -> None:
    item = make_context_item(0, "input.text", ALPHABET, budget("5"))
    assert (item.value, item.text) == ("abcde", "abcde")
    assert item.clipped is True
    assert (item.original_size, item.clipped_size) == (26, 5)


def test_heading_shows_index_and_source() -> None:
    item = make_context_item(0, "input.text", ALPHABET, budget("5"))
    assert item.heading == "[0] input.text:"


def test_label_replaces_the_index_in_the_heading() -> None:
    item = make_context_item(3, "input.docs.summary", "x", None, "evidence")
    assert item.heading == "[evidence] input.docs.summary:"
    assert item.to_json()["label"] == "evidence"


def test_list_keeps_the_longest_prefix_that_fits() -> None:
    item = make_context_item(0, "notes", ["alpha", "beta", "gamma"], budget("25"))
    assert item.value == ["alpha", "beta"]
    assert item.text == '[\n  "alpha",\n  "beta"\n]'
    assert item.clipped is True
    assert (item.original_size, item.clipped_size) == (34, 23)


def test_object_keeps_the_longest_prefix_of_entries_that_fits() -> None:
    item = make_context_item(0, "notes", {"first": "alpha", "second": "beta"}, budget("25"))
    assert item.value == {"first": "alpha"}
    assert item.text == '{\n  "first": "alpha"\n}'
    assert (item.original_size, item.clipped_size) == (42, 22)


@pytest.mark.parametrize(
    ("value", "text"), [(["a very long first item"], "[]"), ({"key": "a long value"}, "{}")]
)
def test_container_whose_first_entry_does_not_fit_becomes_empty(value: Any, text: str) -> None:
    item = make_context_item(0, "x", value, budget("5"))
    assert item.text == text
    assert item.clipped is True


@pytest.mark.parametrize("value", [1234567890, True, None])
def test_scalars_other_than_strings_are_never_clipped(value: Any) -> None:
    item = make_context_item(0, "x", value, budget("2"))
    assert item.value == value
    assert item.clipped is False
    assert item.original_size == item.clipped_size


@pytest.mark.parametrize(
    ("budget_text", "limit"), [("2k", 2000), ("1.5k", 1500), ("300", 300), ("2m", 2), ("7.9", 7)]
)
def test_budget_character_limits(budget_text: str, limit: int) -> None:
    assert budget(budget_text).character_limit() == limit
    item = make_context_item(0, "x", "y" * 3000, budget(budget_text))
    assert item.clipped_size == limit


def test_text_within_budget_is_unchanged() -> None:
    item = make_context_item(0, "x", "abc", budget("3"))
    assert (item.text, item.clipped) == ("abc", False)


def test_no_budget_means_no_clipping() -> None:
    item = make_context_item(0, "x", "y" * 10_000, None)
    assert item.clipped is False
    assert item.to_json()["budget"] is None


def test_sizes_count_utf16_units_and_pairs_are_not_split() -> None:
    item = make_context_item(0, "x", "😀😀😀", budget("4"))
    assert item.text == "😀😀"
    assert (item.original_size, item.clipped_size) == (6, 4)
    odd = make_context_item(0, "x", "😀😀😀", budget("3"))
    assert odd.text == "😀"


def test_non_string_values_render_as_pretty_json() -> None:
    item = make_context_item(0, "data", {"n": 1.0, "list": [], "obj": {}, "s": "é"}, None)
    assert item.text == '{\n  "n": 1,\n  "list": [],\n  "obj": {},\n  "s": "é"\n}'


def test_bindings_and_cycles_are_sanitised_in_context() -> None:
    cycle: list[Any] = [ToolBinding("Search", "mcp://x"), FunctionBinding("A", "f")]
    cycle.append(cycle)
    item = make_context_item(0, "x", cycle, None)
    assert item.value == [
        {"tool": "Search", "uri": "mcp://x"},
        {"function": "f", "agent": "A"},
        "[Circular]",
    ]


def test_context_item_json_uses_the_0_1_0_keys() -> None:
    item = make_context_item(2, "input.text", ALPHABET, budget("5"))
    assert item.to_json() == {
        "index": 2,
        "source": "input.text",
        "value": "abcde",
        "text": "abcde",
        "budget": {"amount": 5},
        "clipped": True,
        "originalSize": 26,
        "clippedSize": 5,
    }


@pytest.mark.parametrize(
    ("expression", "source"),
    [
        ("input.question", "input.question"),
        ("'single'", '"single"'),
        ('"say \\"hi\\""', '"say \\"hi\\""'),
        ("2k", "2k"),
        ("1.50", "1.50"),
        ("[a b]", "[a, b]"),
        ("{ k: v k2: 1 }", "{ k: v, k2: 1 }"),
        ("{}", "{}"),
        ("results[0].id", "results[0].id"),
        ('Search.query("x", 2)', 'Search.query("x", 2)'),
        ("not done", "not done"),
        ("a == b and not c", "a == b and not c"),
        ("(a or b) and c", "(a or b) and c"),
        ("a - (b - c)", "a - (b - c)"),
        ("-(a + b)", "-(a + b)"),
        (
            'generate({ input: "hi", attempts: 2 }) -> { a }',
            'generate({ input: "hi", attempts: 2 })',
        ),
    ],
)
def test_use_source_text_is_canonical(expression: str, source: str) -> None:
    statement = parse_program(f"agent A {{ main func() {{ use {expression} }} }}")
    use = statement.agents[0].functions[0].body[0]
    assert isinstance(use, ast.UseStmt)
    assert format_expr(use.value) == source


# ----------------------------------------------------------------------------- schema


def test_schema_conversion_of_every_shape_type() -> None:
    shape = output_shape(
        "s string, n number, b boolean, j json, l list, ls list[string], "
        "lln list[list[number]], implicit"
    )
    assert shape_schema(shape) == {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "n": {"type": "number"},
            "b": {"type": "boolean"},
            "j": {},
            "l": {"type": "array"},
            "ls": {"type": "array", "items": {"type": "string"}},
            "lln": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
            "implicit": {"type": "string"},
        },
        "required": ["s", "n", "b", "j", "l", "ls", "lln", "implicit"],
        "additionalProperties": False,
    }


def test_schema_keys_keep_the_0_1_0_order() -> None:
    schema = shape_schema(output_shape("z string, a number"))
    assert list(schema) == ["type", "properties", "required", "additionalProperties"]
    assert list(schema["properties"]) == ["z", "a"]


# ----------------------------------------------------------------------------- final user message


def test_user_message_layout_without_context() -> None:
    schema = shape_schema(output_shape("ok boolean"))
    assert user_message([], "Check it.", schema) == (
        "Instruction:\nCheck it.\nReturn JSON matching this schema:\n"
        '{\n  "type": "object",\n  "properties": {\n    "ok": {\n      "type": "boolean"\n'
        '    }\n  },\n  "required": [\n    "ok"\n  ],\n  "additionalProperties": false\n}'
    )


def test_user_message_of_a_free_form_generate_has_no_schema() -> None:
    item = make_context_item(0, "x", "data", None)
    assert user_message([item], {"task": "t"}, None) == (
        'Context:\n[0] x:\ndata\nInstruction:\n{\n  "task": "t"\n}'
    )


GOLDEN_PROGRAM = """import llm Model from "openai://gpt-4.1-mini"

agent Researcher {
  model Model
  role "Researcher"
  description "Finds and summarizes facts."

  main func(input { topic string, sources list[string] }) {
    use input.topic
    use input.sources < 30
    notes = { first: "alpha", second: "beta" }
    use notes < 25 as "prior notes"
    return generate({ input: "Write a short brief.", limit: 300 }) {
      return { brief string, confidence number, tags list[string] }
    }
  }
}
"""


def test_prompt_matches_the_golden_files(
    run: Callable[..., Any], make_llm: Callable[..., Any], fixtures_dir: Path
) -> None:
    llm = make_llm()
    run(
        GOLDEN_PROGRAM,
        {"topic": "tides", "sources": ["moon.txt", "sun.txt", "wind.txt"]},
        llm=llm,
    )
    (request,) = llm.requests
    golden = fixtures_dir / "lang"
    assert request.built.system == (golden / "prompt-system.txt").read_text()
    assert request.built.final_user_message == (golden / "prompt-user.txt").read_text()
