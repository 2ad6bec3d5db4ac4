"""Misspelt names get "did you mean", and an unclosed output shape is named where it opened."""

from __future__ import annotations

import pytest

from agentscript.lang.checker import check_program
from agentscript.lang.errors import ParseError
from agentscript.lang.parser import parse_program
from agentscript.lang.suggest import did_you_mean

PROGRAM = """import llm Model from "openai://gpt-4.1-mini"

main agent A {{
  model {model}
  role "r"
  description "d"
  main func(input {{ name {type} }}) {{
    return {expression}
  }}
}}
"""


def messages(model: str = "Model", type_: str = "string", expression: str = "input") -> list[str]:
    source = PROGRAM.format(model=model, type=type_, expression=expression)
    return [diagnostic.message for diagnostic in check_program(parse_program(source))]


def test_an_unknown_identifier_suggests_the_closest_name() -> None:
    assert messages(expression="inptu.name") == [
        "Unknown identifier 'inptu' (did you mean 'input'?)"
    ]


def test_an_unknown_model_suggests_the_llm_import() -> None:
    assert messages(model="Modle") == ["Unknown model import 'Modle' (did you mean 'Model'?)"]


def test_an_unknown_shape_type_suggests_the_type() -> None:
    with pytest.raises(ParseError) as caught:
        parse_program(PROGRAM.format(model="Model", type="strng", expression="input"))
    assert caught.value.bare_message == "Unsupported shape type 'strng' (did you mean 'string'?)"


@pytest.mark.parametrize(
    ("written", "meant"),
    [("integer", "number"), ("int", "number"), ("bool", "boolean"), ("array", "list")],
)
def test_a_type_name_of_other_languages_suggests_the_shape_type(written: str, meant: str) -> None:
    """As in the original, an unknown type stops the parse (the program cannot run); the message
    keeps the original's words and names the type meant."""
    with pytest.raises(ParseError) as caught:
        parse_program(PROGRAM.format(model="Model", type=written, expression="input"))
    assert caught.value.bare_message == (
        f"Unsupported shape type '{written}' (did you mean '{meant}'?)"
    )


@pytest.mark.parametrize(
    ("name", "known", "hint"),
    [
        ("inptu", ["input", "Model"], " (did you mean 'input'?)"),
        ("model", ["Model"], " (did you mean 'Model'?)"),
        ("zzz", ["input"], ""),
        ("a", ["A"], ""),  # a one-letter name is nobody's typo
    ],
)
def test_did_you_mean(name: str, known: list[str], hint: str) -> None:
    assert did_you_mean(name, known) == hint


def test_an_unclosed_output_shape_says_where_it_opened() -> None:
    source = (
        "main agent A {\n  main func() {\n"
        '    return generate({ input: "hi" }) -> { greeting string\n  }\n}\n'
    )
    with pytest.raises(ParseError) as caught:
        parse_program(source, "shape.as")
    assert caught.value.bare_message.startswith("Missing '}' to close the shape opened at 3:41")
    assert (caught.value.position.line, caught.value.position.column) == (3, 41)
