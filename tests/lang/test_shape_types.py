"""Shapes are types at check time: reading a field the value's known shape does not have is
UNKNOWN_FIELD, with a did-you-mean, at the field; where the type cannot be known, nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscript.app.programs import check, load
from agentscript.lang.checker import check_program
from agentscript.lang.parser import parse_program

ROOT = Path(__file__).resolve().parents[2]
HEAD = """import llm M from "openai://gpt-4.1-mini"
import tool Search from "sh://grep"
import tool File from "file://workspace"
agent A {
  model M
  role "r"
  description "d"
"""


def field_errors(body: str) -> list[str]:
    program = parse_program(HEAD + body + "\n}\n", "p.as")
    return [
        f"{d.range.start.line}:{d.range.start.column} {d.message}"
        for d in check_program(program)
        if d.code == "UNKNOWN_FIELD"
    ]


def test_a_misspelt_field_of_a_generate_result() -> None:
    body = """  main func(input { q string }) {
    r = generate({ input: "x" }) -> { name, email, age number, customer }
    return r.nmae
  }"""
    assert field_errors(body) == [
        "10:14 Unknown field 'nmae' of 'r' (did you mean 'name'?); its fields are name, email, "
        "age, customer (the output shape at 9:37)"
    ]


def test_a_field_the_input_contract_does_not_declare() -> None:
    body = """  main func(input { text string }) {
    use input.txt
    return input.text
  }"""
    assert [e.split(";")[0] for e in field_errors(body)] == [
        "9:15 Unknown field 'txt' of 'input' (did you mean 'text'?)"
    ]


def test_a_react_step_through_a_loop_and_a_function_return() -> None:
    body = """  main func(input { q string }) {
    done = false
    loop until done < 3 {
      step = think(input.q)
      if step.acton == "finish" { done = true }
    }
    return done
  }
  func think(q) {
    use q
    generate({ input: "x" }) -> { thought, action, query }
  }"""
    errors = field_errors(body)
    assert [e.split(";")[0] for e in errors] == [
        "12:15 Unknown field 'acton' of 'step' (did you mean 'action'?)"
    ]


@pytest.mark.parametrize(
    "body",
    [
        # a tool result, a json field, an unshaped parameter
        """  main func(input { q string }) {
    found = Search.run({ path: ".", pattern: input.q })
    r = generate({ input: "x" }) -> { data json }
    return [found.matches, r.data.anything]
  }""",
        # different shapes in branches
        """  main func(input { q string }) {
    final = {}
    if input.q == "a" { final = generate({ input: "x" }) -> { answer, more } }
    else { final = generate({ input: "y" }) -> { other } }
    return final.answer
  }""",
        # a field added by assignment
        """  main func(input { q string }) {
    o = { a: 1 }
    o.b = 2
    return o.b
  }""",
        # an index of a list of unknown items, a list of objects from a loop
        """  main func(input { q string }) {
    xs = []
    xs.add({ a: 1 })
    for x in xs < 3 { use x.a }
    return xs[0].b
  }""",
    ],
)
def test_where_the_type_cannot_be_known_nothing_is_said(body: str) -> None:
    assert field_errors(body) == []


PROGRAM_DIRS = ("examples", "tutorials", "tests/fixtures", "benchmarks")
# Fixtures that exist to fail: a parse error and an unknown identifier.
BROKEN_ON_PURPOSE = {"tests/fixtures/cli/broken.as", "tests/fixtures/cli/invalid.as"}


def every_program() -> list[str]:
    found = sorted(
        str(path.relative_to(ROOT))
        for folder in PROGRAM_DIRS
        for path in (ROOT / folder).rglob("*.as")
    )
    return [path for path in found if path not in BROKEN_ON_PURPOSE]


@pytest.mark.parametrize("relative", every_program())
def test_every_program_of_the_repository_checks_clean(relative: str) -> None:
    diagnostics = check(load(ROOT / relative))
    assert [d.format_located() for d in diagnostics] == []
