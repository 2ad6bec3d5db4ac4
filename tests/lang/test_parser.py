"""The parser: program structure, statements, expressions, shapes, generate options, later forms
we accept, every parse error message with its position, and the AST JSON (golden file)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agentscript.lang import ast
from agentscript.lang.checker import check_program
from agentscript.lang.errors import ParseError
from agentscript.lang.formatter import format_expr
from agentscript.lang.parser import MAX_NESTING, parse_program


def main_body(body: str) -> list[ast.Stmt]:
    """The statements of `main func() { body }` in a one-agent program."""
    program = parse_program(f"agent A {{ main func() {{\n{body}\n}} }}")
    return program.agents[0].functions[0].body


def single(body: str) -> ast.Stmt:
    statements = main_body(body)
    assert len(statements) == 1
    return statements[0]


def expression(text: str) -> ast.Expr:
    statement = single(f"return {text}")
    assert isinstance(statement, ast.ReturnStmt)
    return statement.value


def shape_text(expr: ast.Expr) -> str:
    """A compact, fully parenthesised rendering of an expression tree for structure asserts."""
    if isinstance(expr, ast.BinaryExpr):
        return f"({shape_text(expr.left)} {expr.operator} {shape_text(expr.right)})"
    if isinstance(expr, ast.UnaryExpr):
        return f"({expr.operator} {shape_text(expr.value)})"
    if isinstance(expr, ast.IdentifierExpr):
        return expr.name
    if isinstance(expr, ast.NumberExpr):
        return expr.raw
    if isinstance(expr, ast.BooleanExpr):
        return "true" if expr.value else "false"
    if isinstance(expr, ast.MemberExpr):
        return f"{shape_text(expr.object)}.{expr.property}"
    if isinstance(expr, ast.IndexExpr):
        return f"{shape_text(expr.object)}[{shape_text(expr.index)}]"
    if isinstance(expr, ast.CallExpr):
        return f"{shape_text(expr.callee)}({', '.join(shape_text(a) for a in expr.args)})"
    raise AssertionError(f"unexpected node {type(expr).__name__}")


def shape_fields(shape: ast.ShapeObjectExpr | None) -> list[tuple[str, str]]:
    assert shape is not None

    def type_text(shape_type: ast.ShapeType) -> str:
        if isinstance(shape_type, ast.ListShapeType):
            return f"list[{type_text(shape_type.item_type)}]"
        return shape_type.name

    return [(field.name, type_text(field.type)) for field in shape.fields]


# ----------------------------------------------------------------------------- program structure


def test_react_program_structure(fixtures_dir: Path) -> None:
    program = parse_program((fixtures_dir / "regression" / "react.as").read_text())
    assert [(i.resource_kind, i.name, i.uri) for i in program.imports] == [
        ("tool", "Search", "mcp://tools/search"),
        ("llm", "Model", "openai://gpt-4.1-mini"),
    ]
    (agent,) = program.agents
    assert (agent.name, agent.is_main) == ("ReAct", True)
    assert [config.key for config in agent.config] == ["model", "role", "description"]
    assert [func.name for func in agent.functions] == [
        "__main",
        "reason",
        "act",
        "observe",
        "enough",
        "answer",
    ]
    main = agent.functions[0]
    assert main.is_main
    assert [param.name for param in main.params] == ["input"]
    assert shape_fields(main.params[0].shape) == [("question", "string")]


def test_generate_shape_limit_and_debug_are_captured() -> None:
    statement = single(
        'x = generate({ input: "Plan.", limit: 2k, debug: true, attempts: 3 }) {\n'
        "  return { steps list[string], ok boolean, score number, data json, raw list }\n"
        "}"
    )
    assert isinstance(statement, ast.AssignStmt)
    generate = statement.value
    assert isinstance(generate, ast.GenerateExpr)
    options = generate.options
    assert options.limit == ast.Budget(amount=2, unit="k")
    assert options.limit.to_json() == {"amount": 2, "unit": "k"}
    assert options.debug is True
    assert options.attempts == 3
    assert isinstance(options.input, ast.StringExpr) and options.input.value == "Plan."
    assert [prop.key for prop in options.properties] == ["input", "limit", "debug", "attempts"]
    assert shape_fields(generate.return_shape) == [
        ("steps", "list[string]"),
        ("ok", "boolean"),
        ("score", "number"),
        ("data", "json"),
        ("raw", "list"),
    ]


def test_later_generate_options_are_captured_as_literals() -> None:
    statement = single(
        'return generate({ input: "x", max_output: 4k, temperature: 0.2, think: "medium",'
        " strict: true }) -> { a string }"
    )
    assert isinstance(statement, ast.ReturnStmt)
    assert isinstance(statement.value, ast.GenerateExpr)
    options = statement.value.options
    assert options.max_output == ast.Budget(amount=4, unit="k")
    assert options.limit is None
    assert (options.temperature, options.think, options.strict) == (0.2, "medium", True)


def test_arrow_shape_and_free_form_generate() -> None:
    arrow = expression('generate({ input: "x" }) -> { a string }')
    assert isinstance(arrow, ast.GenerateExpr)
    assert shape_fields(arrow.return_shape) == [("a", "string")]
    free = expression('generate({ input: "x" })')
    assert isinstance(free, ast.GenerateExpr)
    assert free.return_shape is None


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        # Untyped output fields mean string (a later form).
        ("{ answer }", [("answer", "string")]),
        ("{ answer, ok boolean }", [("answer", "string"), ("ok", "boolean")]),
        ("{\n  answer\n  ok boolean\n}", [("answer", "string"), ("ok", "boolean")]),
        # Contract fields `name: type`.
        ("{ answer: string, n: number }", [("answer", "string"), ("n", "number")]),
        (
            "{\n  tags: list[string]\n  ok: boolean\n}",
            [("tags", "list[string]"), ("ok", "boolean")],
        ),
        # 0.1.0 ignores newlines: a type on the next line still types the field.
        ("{ answer\n string }", [("answer", "string")]),
        # Keywords are fine as field names.
        ("{ list list[json], if boolean }", [("list", "list[json]"), ("if", "boolean")]),
    ],
)
def test_output_shape_forms(shape: str, expected: list[tuple[str, str]]) -> None:
    generate = expression(f'generate({{ input: "x" }}) -> {shape}')
    assert isinstance(generate, ast.GenerateExpr)
    assert shape_fields(generate.return_shape) == expected


def test_untyped_output_field_is_marked_implicit() -> None:
    generate = expression('generate({ input: "x" }) -> { answer, ok boolean }')
    assert isinstance(generate, ast.GenerateExpr) and generate.return_shape is not None
    assert [field.implicit for field in generate.return_shape.fields] == [True, None]


def test_param_shapes() -> None:
    program = parse_program(
        "agent A { main func(input { question string, tags list[string] }) { return 1 }\n"
        "  func helper(a, b c) { return a } }"
    )
    main, helper = program.agents[0].functions
    assert shape_fields(main.params[0].shape) == [("question", "string"), ("tags", "list[string]")]
    assert [(p.name, p.shape) for p in helper.params] == [("a", None), ("b", None), ("c", None)]


def test_anonymous_main_agent_and_main_func_get_their_names() -> None:
    program = parse_program("main agent { main func() { return 1 } }")
    agent = program.agents[0]
    assert (agent.name, agent.is_main) == ("__main_agent", True)
    assert (agent.functions[0].name, agent.functions[0].is_main) == ("__main", True)


def test_llm_import_and_config_statement_in_a_function() -> None:
    program = parse_program(
        'import llm Fast from "openai://gpt-4.1-mini"\n'
        'agent A { main func() {\n  model Fast\n  role "Critic"\n  return 1\n} }'
    )
    assert program.imports[0].resource_kind == "llm"
    body = program.agents[0].functions[0].body
    assert [type(stmt).__name__ for stmt in body] == ["ConfigStmt", "ConfigStmt", "ReturnStmt"]
    model, role = body[0], body[1]
    assert isinstance(model, ast.ConfigStmt) and isinstance(role, ast.ConfigStmt)
    assert model.key == "model" and isinstance(model.value, ast.IdentifierExpr)
    assert role.key == "role" and isinstance(role.value, ast.StringExpr)


def test_file_memory_and_agent_imports() -> None:
    program = parse_program(
        'import file Notes from "./notes.md"\n'
        'import memory Lessons from "file://.agentscript/lessons.jsonl"\n'
        'import agent Worker from "./worker.as"\n'
    )
    assert [(i.resource_kind, i.name, i.uri) for i in program.imports] == [
        ("file", "Notes", "./notes.md"),
        ("memory", "Lessons", "file://.agentscript/lessons.jsonl"),
        ("agent", "Worker", "./worker.as"),
    ]


def test_unknown_import_kind_is_reported_at_the_kind() -> None:
    with pytest.raises(ParseError) as caught:
        parse_program('import thing X from "x"')
    assert str(caught.value) == (
        "Expected import resource kind 'tool', 'llm', 'file', 'agent', or 'memory' at 1:8"
    )


# ----------------------------------------------------------------------------- statements


def test_use_with_0_1_0_budget() -> None:
    statement = single("use notes < 2k")
    assert isinstance(statement, ast.UseStmt)
    assert statement.budget == ast.Budget(amount=2, unit="k")
    assert isinstance(statement.value, ast.IdentifierExpr)


@pytest.mark.parametrize(
    ("text", "amount", "unit"),
    [("use x < 300", 300, None), ("use x max 1.5k", 1.5, "k"), ("use x < 2m", 2, "m")],
)
def test_use_budget_forms(text: str, amount: float, unit: str | None) -> None:
    statement = single(text)
    assert isinstance(statement, ast.UseStmt)
    assert statement.budget == ast.Budget(amount=amount, unit=unit)


def test_less_than_before_a_name_in_use_is_a_comparison() -> None:
    statement = single("use a < b")
    assert isinstance(statement, ast.UseStmt)
    assert statement.budget is None
    assert shape_text(statement.value) == "(a < b)"


def test_use_comparison_inside_brackets_is_not_a_budget() -> None:
    statement = single("use [a < 2] < 1k")
    assert isinstance(statement, ast.UseStmt)
    assert statement.budget == ast.Budget(amount=1, unit="k")
    assert isinstance(statement.value, ast.ListExpr)
    assert shape_text(statement.value.items[0]) == "(a < 2)"


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ('use input.path as "source path"', "source path"),
        ("use input.path as source path", "source path"),
        ("use input.docs < 2k as evidence", "evidence"),
        ("use x as a-b c", "a-b c"),
    ],
)
def test_use_labels(text: str, label: str) -> None:
    statement = main_body(text)[0]
    assert isinstance(statement, ast.UseStmt)
    assert statement.label == label


def test_label_stops_at_the_end_of_the_line() -> None:
    statements = main_body("use x as notes here\ny = 1")
    assert len(statements) == 2
    first = statements[0]
    assert isinstance(first, ast.UseStmt) and first.label == "notes here"


def test_label_stops_at_a_closing_brace_on_the_same_line() -> None:
    program = parse_program("agent A { main func() { use x as notes } }")
    statement = program.agents[0].functions[0].body[0]
    assert isinstance(statement, ast.UseStmt) and statement.label == "notes"


def test_if_else_and_else_if() -> None:
    statement = single("if a { x = 1 } else if b { x = 2 } else { x = 3 }")
    assert isinstance(statement, ast.IfStmt)
    assert shape_text(statement.condition) == "a"
    assert len(statement.then_body) == 1
    assert statement.else_body is not None
    nested = statement.else_body[0]
    assert isinstance(nested, ast.IfStmt)
    assert shape_text(nested.condition) == "b"
    assert nested.else_body is not None and len(nested.else_body) == 1


@pytest.mark.parametrize("bound", ["< 3", "max 3"])
def test_for_in_with_its_bound(bound: str) -> None:
    statement = single(f"for step in plan.steps {bound} {{ use step }}")
    assert isinstance(statement, ast.ForInStmt)
    assert statement.item_name == "step"
    assert statement.max_iterations == 3
    assert shape_text(statement.iterable) == "plan.steps"
    assert isinstance(statement.body[0], ast.UseStmt)
    start = statement.item_range.start
    assert (start.line, start.column) == (2, 5)


@pytest.mark.parametrize("bound", ["< 4", "max 4"])
def test_loop_until_with_its_bound(bound: str) -> None:
    statement = single(f"loop until done == true {bound} {{ done = true }}")
    assert isinstance(statement, ast.LoopUntilStmt)
    assert statement.max_iterations == 4
    assert shape_text(statement.condition) == "(done == true)"


def test_loop_condition_may_compare_with_less_than_before_the_bound() -> None:
    statement = single("loop until count < limit < 5 { count = count + 1 }")
    assert isinstance(statement, ast.LoopUntilStmt)
    assert shape_text(statement.condition) == "(count < limit)"
    assert statement.max_iterations == 5


def test_repeat_count() -> None:
    statement = single("repeat * 2 { x = 1 }")
    assert isinstance(statement, ast.RepeatStmt)
    assert statement.max_attempts == 2


def test_zero_is_a_valid_repeat_and_loop_count() -> None:
    repeat, loop = main_body("repeat * 0 { x = 1 }\nloop until done < 0 { x = 1 }")
    assert isinstance(repeat, ast.RepeatStmt) and repeat.max_attempts == 0
    assert isinstance(loop, ast.LoopUntilStmt) and loop.max_iterations == 0


def test_index_postfix_and_chains() -> None:
    assert shape_text(expression("results[0].id")) == "results[0].id"
    assert shape_text(expression("f(a)[1].b(c)")) == "f(a)[1].b(c)"


def test_object_literal_at_statement_start_is_an_expression_statement() -> None:
    statement = single("{ ok: true }")
    assert isinstance(statement, ast.ExprStmt)
    assert isinstance(statement.expr, ast.ObjectExpr)


@pytest.mark.parametrize(
    ("text", "operator"),
    [("x = 1", None), ("x += 1", "+="), ("x -= 1", "-="), ("x-=1", "-="), ("a.b = 2", None)],
)
def test_assignment_forms(text: str, operator: str | None) -> None:
    statement = single(text)
    assert isinstance(statement, ast.AssignStmt)
    assert statement.operator == operator


def test_keyword_names_are_accepted_where_a_name_is_expected() -> None:
    statement = single("list = { if: 1, for: [1 2] }")
    assert isinstance(statement, ast.AssignStmt)
    assert isinstance(statement.target, ast.IdentifierExpr)
    assert statement.target.name == "list"
    assert isinstance(statement.value, ast.ObjectExpr)
    assert [prop.key for prop in statement.value.properties] == ["if", "for"]
    assert shape_text(expression("x.list.string")) == "x.list.string"


@pytest.mark.parametrize("key", ["model", "role", "description"])
def test_config_keys_cannot_be_assignment_targets(key: str) -> None:
    with pytest.raises(ParseError, match=r"^Expected expression at 2:"):
        main_body(f"{key} = 1")


def test_model_value_is_a_postfix_expression() -> None:
    statements = main_body('model Fast role "Critic"')
    assert [type(stmt).__name__ for stmt in statements] == ["ConfigStmt", "ConfigStmt"]


# ----------------------------------------------------------------------------- expressions


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("a or b and c", "(a or (b and c))"),
        ("a and b == c", "(a and (b == c))"),
        ("not a == b", "((not a) == b)"),
        ("not not a", "(not (not a))"),
        ("a == b != c", "((a == b) != c)"),
        ("a < b == c > d", "((a < b) == (c > d))"),
        ("a + b < c - d", "((a + b) < (c - d))"),
        ("a + b * c", "(a + (b * c))"),
        ("a - b - c", "((a - b) - c)"),
        ("a / b * c", "((a / b) * c)"),
        ("(a + b) * c", "((a + b) * c)"),
        ("-a * b", "((- a) * b)"),
        ("-(a + b)", "(- (a + b))"),
        ("a <= b or c >= d", "((a <= b) or (c >= d))"),
        ("a-b - c", "(a-b - c)"),
        ("step-1.id", "step-1.id"),
    ],
)
def test_operator_precedence_and_associativity(text: str, tree: str) -> None:
    assert shape_text(expression(text)) == tree


@pytest.mark.parametrize(
    ("text", "count"),
    [("[1 2 3]", 3), ("[1, 2, 3,]", 3), ("[]", 0), ('[1 "a", none true]', 4)],
)
def test_list_items_need_no_commas(text: str, count: int) -> None:
    value = expression(text)
    assert isinstance(value, ast.ListExpr)
    assert len(value.items) == count


def test_object_fields_call_arguments_and_params_need_no_commas() -> None:
    value = expression('{ ok: true text: "x", "quoted key": 1 }')
    assert isinstance(value, ast.ObjectExpr)
    assert [prop.key for prop in value.properties] == ["ok", "text", "quoted key"]
    call = expression("f(a b, c)")
    assert isinstance(call, ast.CallExpr) and len(call.args) == 3


def test_literals() -> None:
    values = expression('[ "s", 2k, 1.5, true, false, none ]')
    assert isinstance(values, ast.ListExpr)
    kinds = [type(item).__name__ for item in values.items]
    assert kinds == [
        "StringExpr",
        "NumberExpr",
        "NumberExpr",
        "BooleanExpr",
        "BooleanExpr",
        "NullExpr",
    ]
    number = values.items[1]
    assert isinstance(number, ast.NumberExpr)
    # As an expression a number token is read like parseFloat: `2k` is the number 2.
    assert (number.value, number.raw) == (2, "2k")


def test_huge_number_literals_become_doubles() -> None:
    big = expression("9" * 400)
    assert isinstance(big, ast.NumberExpr)
    assert big.value == float("inf")
    exact = expression("12345678901234567890")
    assert isinstance(exact, ast.NumberExpr)
    assert exact.value == 12345678901234567890.0
    assert isinstance(exact.value, float)


# ----------------------------------------------------------------------------- parse errors


def agent_with(body: str) -> str:
    return f"agent A {{ main func() {{ {body} }} }}"


PARSE_ERRORS = [
    ("use x", "Expected 'import', 'agent', or 'main agent'", "use"),
    ('import "x"', "Expected import resource kind", '"x"'),
    ('import tool "u"', "Expected tool name", '"u"'),
    ('import memory M "u"', "Expected 'from'", '"u"'),
    ("import llm M from u", "Expected llm URI", "u"),
    ("agent { }", "Only main agent can omit its name", "{"),
    ('agent "A" { }', "Expected agent name", '"A"'),
    ("agent A { x = 1 }", "Expected configuration declaration or function declaration", "x"),
    ("agent A { func () { } }", "Only main func can omit its name", "("),
    ('agent A { func "f"() { } }', "Expected function name", '"f"'),
    ('agent A { main func("x") { } }', "Expected parameter name", '"x"'),
    ("agent A main func() { } }", "Expected '{'", "main"),
    (
        agent_with('list[0] = "x"'),
        "Assignment target must be an identifier or member expression",
        "=",
    ),
    (agent_with('f() = "x"'), "Assignment target must be an identifier or member expression", "="),
    (agent_with("x = a."), "Expected property name", "}"),
    (agent_with("x = "), "Expected expression", "}"),
    (agent_with("x = { 1: 2 }"), "Expected object key", "1"),
    (agent_with("x = { a 2 }"), "Expected ':'", "2"),
    (
        agent_with('x = generate({ input: "x", limit: y }) { return { a string } }'),
        "Expected generate limit",
        "y",
    ),
    (
        agent_with('x = generate({ input: "x", max_output: "4k" }) -> { a string }'),
        "Expected generate limit",
        '"4k"',
    ),
    (
        agent_with('x = generate({ input: "x", limit: 2k_x }) -> { a string }'),
        "Invalid budget '2k_x'",
        "2k_x",
    ),
    (
        agent_with('x = generate({ input: "x" }) { return { "a" string } }'),
        "Expected shape field name",
        '"a"',
    ),
    (
        agent_with('x = generate({ input: "x" }) { return { a string } y'),
        "Expected '}'",
        "} ^y",
    ),
    (agent_with('x = generate({ input: "x" }) -> { a: }'), "Expected shape type", "a: ^}"),
    (
        agent_with('x = generate({ input: "x" }) -> { a text }'),
        "Unsupported shape type 'text'",
        "text",
    ),
    ("agent A { main func(input { a }) { } }", "Expected shape type", "}"),
    (
        "agent A { main func(input { a list[thing] }) { } }",
        "Unsupported shape type 'thing'",
        "thing",
    ),
    (agent_with("use x < 2k1"), "Invalid budget '2k1'", "2k1"),
    (agent_with("repeat * x { }"), "Expected repeat count", "x"),
    (agent_with("repeat * 2k { }"), "Expected repeat count", "2k"),
    (agent_with("repeat 2 { }"), "Expected '*'", "2"),
    (agent_with('for "x" in xs < 2 { }'), "Expected for item name", '"x"'),
    (agent_with("for x of xs < 2 { }"), "Expected 'in'", "of"),
    (agent_with("for x in xs < n { }"), "Expected for iteration count", "< ^n"),
    (agent_with("for x in xs < 2k { }"), "Expected for iteration count", "2k"),
    (agent_with("for x in xs max y { }"), "Expected for iteration count", "y"),
    (agent_with("loop until done < n { }"), "Expected loop iteration count", "< ^n"),
    (agent_with("loop done < 2 { }"), "Expected 'until'", "done"),
    (agent_with("use x as"), "Expected context label after 'as'", "}"),
    (
        "agent A { main func() { if x { y = 1 } }",
        "Expected configuration declaration or function declaration",
        "",
        0,
    ),
    ("agent A { main func() { if x { y = 1", "Expected '}'", "", 0),
    ("agent A { main func() { x = [1, 2", "Expected ']'", "", 0),
    ("agent A { main func() { f(1, 2", "Expected ')'", "", 0),
]


@pytest.mark.parametrize(
    ("source", "message", "needle", "occurrence"),
    [case if len(case) == 4 else (*case, 1) for case in PARSE_ERRORS],
)
def test_parse_error_messages_and_positions(
    source: str, message: str, needle: str, occurrence: int, at: Callable[..., str]
) -> None:
    """Each error names the problem at the token that caused it; occurrence 0 means the end."""
    with pytest.raises(ParseError) as caught:
        parse_program(source)
    if occurrence == 0:
        lines = source.split("\n")
        where = f"{len(lines)}:{len(lines[-1]) + 1}"
    else:
        where = at(source, needle, occurrence)
    assert str(caught.value) == f"{message} at {where}"
    assert caught.value.bare_message == message


def test_parse_error_positions_count_lines() -> None:
    source = 'import tool T from "x"\n\nagent A {\n  main func() {\n    x = ;\n  }\n}'
    with pytest.raises(ParseError) as caught:
        parse_program(source)
    assert str(caught.value) == "Unexpected character ';' at 5:9"


# ----------------------------------------------------------------------------- nesting limit


def nested_ifs(depth: int) -> str:
    return agent_with("x = 1 " + "if x { " * depth + "x = 2" + " }" * depth)


DEEP_PROGRAMS = [
    pytest.param(lambda n: agent_with("return " + "(" * n + "1" + ")" * n), id="parens"),
    pytest.param(lambda n: agent_with("return " + "[" * n + "1" + "]" * n), id="lists"),
    pytest.param(lambda n: agent_with("return " + "{a: " * n + "1" + "}" * n), id="objects"),
    pytest.param(lambda n: agent_with("return " + "f(" * n + "1" + ")" * n), id="calls"),
    pytest.param(lambda n: agent_with("return " + "not " * n + "x"), id="not"),
    pytest.param(lambda n: agent_with("return " + "- " * n + "1"), id="minus"),
    pytest.param(nested_ifs, id="blocks"),
    pytest.param(lambda n: agent_with("x = 1 if x {} " + "else if x {} " * n), id="else-if-chain"),
    pytest.param(lambda n: agent_with("return x" + ".a" * n), id="member-chain"),
    pytest.param(lambda n: agent_with("return x" + "[0]" * n), id="index-chain"),
    pytest.param(lambda n: agent_with("return f" + "()" * n), id="call-chain"),
    pytest.param(lambda n: agent_with("return x" + " + x" * n), id="binary-chain"),
    pytest.param(lambda n: agent_with("return x" + " and x" * n), id="and-chain"),
]

# Nested generates parse within the same limit. (Their AST JSON repeats the input expression
# under `properties` and `input`, as the original's did, so it doubles with each level.)
NESTED_GENERATES = pytest.param(
    lambda n: agent_with("return " + "generate({ input: " * n + '"x"' + " }) -> { a string }" * n),
    id="generates",
)


@pytest.mark.parametrize("make", [*DEEP_PROGRAMS, NESTED_GENERATES])
def test_nesting_beyond_the_limit_is_a_parse_error_not_a_crash(
    make: Callable[[int], str],
) -> None:
    with pytest.raises(ParseError, match=rf"^Nesting is deeper than {MAX_NESTING} levels at "):
        parse_program(make(MAX_NESTING + 5))
    with pytest.raises(ParseError, match=r"^Nesting is deeper than"):
        parse_program(make(5000))


@pytest.mark.parametrize("make", DEEP_PROGRAMS)
def test_programs_just_inside_the_limit_survive_every_pass_over_the_tree(
    make: Callable[[int], str],
) -> None:
    """The deepest program of each form that still parses goes through the checker, the
    formatter and the JSON conversion without exhausting the stack."""
    depth = MAX_NESTING
    while True:
        try:
            program = parse_program(make(depth))
            break
        except ParseError:
            depth -= 1
    assert depth >= MAX_NESTING // 3
    assert json.dumps(program.to_json())
    assert isinstance(check_program(program), list)
    statement = program.agents[0].functions[0].body[-1]
    assert isinstance(statement, ast.ReturnStmt | ast.IfStmt | ast.AssignStmt)
    if isinstance(statement, ast.ReturnStmt):
        assert format_expr(statement.value)


def test_deep_but_allowed_nesting_parses() -> None:
    program = parse_program(nested_ifs(MAX_NESTING - 5))
    body = program.agents[0].functions[0].body
    depth = 0
    statement: ast.Stmt = body[1]
    while isinstance(statement, ast.IfStmt):
        depth += 1
        statement = statement.then_body[0]
    assert depth == MAX_NESTING - 5
    assert parse_program(agent_with("return " + "[" * 150 + "1" + "]" * 150))


# ----------------------------------------------------------------------------- AST JSON


GOLDEN_PROGRAM = """import llm Model from "openai://gpt-4.1-mini"

main agent {
  model Model
  role "Greeter"
  main func(input { name string }) {
    use input.name < 2k
    return generate({ input: "Greet.", limit: 300 }) { return { text string } }
  }
}
"""


def test_program_json_matches_the_golden_file(fixtures_dir: Path) -> None:
    golden = json.loads((fixtures_dir / "lang" / "program.json").read_text())
    assert parse_program(GOLDEN_PROGRAM).to_json() == golden


def test_program_json_leaves_out_absent_fields_and_hidden_paths() -> None:
    data = parse_program(GOLDEN_PROGRAM, path="/tmp/x.as").to_json()
    assert set(data) == {"kind", "imports", "agents", "range"}
    assert "sourcePath" not in data["imports"][0]
    body = data["agents"][0]["functions"][0]["body"]
    assert body[0]["budget"] == {"amount": 2, "unit": "k"}
    assert "label" not in body[0]
    options = body[1]["value"]["options"]
    assert options["limit"] == {"amount": 300}
    assert "attempts" not in options and "debug" not in options
