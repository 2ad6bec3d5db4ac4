"""The static checker: every diagnostic code of reference §3.1 with its exact message and
position, the scoping rules it enforces, and the programs it must accept."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import agentscript
from agentscript.lang.checker import check_program
from agentscript.lang.errors import SemanticError
from agentscript.lang.parser import parse_program

OTHER_AGENT = """
agent B {
  main func(x) { return x }
  func work(a, b) { return a }
}
"""

MORE_IMPORTS = """import memory Lessons from "file://lessons.jsonl"
import file Notes from "/tmp/notes.txt"
"""


@dataclass(frozen=True)
class Case:
    """A program and the diagnostics it must produce, as (code, where, message) triples.

    `body` goes into the standard agent's main func (see the `program` fixture) unless `source`
    gives the whole program. `where` is a needle for the `at` fixture (`^` marks the character).
    """

    id: str
    expected: list[tuple[str, str, str]]
    body: str = ""
    functions: str = ""
    source: str | None = None
    params: str = ""
    with_other_agent: bool = False
    occurrence: dict[str, int] = field(default_factory=dict)


def full_source(case: Case, program: Callable[..., str]) -> str:
    if case.source is not None:
        return case.source
    text = program(case.body, params=case.params, functions=case.functions, imports=MORE_IMPORTS)
    if case.with_other_agent:
        text = text.replace("\nagent A {", "\nmain agent A {", 1) + OTHER_AGENT
    return text


CASES = [
    # ------------------------------------------------------------------ program level
    Case(
        "duplicate-import",
        [("DUPLICATE_IMPORT", "import llm", "Duplicate import 'T'")],
        source='import tool T from "a"\nimport llm T from "b"\nagent A { main func() { return 1 } }',
    ),
    Case(
        "duplicate-agent",
        [("DUPLICATE_AGENT", "\n^agent A", "Duplicate agent 'A'")],
        source="main agent A { main func() { return 1 } }\nagent A { func f() { return 1 } }",
    ),
    Case(
        "duplicate-main-agent",
        [("DUPLICATE_MAIN_AGENT", "main agent B", "Program can only have one main agent")],
        source="main agent A { main func() { return 1 } }\nmain agent B { main func() { return 1 } }",
    ),
    Case(
        "missing-main-agent",
        [
            (
                "MISSING_MAIN_AGENT",
                "agent A",
                "Program with multiple agents must declare one main agent",
            )
        ],
        source="agent A { main func() { return 1 } }\nagent B { main func() { return 1 } }",
    ),
    Case(
        "missing-main-func-only-agent",
        [("MISSING_MAIN_FUNC", "agent A", "Entry agent must declare one main func")],
        source="agent A { func f() { return 1 } }",
    ),
    Case(
        "missing-main-func-main-agent",
        [("MISSING_MAIN_FUNC", "main agent A", "Entry agent must declare one main func")],
        source="agent B { main func() { return 1 } }\nmain agent A { func f() { return 1 } }",
    ),
    Case("empty-program", [], source=""),
    # ------------------------------------------------------------------ agents and functions
    Case(
        "duplicate-function",
        [
            (
                "DUPLICATE_FUNCTION",
                "^func helper() { return 2",
                "Duplicate function 'helper' in agent 'A'",
            )
        ],
        body="return 1",
        functions="  func helper() { return 1 }\n  func helper() { return 2 }\n",
    ),
    Case(
        "duplicate-main-func",
        [
            ("DUPLICATE_FUNCTION", "main func(b)", "Duplicate function '__main' in agent 'A'"),
            ("DUPLICATE_MAIN_FUNC", "main func(b)", "Agent 'A' can only have one main func"),
        ],
        body="return 1",
        functions="  main func(b) { return b }\n",
    ),
    Case(
        "named-second-main-func",
        [("DUPLICATE_MAIN_FUNC", "main func run", "Agent 'A' can only have one main func")],
        body="return 1",
        functions="  main func run() { return 2 }\n",
    ),
    Case(
        "function-named-like-an-import",
        [("DUPLICATE_BINDING", "func Search", "Function 'Search' conflicts with an imported tool")],
        body="return 1",
        functions="  func Search() { return 1 }\n",
    ),
    Case(
        "duplicate-param",
        [("DUPLICATE_PARAM", "a, ^a)", "Duplicate parameter 'a' in function 'g'")],
        body="return 1",
        functions="  func g(a, a) { return a }\n",
    ),
    Case(
        "param-shadows-import",
        [
            (
                "PARAM_SHADOWS_IMPORT",
                "g(^Lessons",
                "Parameter 'Lessons' conflicts with an imported memory",
            )
        ],
        body="return 1",
        functions="  func g(Lessons) { return 1 }\n",
    ),
    Case(
        "shape-on-a-helper-param",
        [
            (
                "INVALID_PARAM_SHAPE",
                "h(^input",
                "V0 only supports shape declarations on the main func input parameter",
            )
        ],
        body="return 1",
        functions="  func h(input { q string }) { return 1 }\n",
    ),
    Case(
        "shape-on-a-main-param-not-named-input",
        [
            (
                "INVALID_PARAM_SHAPE",
                "request {",
                "V0 only supports shape declarations on the main func input parameter",
            )
        ],
        body="return 1",
        params="request { q string }",
    ),
    Case(
        "shape-on-a-second-main-param",
        [
            (
                "INVALID_PARAM_SHAPE",
                "input { z",
                "V0 only supports shape declarations on the main func input parameter",
            )
        ],
        body="return 1",
        params="first, input { z string }",
    ),
    Case(
        "duplicate-input-shape-field",
        [("DUPLICATE_SHAPE_FIELD", "q string, ^q number", "Duplicate generate return field 'q'")],
        body="return 1",
        params="input { q string, q number }",
    ),
    # ------------------------------------------------------------------ statements
    Case(
        "use-budget-zero",
        [("INVALID_BUDGET", "use Notes", "Budget amount must be greater than 0")],
        body="use Notes < 0\nreturn 1",
    ),
    Case(
        "use-budget-zero-thousands",
        [("INVALID_BUDGET", "use Notes", "Budget amount must be greater than 0")],
        body="use Notes max 0k\nreturn 1",
    ),
    Case(
        "for-count-zero",
        [("INVALID_ITERATION_LIMIT", "for i", "For iteration count must be greater than 0")],
        body="for i in [1] < 0 { }\nreturn 1",
    ),
    Case(
        "loop-and-repeat-zero-are-legal",
        [],
        body="done = false\nloop until done < 0 { }\nrepeat * 0 { }\nreturn 1",
    ),
    Case(
        "model-not-a-name",
        [("INVALID_CONFIG", 'model "gpt"', "model must reference an imported llm name")],
        body='model "gpt"\nreturn 1',
    ),
    Case(
        "role-not-a-string",
        [("INVALID_CONFIG", "role 1", "role must be a string")],
        body="role 1\nreturn 1",
    ),
    Case(
        "description-not-a-literal-string",
        [("INVALID_CONFIG", "description x", "description must be a string")],
        body='x = "y"\ndescription x\nreturn 1',
    ),
    Case(
        "unknown-model",
        [("UNKNOWN_MODEL", "model ^Nope", "Unknown model import 'Nope'")],
        body="model Nope\nreturn 1",
    ),
    Case(
        "model-not-an-llm",
        [("INVALID_MODEL", "model ^Search", "model must reference an imported llm")],
        body="model Search\nreturn 1",
    ),
    Case(
        "agent-level-bad-config",
        [
            ("INVALID_CONFIG", "role 42", "role must be a string"),
            ("UNKNOWN_MODEL", "model ^Other", "Unknown model import 'Other'"),
        ],
        source="agent A {\n  role 42\n  model Other\n  main func() { return 1 }\n}",
    ),
    Case(
        "unknown-identifier",
        [("UNKNOWN_IDENTIFIER", "return ^missing", "Unknown identifier 'missing'")],
        body="return missing",
    ),
    Case(
        "compound-assignment-needs-an-existing-name",
        [("UNKNOWN_IDENTIFIER", "^total +=", "Unknown identifier 'total'")],
        body="total += 1\nreturn 1",
    ),
    # ------------------------------------------------------------------ use
    *[
        Case(
            f"use-{kind}",
            [
                (
                    "INVALID_USE_RESOURCE",
                    f"use ^{name}",
                    f"Resource '{name}' cannot be used as prompt context",
                )
            ],
            body=f"use {text}\nreturn 1",
            functions="  func helper() { return 1 }\n",
        )
        for kind, name, text in [
            ("tool", "Search", "Search"),
            ("llm", "Model", "Model"),
            ("agent", "A", "A"),
            ("function", "helper", "helper"),
            ("memory", "Lessons", "Lessons"),
            ("member-of-tool", "Search", "Search.url"),
            ("index-of-memory", "Lessons", "Lessons[0].text"),
        ]
    ],
    Case("use-file-import", [], body="use Notes < 2k\nreturn 1"),
    Case("use-call-root-is-not-checked", [], body='use Search.query("x")\nreturn 1'),
    Case("use-local-shadowing-an-import", [], body="Search = 1\nuse Search\nreturn 1"),
    # ------------------------------------------------------------------ calls
    Case(
        "unknown-function",
        [("UNKNOWN_FUNCTION", "^nope(", "Unknown function 'nope'")],
        body="return nope()",
    ),
    Case(
        "agent-without-main-func",
        [("UNKNOWN_FUNCTION", "return ^C(", "Agent 'C' has no callable main func")],
        source=(
            'import llm M from "x"\nmain agent A { main func() { return C(1) } }\n'
            "agent C { func f() { return 1 } }"
        ),
    ),
    Case(
        "unknown-agent-function",
        [("UNKNOWN_FUNCTION", "^B.nope", "Unknown function 'B.nope'")],
        body="return B.nope()",
        with_other_agent=True,
    ),
    Case(
        "calling-a-variable",
        [("NOT_CALLABLE", "^x()", "'x' is not an agent function or agent")],
        body="x = 1\nreturn x()",
    ),
    Case(
        "calling-a-tool",
        [("NOT_CALLABLE", "^Search(", "'Search' is not an agent function or agent")],
        body='return Search("q")',
    ),
    Case(
        "calling-a-call-result",
        [
            (
                "NOT_CALLABLE",
                "^helper()()",
                "Only agent functions and member calls can be called in V0",
            )
        ],
        body="return helper()()",
        functions="  func helper() { return 1 }\n",
    ),
    Case(
        "unknown-memory-method",
        [("UNKNOWN_MEMORY_METHOD", "^Lessons.remove", "Unknown memory method 'Lessons.remove'")],
        body="return Lessons.remove({})",
    ),
    Case(
        "own-function-arity",
        [
            (
                "INVALID_ARGUMENT_COUNT",
                "^helper(1)",
                "Function 'A.helper' expects 0 argument(s), got 1",
            )
        ],
        body="return helper(1)",
        functions="  func helper() { return 1 }\n",
    ),
    Case(
        "agent-main-arity",
        [
            (
                "INVALID_ARGUMENT_COUNT",
                "^B(1, 2)",
                "Function 'B.__main' expects 1 argument(s), got 2",
            )
        ],
        body="return B(1, 2)",
        with_other_agent=True,
    ),
    Case(
        "agent-function-arity",
        [("INVALID_ARGUMENT_COUNT", "^B.work", "Function 'B.work' expects 2 argument(s), got 1")],
        body="return B.work(1)",
        with_other_agent=True,
    ),
    Case(
        "memory-arity",
        [
            (
                "INVALID_ARGUMENT_COUNT",
                "^Lessons.add",
                "Memory method 'Lessons.add' expects 1 argument(s), got 0",
            ),
            (
                "INVALID_ARGUMENT_COUNT",
                "^Lessons.query",
                "Memory method 'Lessons.query' expects 1 argument(s), got 2",
            ),
        ],
        body="Lessons.add()\nreturn Lessons.query({}, {})",
    ),
    Case(
        "agent-calls-with-the-right-arity",
        [],
        body="a = B(1)\nreturn B.work(a, 2)",
        with_other_agent=True,
    ),
    Case("tool-calls-are-not-checked", [], body="return Search.anything(1, 2, 3)"),
    # ------------------------------------------------------------------ generate
    Case(
        "duplicate-generate-option",
        [("DUPLICATE_GENERATE_OPTION", "^input: 2", "Duplicate generate option 'input'")],
        body="return generate({ input: 1, input: 2 }) -> { a string }",
    ),
    *[
        Case(
            f"attempts-{value}",
            [
                (
                    "INVALID_GENERATE_ATTEMPTS",
                    "^attempts",
                    "generate attempts must be a positive integer",
                )
            ],
            body=f'x = 2\nreturn generate({{ input: "i", attempts: {value} }}) -> {{ a string }}',
        )
        for value in ["0", "1.5", '"2"', "x"]
    ],
    *[
        Case(
            f"limit-{value}",
            [("INVALID_GENERATE_LIMIT", "^limit", "generate limit must be a positive budget")],
            body=f'return generate({{ input: "i", limit: {value} }}) -> {{ a string }}',
        )
        for value in ["0", "0k"]
    ],
    Case(
        "debug-not-a-boolean",
        [("INVALID_GENERATE_DEBUG", "^debug", "generate debug must be a boolean")],
        body='return generate({ input: "i", debug: "yes" }) -> { a string }',
    ),
    Case(
        "unknown-generate-option",
        [("UNKNOWN_GENERATE_OPTION", "^tone", "Unknown generate option 'tone'")],
        body='return generate({ input: "i", tone: "warm" }) -> { a string }',
    ),
    Case(
        "generate-without-input",
        [
            (
                "INVALID_GENERATE_INPUT",
                "^generate",
                "generate object argument requires an input field",
            )
        ],
        body="return generate({ attempts: 2 }) -> { a string }",
    ),
    Case(
        "duplicate-output-field",
        [("DUPLICATE_SHAPE_FIELD", "a string, ^a number", "Duplicate generate return field 'a'")],
        body='return generate({ input: "i" }) { return { a string, a number } }',
    ),
    Case(
        "unknown-identifier-in-generate-input",
        [("UNKNOWN_IDENTIFIER", "input: ^nope", "Unknown identifier 'nope'")],
        body="return generate({ input: nope }) -> { a string }",
    ),
    Case(
        "all-0-1-0-options-valid",
        [],
        body='return generate({ input: "i", attempts: 3, limit: 2k, debug: false }) -> { a string }',
    ),
    Case(
        "all-later-options-valid",
        [],
        body=(
            'return generate({ input: "i", max_output: 300, temperature: 0.7, think: "high",'
            " strict: false }) -> { a }"
        ),
    ),
    Case(
        "later-options-invalid",
        [
            (
                "INVALID_GENERATE_MAX_OUTPUT",
                "^max_output",
                "generate max_output must be a positive budget",
            ),
            (
                "INVALID_GENERATE_TEMPERATURE",
                "^temperature",
                "generate temperature must be a number",
            ),
            (
                "INVALID_GENERATE_THINK",
                "^think",
                "generate think must be a boolean or one of 'auto', 'low', 'medium', 'high'",
            ),
            ("INVALID_GENERATE_STRICT", "^strict", "generate strict must be a boolean"),
        ],
        body=(
            'return generate({ input: "i", max_output: 0, temperature: "hot", think: "max",'
            " strict: 1 }) -> { a }"
        ),
    ),
    Case(
        "limit-and-max-output",
        [
            (
                "DUPLICATE_GENERATE_OPTION",
                "generate(^{",
                "Use either generate limit or max_output, not both",
            )
        ],
        body='return generate({ input: "i", limit: 1k, max_output: 2k }) -> { a }',
    ),
]

MISSING_CONFIG_CASES = [
    Case(
        "no-config-at-all",
        [
            (
                "MISSING_GENERATE_CONFIG",
                "^generate",
                f"generate requires {key} in the current scope",
            )
            for key in ("model", "role", "description")
        ],
        source='agent A { main func() { return generate({ input: "i" }) -> { a string } } }',
    ),
    Case(
        "config-after-the-generate-does-not-count",
        [("MISSING_GENERATE_CONFIG", "^generate", "generate requires role in the current scope")],
        source=(
            'import llm M from "x"\nagent A {\n  model M\n  description "d"\n'
            '  main func() {\n    x = generate({ input: "i" }) -> { a string }\n'
            '    role "late"\n    return x\n  }\n}'
        ),
    ),
    Case(
        "config-in-a-finished-block-does-not-count",
        [("MISSING_GENERATE_CONFIG", "^generate", "generate requires role in the current scope")],
        source=(
            'import llm M from "x"\nagent A {\n  model M\n  description "d"\n'
            '  main func() {\n    if true { role "inner" }\n'
            '    return generate({ input: "i" }) -> { a string }\n  }\n}'
        ),
    ),
    Case(
        "config-in-an-enclosing-block-counts",
        [],
        source=(
            'import llm M from "x"\nagent A {\n  main func() {\n    model M\n    role "r"\n'
            '    description "d"\n    if true { return generate({ input: "i" }) -> { a } }\n'
            "    return 1\n  }\n}"
        ),
    ),
    Case(
        "config-of-another-function-does-not-count",
        [
            (
                "MISSING_GENERATE_CONFIG",
                "^generate",
                f"generate requires {key} in the current scope",
            )
            for key in ("role", "description")
        ],
        source=(
            'import llm M from "x"\nagent A {\n  model M\n  main func() {\n    return helper()\n  }\n'
            '  func helper() { return generate({ input: "i" }) -> { a } }\n'
            '  func other() { role "r"\n description "d"\n return 1 }\n}'
        ),
    ),
]

SCOPE_CASES = [
    Case(
        "block-local-dies-with-the-block",
        [("UNKNOWN_IDENTIFIER", "return ^inner", "Unknown identifier 'inner'")],
        body="if true { inner = 1 }\nreturn inner",
    ),
    Case(
        "else-local-dies-with-the-block",
        [("UNKNOWN_IDENTIFIER", "return ^inner", "Unknown identifier 'inner'")],
        body="if true { } else { inner = 1 }\nreturn inner",
    ),
    Case(
        "for-item-is-scoped-to-the-loop",
        [("UNKNOWN_IDENTIFIER", "return ^item", "Unknown identifier 'item'")],
        body="for item in [1, 2] < 2 { use item }\nreturn item",
    ),
    Case(
        "loop-and-repeat-locals-die",
        [
            ("UNKNOWN_IDENTIFIER", "[^a, b]", "Unknown identifier 'a'"),
            ("UNKNOWN_IDENTIFIER", "[a, ^b]", "Unknown identifier 'b'"),
        ],
        body="done = true\nloop until done < 2 { a = 1 }\nrepeat * 2 { b = 1 }\nreturn [a, b]",
    ),
    Case(
        "outer-variable-updated-in-a-block-stays-visible",
        [],
        body="count = 0\nrepeat * 2 { count = count + 1 }\nfor x in [1] < 1 { count = x }\nreturn count",
    ),
    Case(
        "callee-does-not-see-caller-locals",
        [("UNKNOWN_IDENTIFIER", "return ^secret", "Unknown identifier 'secret'")],
        body="secret = 1\nreturn helper()",
        functions="  func helper() { return secret }\n",
    ),
    Case(
        "agents-imports-and-functions-are-visible",
        [],
        body="x = [Search, Model, A, Notes, Lessons, helper]\nreturn 1",
        functions="  func helper() { return 1 }\n",
    ),
    Case(
        "local-may-shadow-an-import-name",
        [],
        body="Notes = 1\nSearch = Notes\nreturn Search",
    ),
]


def diagnostics_of(source: str) -> list[str]:
    return [d.format() for d in check_program(parse_program(source))]


@pytest.mark.parametrize(
    "case", [*CASES, *MISSING_CONFIG_CASES, *SCOPE_CASES], ids=lambda case: case.id
)
def test_diagnostics(case: Case, program: Callable[..., str], at: Callable[..., str]) -> None:
    source = full_source(case, program)
    expected = [
        f"ERROR {code} at {at(source, where)}: {message}" for code, where, message in case.expected
    ]
    assert diagnostics_of(source) == expected


def test_every_diagnostic_code_of_the_reference_is_covered() -> None:
    covered = {code for case in [*CASES, *MISSING_CONFIG_CASES] for code, _, _ in case.expected}
    reference_codes = {
        "DUPLICATE_IMPORT",
        "DUPLICATE_AGENT",
        "DUPLICATE_MAIN_AGENT",
        "MISSING_MAIN_AGENT",
        "MISSING_MAIN_FUNC",
        "DUPLICATE_FUNCTION",
        "DUPLICATE_MAIN_FUNC",
        "DUPLICATE_BINDING",
        "DUPLICATE_PARAM",
        "PARAM_SHADOWS_IMPORT",
        "INVALID_PARAM_SHAPE",
        "INVALID_BUDGET",
        "INVALID_ITERATION_LIMIT",
        "INVALID_CONFIG",
        "UNKNOWN_MODEL",
        "INVALID_MODEL",
        "UNKNOWN_IDENTIFIER",
        "INVALID_USE_RESOURCE",
        "UNKNOWN_FUNCTION",
        "NOT_CALLABLE",
        "UNKNOWN_MEMORY_METHOD",
        "INVALID_ARGUMENT_COUNT",
        "DUPLICATE_GENERATE_OPTION",
        "INVALID_GENERATE_ATTEMPTS",
        "INVALID_GENERATE_LIMIT",
        "INVALID_GENERATE_DEBUG",
        "UNKNOWN_GENERATE_OPTION",
        "INVALID_GENERATE_INPUT",
        "MISSING_GENERATE_CONFIG",
        "DUPLICATE_SHAPE_FIELD",
    }
    # INVALID_ASSIGNMENT_TARGET and UNKNOWN_SHAPE_TYPE are unreachable: the parser rejects first.
    assert reference_codes <= covered


def test_react_program_is_valid(fixtures_dir: Path) -> None:
    source = (fixtures_dir / "regression" / "react.as").read_text()
    assert diagnostics_of(source) == []


def test_diagnostic_json_has_severity_code_message_and_range() -> None:
    (diagnostic,) = check_program(parse_program("agent A { main func() { return x } }"))
    assert diagnostic.to_json() == {
        "severity": "error",
        "code": "UNKNOWN_IDENTIFIER",
        "message": "Unknown identifier 'x'",
        "range": {
            "start": {"line": 1, "column": 32, "offset": 31},
            "end": {"line": 1, "column": 33, "offset": 32},
        },
    }


def test_running_an_invalid_program_raises_one_line_per_diagnostic() -> None:
    program = agentscript.load_source(
        "agent A {\n  main func() {\n    use Search\n    return nope\n  }\n}\n"
    )
    with pytest.raises(SemanticError) as caught:
        agentscript.run(program, {}, agentscript.RunConfig(model="mock"))
    assert str(caught.value) == (
        "ERROR UNKNOWN_IDENTIFIER at 3:9: Unknown identifier 'Search'\n"
        "ERROR UNKNOWN_IDENTIFIER at 4:12: Unknown identifier 'nope'"
    )
    assert [d.code for d in caught.value.diagnostics] == ["UNKNOWN_IDENTIFIER"] * 2
