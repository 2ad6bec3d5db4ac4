"""Closed choices in shapes (`category: "billing" | "bug"`), an extension of the original's
shapes: parsed, checked, formatted, sent as a JSON-schema enum, validated and repaired."""

from __future__ import annotations

import json

import pytest
from pytest_httpserver import HTTPServer

import agentscript
from agentscript.app.lsp.members import type_text
from agentscript.lang import ast
from agentscript.lang.errors import ParseError
from agentscript.lang.source_formatter import format_source
from agentscript.runtime.shapes import coerce, shape_schema
from llm_support import (
    SECRET_KEY,
    Sequence,
    json_response,
    openai_completion,
    program,
    request_bodies,
    run,
)

SHAPE = '{ category: "billing" | "bug" | "feature", priority: 1 | 2 | 3, urgent: boolean }'


def shape_of(source: str) -> ast.ShapeObjectExpr:
    loaded = agentscript.load_source(source, "p.as")
    (function,) = loaded.agents[0].functions
    statement = function.body[-1]
    assert isinstance(statement, ast.ReturnStmt) and isinstance(statement.value, ast.GenerateExpr)
    shape = statement.value.return_shape
    assert shape is not None
    return shape


def test_choices_parse_into_a_closed_type_and_go_out_as_an_enum() -> None:
    shape = shape_of(program("openai://m", shape=SHAPE))
    category, priority, _ = shape.fields
    assert isinstance(category.type, ast.ChoiceShapeType)
    assert category.type.values == ["billing", "bug", "feature"]
    assert type_text(category.type) == '"billing" | "bug" | "feature"'
    assert type_text(priority.type) == "1 | 2 | 3"
    assert shape_schema(shape)["properties"]["category"] == {
        "type": "string",
        "enum": ["billing", "bug", "feature"],
    }
    assert shape_schema(shape)["properties"]["priority"] == {"type": "number", "enum": [1, 2, 3]}


def test_a_list_of_choices_is_a_list_of_enums() -> None:
    shape = shape_of(program("openai://m", shape='{ tags: list["a" | "b"] }'))
    assert shape_schema(shape)["properties"]["tags"] == {
        "type": "array",
        "items": {"type": "string", "enum": ["a", "b"]},
    }


@pytest.mark.parametrize(
    ("shape", "code", "message"),
    [
        (
            '{ c: "a" | 1 }',
            "SHAPE_CHOICE_MIXED",
            "The choices of field 'c' mix strings and numbers",
        ),
        ('{ c: "a" | "b" | "a" }', "SHAPE_CHOICE_DUPLICATE", 'The choice "a" is listed twice'),
    ],
)
def test_malformed_choices_are_checker_errors(shape: str, code: str, message: str) -> None:
    loaded = agentscript.load_source(program("openai://m", shape=shape), "p.as")
    (problem,) = agentscript.check(loaded)
    assert problem.code == code and message in problem.message
    assert problem.format().startswith(f"ERROR {code} at 10:")  # the line of the shape


def test_a_choice_list_that_ends_after_a_bar_is_a_located_parse_error() -> None:
    with pytest.raises(ParseError, match="Expected a string or a number after '\\|'") as caught:
        agentscript.load_source(program("openai://m", shape='{ c: "a" | }'), "p.as")
    assert str(caught.value).endswith(" at 10:83")  # just after the bar


def test_a_budget_literal_as_a_choice_is_a_located_parse_error_not_a_crash() -> None:
    with pytest.raises(ParseError, match="A choice value is a string or a plain number, got '2k'"):
        agentscript.load_source(program("openai://m", shape="{ c: 2k }"), "p.as")
    with pytest.raises(ParseError, match="got '1k'"):
        agentscript.load_source(program("openai://m", shape='{ c: "a" | 1k }'), "p.as")


def test_the_formatter_keeps_choices() -> None:
    source = program("openai://m", shape=SHAPE)
    assert format_source(format_source(source)) == format_source(source)
    assert '"billing" | "bug" | "feature"' in format_source(source)


def test_the_mock_answers_with_the_first_choice() -> None:
    result = agentscript.run(
        agentscript.load_source(program("openai://m", shape=SHAPE), "p.as"),
        {"question": "q"},
        agentscript.RunConfig(model="mock", journal=False),
    )
    assert result.value == {"category": "billing", "priority": 1, "urgent": True}


def test_a_value_outside_the_choices_is_repaired_naming_them(httpserver: HTTPServer) -> None:
    wrong = {"category": "Billing", "priority": 1, "urgent": True}
    right = {"category": "billing", "priority": 2, "urgent": False}
    httpserver.expect_request("/v1/chat/completions").respond_with_handler(
        Sequence(
            json_response(openai_completion(json.dumps(wrong))),
            json_response(openai_completion(json.dumps(right))),
        )
    )
    environ = {"OPENAI_API_KEY": SECRET_KEY, "OPENAI_BASE_URL": httpserver.url_for("/v1")}
    result = run(program("openai://m", shape=SHAPE, attempts=2), environ)
    assert result.value == right
    first, repaired = request_bodies(httpserver)
    schema = first["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["category"]["enum"] == ["billing", "bug", "feature"]
    assert first["response_format"]["json_schema"]["strict"] is True
    assert (
        'LLM result field \'category\' must be one of "billing", "bug", "feature", got "Billing"'
        in repaired["messages"][1]["content"]
    )


def test_a_number_choice_takes_its_number_written_as_text_a_string_choice_is_exact() -> None:
    shape = shape_of(program("openai://m", shape=SHAPE))
    answer = {"category": "Bug", "priority": "3", "urgent": False}
    assert coerce(answer, shape) == {"category": "Bug", "priority": 3, "urgent": False}
