"""Counts written as literals are bounded, and a count too large is a located ParseError.

Issue 13, finding 11: `repeat * <4301 digits>` raised Python's int() ValueError ("Exceeds the
limit (4300 digits) for integer string conversion") instead of a ParseError with a position.
"""

from __future__ import annotations

import pytest

from agentscript.lang.checker import check_program
from agentscript.lang.errors import ParseError
from agentscript.lang.parser import parse_program

HUGE = "9" * 4301
LOOPS = {
    "repeat": "repeat * {n} {{ x = 1 }}",
    "for <": "for x in [1] < {n} {{ y = x }}",
    "for max": "for x in [1] max {n} {{ y = x }}",
    "loop until": "loop until done < {n} {{ done = true }}",
}


def program(body: str) -> str:
    return f"agent A {{\n  main func() {{\n    done = false\n    {body}\n  }}\n}}\n"


@pytest.mark.parametrize("loop", list(LOOPS.values()), ids=list(LOOPS))
def test_a_huge_count_is_a_located_parse_error(loop: str) -> None:
    source = program(loop.format(n=HUGE))
    with pytest.raises(ParseError) as raised:
        parse_program(source, "main.as")
    error = raised.value
    assert error.bare_message == (
        "Count 999999999999… (4301 digits) is too large (the limit is 1,000,000,000)"
    )
    assert error.position.line == 4
    assert source.splitlines()[3][error.position.column - 1 :].startswith("9999")


@pytest.mark.parametrize("loop", list(LOOPS.values()), ids=list(LOOPS))
def test_counts_up_to_the_limit_parse(loop: str) -> None:
    parse_program(program(loop.format(n="1000000000")), "main.as")
    parse_program(program(loop.format(n="0001")), "main.as")
    with pytest.raises(ParseError, match="Count 1000000001 is too large"):
        parse_program(program(loop.format(n="1000000001")), "main.as")


def test_generate_attempts_are_bounded_by_the_checker() -> None:
    source = (
        'import llm M from "openai://x"\nagent A {\n  model M\n  main func() {\n'
        f'    x = generate({{ input: "hi", attempts: {"9" * 50} }}) {{ return {{ a string }} }}\n'
        "    return x\n  }\n}\n"
    )
    messages = [d.message for d in check_program(parse_program(source, "main.as"))]
    assert "generate attempts: Count 999999999999… (50 digits) is too large " in messages[0]
