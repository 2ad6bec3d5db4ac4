"""Property tests: whatever text comes in, the lexer and parser fail only with ParseError, the
loader only with ParseError or LoadError, and the checker, formatter and AST JSON never fail.

Inputs are random token soups, random text, and mutations of the valid programs in the fixture
directory. Examples are derandomized and bounded so the module runs in a few seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentscript
from agentscript.lang import ast
from agentscript.lang.checker import check_program
from agentscript.lang.errors import ParseError
from agentscript.lang.formatter import format_expr
from agentscript.lang.lexer import tokenize
from agentscript.lang.parser import parse_program
from agentscript.providers.llm.mock import MockLlm
from agentscript.providers.memory.mock import MockMemory
from agentscript.providers.tools.mock import MockTools
from agentscript.runtime.errors import AgentScriptError, LoadError
from agentscript.runtime.interpreter import ExecutionOptions, execute

FIXTURES = Path(__file__).parents[1] / "fixtures"

# The parser and the interpreter raise the recursion limit on first use, which Hypothesis (it
# restores the limit after each test) reports as a warning.
pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")

FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

WORDS = (
    "import main agent func use loop until repeat for in return if else and or not generate "
    "from true false none string number boolean json list tool llm file memory model role "
    "description input max as x y step-1 Search Model A B"
).split()
SYMBOLS = "{ } ( ) [ ] . , : = ! < > * + - / == != <= >= += -= ->".split()
LITERALS = ['"text"', "'s'", '"a\\nb"', "0", "2", "2k", "1.5k", "300", "3x", '"unterminated', "\\"]
SPACING = [" ", "\n", "\t", "// note\n"]

tokens = st.sampled_from(WORDS + SYMBOLS + LITERALS)
token_soup = st.lists(
    st.tuples(tokens, st.sampled_from([*SPACING, ""])), min_size=0, max_size=80
).map(lambda pairs: "".join(token + space for token, space in pairs))

LATER_FORMS = (
    'import llm M from "openai://x"\nmain agent {\n  model M\n  role "r"\n  description "d"\n'
    "  main func(input { q string, n: number }) {\n    use input.q max 2k as question\n"
    "    x = -(1 + 2) * 3\n    x -= 1\n    if x < 2 and not false { x = 1 } else if x { x = 2 }\n"
    '    return generate({ input: "i", max_output: 1k, strict: true }) -> { a, b: list[json] }\n'
    "  }\n}\n"
)
SEEDS = [
    *sorted(path.read_text(encoding="utf-8") for path in (FIXTURES / "regression").glob("*.as")),
    LATER_FORMS,
]


@st.composite
def mutated_program(draw: st.DrawFn) -> str:
    """A seed program with a few random edits: deletions, duplications and insertions."""
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        start = draw(st.integers(min_value=0, max_value=len(text)))
        end = draw(st.integers(min_value=start, max_value=min(len(text), start + 40)))
        edit = draw(st.sampled_from(["delete", "duplicate", "insert"]))
        if edit == "delete":
            text = text[:start] + text[end:]
        elif edit == "duplicate":
            text = text[:end] + text[start:end] + text[end:]
        else:
            text = text[:start] + draw(tokens) + draw(st.sampled_from(SPACING)) + text[start:]
    return text


def expressions(program: ast.Program) -> list[ast.Expr]:
    """The top-level expressions of every function body (enough to exercise the formatter)."""
    found: list[ast.Expr] = []
    for agent in program.agents:
        for func in agent.functions:
            for stmt in func.body:
                for name in ("value", "expr", "condition", "iterable"):
                    value = getattr(stmt, name, None)
                    if value is not None:
                        found.append(value)
    return found


def assert_front_end_is_total(source: str) -> None:
    """Lexing and parsing may only raise ParseError; everything after a parse never raises."""
    try:
        tokenize(source)
        program = parse_program(source)
    except ParseError as error:
        assert (
            str(error) == f"{error.bare_message} at {error.position.line}:{error.position.column}"
        )
        return
    diagnostics = check_program(program)
    assert all(d.format().startswith("ERROR ") for d in diagnostics)
    json.dumps(program.to_json())
    for expr in expressions(program):
        assert isinstance(format_expr(expr), str)


@FUZZ
@given(token_soup)
def test_token_soup_never_crashes_the_front_end(source: str) -> None:
    assert_front_end_is_total(source)


@FUZZ
@given(st.text(max_size=200))
def test_random_text_never_crashes_the_lexer(source: str) -> None:
    assert_front_end_is_total(source)


@FUZZ
@given(mutated_program())
def test_mutated_programs_never_crash_the_front_end(source: str) -> None:
    assert_front_end_is_total(source)


@FUZZ
@given(mutated_program())
def test_loading_mutated_programs_fails_only_with_parse_or_load_errors(source: str) -> None:
    try:
        program = agentscript.load_source(source)
    except (ParseError, LoadError):
        return
    assert isinstance(agentscript.check(program), list)


@FUZZ
@given(mutated_program())
def test_valid_mutated_programs_run_or_fail_with_agentscript_errors(source: str) -> None:
    """A mutation that still checks clean runs with the mock providers; any failure is one of
    ours (with a message), never a Python exception escaping the interpreter."""
    try:
        program = agentscript.load_source(source, FIXTURES / "regression" / "mutated.as")
    except (ParseError, LoadError):
        return
    if agentscript.check(program):
        return
    options = ExecutionOptions(
        llm=MockLlm(), tools=MockTools(), memory=MockMemory(), debug_stream=None
    )
    try:
        execute(program, {"question": "q", "goal": "g", "q": "x"}, options)
    except AgentScriptError as error:
        assert str(error)


def test_seed_programs_are_valid() -> None:
    """The mutations start from programs the front end accepts and the checker passes."""
    for source in SEEDS:
        program = agentscript.load_source(source, FIXTURES / "regression" / "seed.as")
        assert program.agents
        assert agentscript.check(program) == []
