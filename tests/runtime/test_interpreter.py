"""The interpreter: the §7.1 behaviours (ReAct end to end, sanitising, assignment rules, calls,
agents, entry input, loops, indexing), operators, truthiness, equality and runtime errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentscript.runtime.errors import ExecutionError
from timings import without_timings

Run = Callable[..., Any]
Program = Callable[..., str]

HELPER = "  func helper(n) { return [n] }\n"

# A second agent B for call tests; the standard agent A becomes the main agent.
WITH_WORKER = """
agent B {
  model Model
  role "Worker"
  description "Does work."
  main func(x) {
    use x
    return generate({ input: "Work." }) -> { done boolean }
  }
  func echo(y) { return { got: y } }
  func relay(z) { return B.echo(z) }
}
"""


def two_agents(program: Program, body: str) -> str:
    return program(body).replace("\nagent A {", "\nmain agent A {", 1) + WITH_WORKER


def value_of(run: Run, program: Program, body: str, **options: Any) -> Any:
    return run(program(body, functions=options.pop("functions", "")), **options).value


def error_of(run: Run, program: Program, body: str, **options: Any) -> str:
    with pytest.raises(ExecutionError) as caught:
        run(program(body, functions=options.pop("functions", "")), **options)
    return str(caught.value)


# ----------------------------------------------------------------------------- end to end


def test_react_program_runs_end_to_end_with_mock_tools(run: Run, fixtures_dir: Path) -> None:
    source = (fixtures_dir / "regression" / "react.as").read_text()
    result = run(source, {"question": "Why do tides happen?"})
    assert result.value == {"ok": True, "text": "", "error": ""}
    kinds = [event["kind"] for event in result.trace]
    assert kinds.count("generate") == 4
    (tool,) = [without_timings(e["data"]) for e in result.trace if e["kind"] == "tool"]
    assert tool == {
        "tool": "Search",
        "method": "query",
        "scheme": "mcp",
        "uri": "mcp://tools/search",
        "args": [{"q": ""}],
        "result": {"summary": "Search.query", "source": "mcp://tools/search", "args": [{"q": ""}]},
        "effects": None,
    }


# ----------------------------------------------------------------------------- values


def test_circular_values_and_bindings_are_sanitised(run: Run, program: Program) -> None:
    value = value_of(
        run,
        program,
        "xs = []\nxs.add(xs)\no = {}\no.self = o\n"
        "return { xs: xs, o: o, tool: Search, llm: Model, agent: A, fn: helper }",
        functions=HELPER,
    )
    assert value == {
        "xs": ["[Circular]"],
        "o": {"self": "[Circular]"},
        "tool": {"tool": "Search", "uri": "mcp://tools/search"},
        "llm": {"llm": "Model", "uri": "openai://gpt-4.1-mini"},
        "agent": {"agent": "A"},
        "fn": {"function": "helper", "agent": "A"},
    }


def test_shared_values_are_not_circular(run: Run, program: Program) -> None:
    assert value_of(run, program, "x = [1]\nreturn [x, x]") == [[1], [1]]


def test_objects_are_mutated_in_place(run: Run, program: Program) -> None:
    body = "a = { n: 1 }\nb = a\nb.n = 2\nb.m = 3\nreturn a"
    assert value_of(run, program, body) == {"n": 2, "m": 3}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("xs = [1]\nxs.length = 2\nreturn xs", "Cannot assign a property on a list value at 10:1"),
        ("n = 1\nn.x = 2\nreturn n", "Cannot assign a property on a non-object value at 10:1"),
        ('s = "t"\ns.x = 2\nreturn s', "Cannot assign a property on a non-object value at 10:1"),
    ],
)
def test_property_assignment_errors(body: str, message: str, run: Run, program: Program) -> None:
    assert error_of(run, program, body) == message


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("x = [1]\nx.add(1, 2)\nreturn x", "list.add expects exactly one argument at 10:1"),
        ("x = [1]\nx.add()\nreturn x", "list.add expects exactly one argument at 10:1"),
    ],
)
def test_list_add_arity(body: str, message: str, run: Run, program: Program) -> None:
    assert error_of(run, program, body) == message


def test_list_add_appends_in_place_and_returns_the_list(run: Run, program: Program) -> None:
    assert value_of(run, program, "x = [1]\ny = x.add(2)\ny.add(3)\nreturn x") == [1, 2, 3]


def test_list_helpers(run: Run, program: Program) -> None:
    body = 'x = [{ a: 1 }, "s"]\ns = x.summary\ns.add(3)\nreturn [x.length, s, x, "héllo😀".length]'
    assert value_of(run, program, body) == [2, [{"a": 1}, "s", 3], [{"a": 1}, "s"], 7]


# ----------------------------------------------------------------------------- functions


def test_recursion_limit(run: Run, program: Program) -> None:
    source = program("return helper(1)", functions="  func helper(n) { return helper(n) }\n")
    with pytest.raises(ExecutionError, match=r"^Maximum call depth of 1000 exceeded at 11:"):
        run(source)


def test_recursion_below_the_limit_works(run: Run, program: Program) -> None:
    functions = "  func down(n) {\n    if n == 0 { return 0 }\n    return down(n - 1) + 1\n  }\n"
    assert value_of(run, program, "return down(900)", functions=functions) == 900


def test_function_level_config_override_changes_identity_for_that_call_only(
    run: Run, program: Program, make_llm: Callable[..., Any]
) -> None:
    llm = make_llm()
    run(
        program(
            'a = critic()\nreturn generate({ input: "main" }) -> { a }',
            functions=(
                '  func critic() {\n    role "Critic"\n    model Other\n'
                '    return generate({ input: "critic" }) -> { a }\n  }\n'
            ),
            imports='import llm Other from "anthropic://claude"\n',
        ),
        llm=llm,
    )
    critic, main = llm.requests
    assert critic.identity["role"] == "Critic"
    assert critic.model.name == "Other"
    assert critic.built.system == "You are A.\nrole: Critic\ndescription: Finds facts."
    assert main.identity["role"] == "Researcher"
    assert main.model.name == "Model"


def test_config_override_in_a_block_ends_with_the_block(
    run: Run, program: Program, make_llm: Callable[..., Any]
) -> None:
    llm = make_llm()
    run(
        program(
            'if true {\n  role "Inner"\n  x = generate({ input: "in" }) -> { a }\n}\n'
            'return generate({ input: "out" }) -> { a }'
        ),
        llm=llm,
    )
    assert [request.identity["role"] for request in llm.requests] == ["Inner", "Researcher"]


def test_repeat_updates_an_outer_variable_while_new_names_die(run: Run, program: Program) -> None:
    body = "n = 0\nrepeat * 3 {\n  n = n + 1\n  fresh = n\n}\nreturn n"
    assert value_of(run, program, body) == 3


def test_callee_starts_from_a_fresh_scope(run: Run, program: Program) -> None:
    functions = "  func peek() { secret = 2\n return secret }\n"
    assert value_of(
        run, program, "secret = 1\nx = peek()\nreturn [secret, x]", functions=functions
    ) == [1, 2]


def test_final_expression_is_returned(run: Run, program: Program) -> None:
    functions = "  func last() {\n    x = 1\n    x + 41\n  }\n  func none_back() { x = 1 }\n"
    assert value_of(run, program, "[last(), none_back()]", functions=functions) == [42, None]


def test_return_inside_blocks_leaves_the_function(run: Run, program: Program) -> None:
    body = "for i in [1, 2, 3] < 3 {\n  if i == 2 { return i }\n}\nreturn 0"
    assert value_of(run, program, body) == 2


def test_local_may_shadow_an_import(run: Run, program: Program) -> None:
    assert value_of(run, program, 'Search = "shadow"\nreturn Search') == "shadow"


def test_function_values_run_the_function_of_their_agent(run: Run, program: Program) -> None:
    # The checker refuses calling a local, but the runtime rule is that function bindings are
    # ordinary values that keep their agent.
    source = program("g = helper\nreturn g(2)", functions=HELPER)
    assert run(source, check=False).value == [2]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("return nope", "Unknown variable 'nope'"),
        ("x = 1\nreturn x()", "'x' is not callable"),
        ('return Search("q")', "'Search' is not callable"),
        ("return nope()", "Unknown function 'nope'"),
        ("x = 1\nreturn x.foo()", "Unsupported member call 'foo'"),
        ("return helper(1)()", "Unsupported call expression"),
        ("return helper()", "Function 'A.helper' expects 1 argument(s), got 0"),
        ("return B.nope()", "Unknown function 'B.nope'"),
        ("return Lessons.remove({})", "Unknown memory method 'Lessons.remove'"),
        ("return Lessons.add({}, {})", "memory.add expects exactly one argument"),
    ],
)
def test_call_errors_at_runtime(
    body: str, message: str, run: Run, program: Program, at: Callable[..., str]
) -> None:
    """Errors the checker would report first still fail cleanly, with a location, at runtime."""
    source = (
        program(
            body, functions=HELPER, imports='import memory Lessons from "file://x.jsonl"\n'
        ).replace("\nagent A {", "\nmain agent A {", 1)
        + WITH_WORKER
    )
    with pytest.raises(ExecutionError) as caught:
        run(source, check=False)
    assert str(caught.value) == f"{message} at {at(source, 'return ^')}"


# ----------------------------------------------------------------------------- agents


def test_agent_call_shorthand_runs_the_main_func(run: Run, program: Program) -> None:
    result = run(two_agents(program, "return B(1)"))
    assert result.value == {"done": True}


def test_nested_agent_calls_are_traced_inside_the_agent_event(run: Run, program: Program) -> None:
    result = run(two_agents(program, "a = B(7)\nreturn B.relay(8)"))
    assert result.value == {"got": 8}
    first, second = result.trace
    assert first["kind"] == "agent"
    assert first["data"]["agent"] == "B"
    assert first["data"]["function"] == "__main"
    assert first["data"]["args"] == [7]
    assert first["data"]["result"] == {"done": True}
    assert [event["kind"] for event in first["data"]["trace"]] == ["use", "generate"]
    assert first["data"]["trace"][1]["data"]["context"]["agentName"] == "B"
    assert second["data"]["function"] == "relay"
    (inner,) = second["data"]["trace"]
    assert inner["kind"] == "agent"
    assert (inner["data"]["function"], inner["data"]["args"]) == ("echo", [8])
    assert inner["data"]["trace"] == []


def test_named_agent_function_call(run: Run, program: Program) -> None:
    assert run(two_agents(program, "return B.echo(5)")).value == {"got": 5}


def test_callee_agent_uses_its_own_identity(
    run: Run, program: Program, make_llm: Callable[..., Any]
) -> None:
    llm = make_llm()
    run(two_agents(program, "return B(1)"), llm=llm)
    (request,) = llm.requests
    assert request.built.system == "You are B.\nrole: Worker\ndescription: Does work."
    assert [item.source for item in request.context] == ["x"]


def test_failed_agent_call_is_traced_with_its_error(run: Run, program: Program) -> None:
    source = two_agents(program, "return B.echo(1)").replace(
        "func echo(y) { return { got: y } }", "func echo(y) { return y.missing }"
    )
    with pytest.raises(ExecutionError) as caught:
        run(source, check=False)
    assert caught.value.trace is not None
    (event,) = caught.value.trace
    assert event["kind"] == "agent"
    assert event["data"]["error"] == str(caught.value)


# ----------------------------------------------------------------------------- control flow


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("a and not b", "yes"),
        ("a and b", "no"),
        ("not a or b", "no"),
        ("b or a", "yes"),
        ("not (a and b)", "yes"),
    ],
)
def test_if_with_and_or_not(condition: str, expected: str, run: Run, program: Program) -> None:
    body = f'a = true\nb = false\nif {condition} {{ return "yes" }} else {{ return "no" }}'
    assert value_of(run, program, body) == expected


@pytest.mark.parametrize(("n", "word"), [(1, "one"), (2, "two"), (3, "many")])
def test_else_if_chain(n: int, word: str, run: Run, program: Program) -> None:
    body = (
        f'n = {n}\nr = ""\n'
        'if n == 1 { r = "one" } else if n == 2 { r = "two" } else { r = "many" }\nreturn r'
    )
    assert value_of(run, program, body) == word


def test_and_or_short_circuit(run: Run, program: Program) -> None:
    body = "return [false and missing.x, true or missing.x]"
    source = program(body)
    assert run(source, check=False).value == [False, True]


def test_for_loop_is_capped_and_traced(run: Run, program: Program) -> None:
    result = run(program('seen = []\nfor x in ["a", "b", "c"] < 2 { seen.add(x) }\nreturn seen'))
    assert result.value == ["a", "b"]
    end = result.trace[-1]
    assert isinstance(end["data"].pop("duration_ms"), int)
    assert result.trace == [
        {"kind": "for", "data": {"item": "x", "index": 0, "value": "a", "loop": "10:1"}},
        {"kind": "for", "data": {"item": "x", "index": 1, "value": "b", "loop": "10:1"}},
        {"kind": "loop_end", "data": {"loop": "10:1", "rounds": 2}},
    ]


def test_loop_until_rounds_are_traced_between_markers(run: Run, program: Program) -> None:
    body = "n = 0\nloop until n == 2 < 10 { n = n + 1 }\nrepeat * 1 { use n }\nreturn n"
    trace = run(program(body)).trace
    assert [event["kind"] for event in trace] == [
        "loop", "loop", "loop_end", "loop", "use", "loop_end",
    ]  # fmt: skip
    first = trace[0]["data"]
    assert first == {"loop": "10:1", "statement": "loop until n == 2", "index": 0, "limit": 10}
    assert trace[3]["data"]["statement"] == "repeat"
    assert trace[2]["data"]["rounds"] == 2


def test_for_loop_count_is_fixed_when_the_loop_starts(run: Run, program: Program) -> None:
    body = "xs = [1, 2]\nfor x in xs < 10 { xs.add(x) }\nreturn xs"
    assert value_of(run, program, body) == [1, 2, 1, 2]


def test_for_over_a_non_list_fails(run: Run, program: Program) -> None:
    assert error_of(run, program, "for x in 3 < 2 { }\nreturn 1") == (
        "for loop requires a list value at 9:10"
    )


def test_loop_until_stops_when_the_condition_holds(run: Run, program: Program) -> None:
    body = "n = 0\nloop until n == 3 < 10 { n = n + 1 }\nreturn n"
    assert value_of(run, program, body) == 3


def test_loop_until_stops_silently_at_its_bound(run: Run, program: Program) -> None:
    body = "n = 0\nloop until false < 4 { n = n + 1 }\nreturn n"
    assert value_of(run, program, body) == 4


def test_the_loop_end_event_says_the_bound_was_reached(run: Run, program: Program) -> None:
    reached = run(program("n = 0\nloop until n == 9 < 3 { n = n + 1 }\nreturn n")).trace[-1]
    assert reached["kind"] == "loop_end"
    assert reached["data"]["bound_reached"] is True and reached["data"]["limit"] == 3
    held = run(program("n = 0\nloop until n == 2 < 3 { n = n + 1 }\nreturn n")).trace[-1]
    assert held["kind"] == "loop_end" and "bound_reached" not in held["data"]


# ----------------------------------------------------------------------------- entry input


SHAPED = "return input"
SHAPE = "input { name string, age number }"


def test_interactive_input_fills_missing_fields_and_is_traced(
    run: Run, program: Program, scripted_input: Callable[..., Any]
) -> None:
    provider = scripted_input({"age": 36})
    result = run(
        program(SHAPED, params=SHAPE),
        {"name": "Ada", "age": None, "extra": 1},
        input_provider=provider,
    )
    assert result.value == {"name": "Ada", "age": 36, "extra": 1}
    assert provider.asked == [("age", "input.age")]
    assert result.trace == [{"kind": "input", "data": {"path": "input.age", "value": 36}}]


def test_provided_input_is_passed_through_unchanged(run: Run, program: Program) -> None:
    result = run(program(SHAPED, params=SHAPE), {"name": "Ada", "age": 36})
    assert result.value == {"name": "Ada", "age": 36}
    assert result.trace == []


def test_missing_input_without_a_provider_fails(run: Run, program: Program) -> None:
    with pytest.raises(ExecutionError) as caught:
        run(program(SHAPED, params=SHAPE), {"age": 1})
    assert str(caught.value) == (
        "Missing input 'input.name' and no interactive input provider is available at 8:21"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"name": 3, "age": 1}, "Input field 'name' must be a string, got 3 at 8:21"),
        ({"name": "Ada", "age": "36"}, "Input field 'age' must be a number, got \"36\" at 8:34"),
    ],
)
def test_input_type_errors_are_not_coerced(
    value: dict[str, Any], message: str, run: Run, program: Program
) -> None:
    with pytest.raises(ExecutionError) as caught:
        run(program(SHAPED, params=SHAPE), value)
    assert str(caught.value) == message


def test_shaped_input_must_be_an_object(run: Run, program: Program) -> None:
    with pytest.raises(ExecutionError, match=r"^Entry input must be a JSON object at 8:3$"):
        run(program(SHAPED, params=SHAPE), [1])


def test_unshaped_input_is_passed_as_is_and_no_params_ignores_it(
    run: Run, program: Program
) -> None:
    assert run(program("return input", params="input"), [1, 2]).value == [1, 2]
    assert run(program("return 1"), {"ignored": True}).value == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"agent": "Nope"}, "Unknown agent 'Nope'"),
        ({"function": "nope"}, "Unknown function 'nope'"),
    ],
)
def test_entry_selection_errors(
    options: dict[str, str], message: str, run: Run, program: Program
) -> None:
    with pytest.raises(ExecutionError) as caught:
        run(program("return 1"), **options)
    assert str(caught.value) == message


def test_entry_agent_and_function_can_be_chosen(run: Run, program: Program) -> None:
    source = two_agents(program, "return 1")
    assert run(source, agent="B", function="echo", input_value=4).value == {"got": 4}


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("", "main agent is required when a program contains multiple agents"),
        (
            "agent A { main func() { return 1 } }\nagent B { main func() { return 2 } }",
            "main agent is required when a program contains multiple agents",
        ),
        ("agent A { func f() { return 1 } }", "Agent 'A' has no main func"),
    ],
)
def test_entry_resolution_errors(source: str, message: str, run: Run) -> None:
    with pytest.raises(ExecutionError) as caught:
        run(source, check=False)
    assert str(caught.value) == message


# ----------------------------------------------------------------------------- indexing and members


def test_indexing(run: Run, program: Program) -> None:
    body = 'xs = [[1, 2], { id: "s" }]\nreturn [xs[0][1], xs[1].id, xs[1 - 1][0]]'
    assert value_of(run, program, body) == [2, "s", 1]


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ('"ab"[0]', "Index access requires a list value"),
        ("{ a: 1 }[0]", "Index access requires a list value"),
        ("xs[-1]", "List index must be a non-negative integer"),
        ("xs[0.5]", "List index must be a non-negative integer"),
        ('xs["0"]', "List index must be a non-negative integer"),
        ("xs[true]", "List index must be a non-negative integer"),
        ("xs[2]", "List index 2 is out of range"),
    ],
)
def test_index_errors(expression: str, message: str, run: Run, program: Program) -> None:
    assert error_of(run, program, f"xs = [1, 2]\nreturn {expression}") == f"{message} at 10:8"


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("{ a: 1 }.b", "Unknown object property 'b'"),
        ("{ a: 1 }.toString", "Unknown object property 'toString'"),
        ("[1].first", "Unknown list property 'first'"),
        ("(1).b", "Cannot read property 'b'"),
        ("none.b", "Cannot read property 'b'"),
        ("true.length", "Cannot read property 'length'"),
    ],
)
def test_member_errors(expression: str, message: str, run: Run, program: Program) -> None:
    # The checker reports the literal ones already (UNKNOWN_FIELD); the run refuses them too.
    body = f"return {expression}"
    assert error_of(run, program, body, check=False).startswith(f"{message} at 9:")


def test_tool_method_reference_without_a_call(run: Run, program: Program) -> None:
    assert value_of(run, program, "return Search.query") == {"tool": "Search", "method": "query"}


def test_json_file_import(tmp_path: Path, run: Run, program: Program) -> None:
    (tmp_path / "data.JSON").write_text(
        json.dumps({"steps": [{"id": "step-1"}], "n": 2.0}), encoding="utf-8"
    )
    (tmp_path / "notes.md").write_text("# Notes\n", encoding="utf-8")
    source = program(
        "return [Data.steps[0].id, Data.n, Notes]",
        imports='import file Data from "data.JSON"\nimport file Notes from "./notes.md"\n',
    )
    assert run(source, path=tmp_path / "main.as").value == ["step-1", 2, "# Notes\n"]


def test_missing_file_import_fails_with_its_location(
    tmp_path: Path, run: Run, program: Program
) -> None:
    source = program("return Data", imports='import file Data from "absent.json"\n')
    with pytest.raises(ExecutionError) as caught:
        run(source, path=tmp_path / "main.as")
    message = str(caught.value)
    assert message.startswith("Cannot read file import 'Data' from ")
    assert str(tmp_path / "absent.json") in message
    assert message.endswith(" at 1:1")


# ----------------------------------------------------------------------------- tools and memory


class FailingTools:
    """A tool provider that fails the way `problem` says."""

    def __init__(self, problem: Exception) -> None:
        self.problem = problem

    def call(self, request: Any) -> Any:
        raise self.problem


@pytest.mark.parametrize(
    ("problem", "reason"),
    [
        (ExecutionError("quota exceeded"), "quota exceeded"),
        (
            FileNotFoundError(2, "No such file or directory", "/tmp/x"),
            "No such file or directory: /tmp/x",
        ),
        (ValueError("bad value"), "bad value"),
    ],
)
def test_tool_failures_are_wrapped_and_not_traced(
    problem: Exception, reason: str, run: Run, program: Program, at: Callable[..., str]
) -> None:
    source = program('a = 1\nreturn Search.query("tides")')
    with pytest.raises(ExecutionError) as caught:
        run(source, tools=FailingTools(problem))
    assert str(caught.value) == (
        f"Tool Search.query (mcp://tools/search) failed: {reason} at {at(source, 'Search.query(')}"
    )
    assert caught.value.trace == []


class FailingMemory:
    def add(self, request: Any) -> Any:
        raise ExecutionError("disk full")

    def query(self, request: Any) -> Any:
        raise KeyError("index")


MEMORY_IMPORT = 'import memory Lessons from "file://lessons.jsonl"\n'


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("return Lessons.add([1])", "memory.add expects an object record"),
        ('return Lessons.query("x")', "memory.query expects an object query"),
    ],
)
def test_memory_arguments_must_be_objects(
    body: str, message: str, run: Run, program: Program
) -> None:
    source = program(body, imports=MEMORY_IMPORT)
    with pytest.raises(ExecutionError) as caught:
        run(source)
    assert str(caught.value) == f"{message} at 10:8"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        # A provider's own errors keep their message; anything else is wrapped.
        ("return Lessons.add({ a: 1 })", "disk full at 10:8"),
        (
            "return Lessons.query({})",
            "Memory Lessons.query (file://lessons.jsonl) failed: 'index' at 10:8",
        ),
    ],
)
def test_memory_provider_failures(body: str, message: str, run: Run, program: Program) -> None:
    with pytest.raises(ExecutionError) as caught:
        run(program(body, imports=MEMORY_IMPORT), memory=FailingMemory())
    assert str(caught.value) == message


# ----------------------------------------------------------------------------- operators


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("1 + 2 * 3 - 4 / 2", 5),
        ("(1 + 2) * 3", 9),
        ("7 / 2", 3.5),
        ("0.1 + 0.2", 0.30000000000000004),
        ("-3 + 1", -2),
        ("- (2 * 3)", -6),
        ('"a" + 1 + true + none', "a1true"),
        ('1 + "a"', "1a"),
        ('"n=" + 2.50', "n=2.5"),
        ('"x" + [1]', "x"),
        ("1 < 2", True),
        ("2 <= 2", True),
        ("3 > 4", False),
        ("3 >= 4", False),
        ("1 == 1.0", True),
        ('"1" == 1', False),
        ("none == none", True),
        ("{ a: 1, b: 2 } == { a: 1, b: 2 }", True),
        ("{ a: 1, b: 2 } == { b: 2, a: 1 }", False),
        ("[1, [2]] == [1, [2]]", True),
        ("[1] != [2]", True),
        ("true and 5", True),
        ('0 or ""', False),
        ("not []", True),
        ("not {}", False),
        ('not ""', True),
        ("not 0", True),
        ("not none", True),
    ],
)
def test_operator_results(expression: str, value: Any, run: Run, program: Program) -> None:
    result = value_of(run, program, f"return {expression}")
    assert result == value
    assert type(result) is type(value)


def test_compound_assignment(run: Run, program: Program) -> None:
    body = 'x = 5\nx -= 2\nx+=10\ns = "a"\ns += 1\no = { n: 1 }\no.n += 1\nreturn [x, s, o.n]'
    assert value_of(run, program, body) == [13, "a1", 2]


def test_hyphenated_names_are_single_variables(run: Run, program: Program) -> None:
    body = "step-1 = 5\nstep = 3\nreturn [step-1, step - 1]"
    assert value_of(run, program, body) == [5, 2]


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ('1 - "a"', "operator '-' requires number operands"),
        ("true + 1", "operator '+' requires number operands"),
        ("[1] * 2", "operator '*' requires number operands"),
        ("1 / 0", "operator '/' cannot divide by zero"),
        ('1 < "a"', "operator '<' requires number operands"),
        ("none >= 1", "operator '>=' requires number operands"),
        ('-"a"', "operator '-' requires number operands"),
    ],
)
def test_operator_errors(expression: str, message: str, run: Run, program: Program) -> None:
    assert error_of(run, program, f"return {expression}") == f"{message} at 9:8"


def test_number_token_with_unit_evaluates_like_parse_float(run: Run, program: Program) -> None:
    assert value_of(run, program, "return [2k, 1.5k]") == [2, 1.5]


def test_huge_numbers_behave_as_doubles(run: Run, program: Program) -> None:
    assert value_of(run, program, "return " + "9" * 400 + " == " + "9" * 401) is True
    assert value_of(run, program, "return 9007199254740993 == 9007199254740992") is True


def test_values_nested_too_deeply_fail_cleanly(run: Run, program: Program) -> None:
    body = "x = []\nrepeat * 20000 { x = [x] }\nreturn x"
    assert error_of(run, program, body) == "Values or calls are nested too deeply to evaluate"
