"""`generate`: what a provider receives, the debug block, repair and retry rules, deferred `use`
evaluation, coercion and validation of the answer, strict mode, locations and tracing."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.providers.llm.mock import MockLlm, ScriptedLlm
from agentscript.providers.tools.mock import MockTools
from agentscript.runtime.context import PromptLayout
from agentscript.runtime.errors import ExecutionError, ModelOutputError
from agentscript.runtime.interpreter import ExecutionOptions, execute

Run = Callable[..., Any]
Program = Callable[..., str]
MakeLlm = Callable[..., Any]

DECIDE = 'return generate({ input: "Decide.", attempts: 2 }) -> { ok boolean }'
REPAIR_TAIL = "Return corrected JSON matching the requested schema only."


def generate_line(source: str) -> int:
    """The 1-based line of the first `generate(` in `source`."""
    return source[: source.index("generate(")].count("\n") + 1


# ----------------------------------------------------------------------------- the request


def test_request_carries_budget_context_identity_and_schema(
    run: Run, program: Program, make_llm: MakeLlm
) -> None:
    llm = make_llm()
    run(
        program(
            'note = "abcdefghij"\nuse note < 4\n'
            'return generate({ input: "Sum up.", limit: 300 }) { return { text string } }'
        ),
        llm=llm,
    )
    (request,) = llm.requests
    assert (request.agent_name, request.function_name, request.call_key) == (
        "A",
        "__main",
        "A.__main",
    )
    assert (request.model.name, request.model.uri) == ("Model", "openai://gpt-4.1-mini")
    assert request.identity == {"role": "Researcher", "description": "Finds facts."}
    assert request.instruction == "Sum up."
    assert request.max_output_tokens == 300
    assert request.built.budget is not None and request.built.budget.to_json() == {"amount": 300}
    (item,) = request.context
    assert (item.source, item.text, item.budget.to_json()) == ("note", "abcd", {"amount": 4})
    assert request.schema == {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    }
    assert request.attempt == 1
    # The budget only limits the answer; it never appears in the prompt.
    assert "300" not in request.built.final_user_message


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ("max_output: 4k", {"max_output_tokens": 4000}),
        ("limit: 1.5k", {"max_output_tokens": 1500}),
        ("temperature: 0.2", {"temperature": 0.2}),
        ('think: "low"', {"think": "low"}),
        ("think: true", {"think": True}),
        ("strict: false", {"strict": False}),
        ("", {"max_output_tokens": None, "temperature": None, "think": None, "strict": None}),
    ],
)
def test_generate_run_optionsreach_the_provider(
    options: str, expected: dict[str, Any], run: Run, program: Program, make_llm: MakeLlm
) -> None:
    llm = make_llm()
    separator = ", " if options else ""
    run(program(f'return generate({{ input: "x"{separator}{options} }}) -> {{ a }}'), llm=llm)
    request = llm.requests[0]
    assert {key: getattr(request, key) for key in expected} == expected


def test_debug_prints_the_whole_prompt_per_attempt(
    run: Run, program: Program, make_llm: MakeLlm
) -> None:
    stream = io.StringIO()
    run(
        program('use "ctx"\nreturn generate({ input: "Go.", debug: true }) -> { ok boolean }'),
        llm=make_llm(),
        debug_stream=stream,
    )
    schema = (
        '{\n  "type": "object",\n  "properties": {\n    "ok": {\n      "type": "boolean"\n    }\n'
        '  },\n  "required": [\n    "ok"\n  ],\n  "additionalProperties": false\n}'
    )
    assert stream.getvalue() == (
        "--- AgentScript generate debug: A attempt 1 ---\n"
        "System:\nYou are A.\nrole: Researcher\ndescription: Finds facts.\n"
        'Final user message:\nContext:\n[0] "ctx":\nctx\nInstruction:\nGo.\n'
        f"Return JSON matching this schema:\n{schema}\n"
        f"Return schema:\n{schema}\n"
        "--- end AgentScript generate debug ---\n"
    )


def test_without_debug_nothing_is_printed(run: Run, program: Program, make_llm: MakeLlm) -> None:
    stream = io.StringIO()
    run(program(DECIDE), llm=make_llm(), debug_stream=stream)
    assert stream.getvalue() == ""


# ----------------------------------------------------------------------------- repair


def test_repair_message_includes_previous_output(
    run: Run, program: Program, make_llm: MakeLlm
) -> None:
    source = program(DECIDE)
    llm = make_llm({"ok": "maybe"}, {"ok": True})
    result = run(source, llm=llm)
    assert result.value == {"ok": True}
    first, second = llm.instructions
    assert first == "Decide."
    column = source.splitlines()[generate_line(source) - 1].index("ok boolean") + 1
    assert second == (
        "Decide.\n\nPrevious generation failed.\n\n"
        'Previous output:\n{\n  "ok": "maybe"\n}\n\n'
        f"Error:\nLLM result field 'ok' must be a boolean, got \"maybe\" at {generate_line(source)}:{column}\n\n"
        f"{REPAIR_TAIL}"
    )
    assert llm.requests[1].attempt == 2
    assert "Previous generation failed." in llm.requests[1].built.final_user_message


def test_json_parse_errors_are_retried_without_previous_output(run: Run, program: Program) -> None:
    llm = ScriptedLlm(["I think the answer is yes.", {"ok": True}])
    recorded: list[Any] = []

    class Spy:
        def generate(self, request: Any) -> Any:
            recorded.append(request.instruction)
            return llm.generate(request)

    result = run(program(DECIDE), llm=Spy())
    assert result.value == {"ok": True}
    assert recorded[1] == (
        "Decide.\n\nPrevious generation failed.\n\n"
        "Error:\nLLM provider did not return JSON: I think the answer is yes.\n\n"
        f"{REPAIR_TAIL}"
    )


def test_the_compact_layouts_repair_ends_with_the_answers_form(run: Run, program: Program) -> None:
    """The compact prompt prints no schema: a model whose server ignored it learns the shape
    from the repair, as placeholders it cannot pass by copying."""
    llm = ScriptedLlm(["Sure! Here it is.", {"ok": True, "tags": ["a"], "n": 1, "kind": "b"}])
    recorded: list[Any] = []

    class CompactSpy:
        def prompt_layout(self, model: Any) -> PromptLayout:
            return PromptLayout.COMPACT

        def generate(self, request: Any) -> Any:
            recorded.append(request.instruction)
            return llm.generate(request)

    shaped = (
        'return generate({ input: "Decide.", attempts: 2 }) -> '
        '{ ok boolean tags list[string] n number kind: "a" | "b" }'
    )
    run(program(shaped), llm=CompactSpy())
    assert recorded[1] == (
        "Decide.\n\nPrevious generation failed.\n\n"
        "Error:\nLLM provider did not return JSON: Sure! Here it is.\n\n"
        f"{REPAIR_TAIL} Reply with one JSON object of this form, each <type> replaced by a value"
        " of that type taken from the context, and nothing else:\n"
        '{"ok": <boolean>, "tags": [<string>], "n": <number>, "kind": <"a" | "b">}'
    )


def test_json_parse_error_on_the_last_attempt_fails_with_a_location(
    run: Run, program: Program, make_llm: MakeLlm
) -> None:
    source = program(DECIDE)
    llm = make_llm(
        ModelOutputError("LLM provider did not return JSON: a"),
        ModelOutputError("LLM provider did not return JSON: b"),
    )
    with pytest.raises(ModelOutputError) as caught:
        run(source, llm=llm)
    assert str(caught.value) == (
        f"LLM provider did not return JSON: b at {generate_line(source)}:8"
    )
    assert len(llm.requests) == 2


def test_infrastructure_errors_are_not_retried(
    run: Run, program: Program, make_llm: MakeLlm
) -> None:
    llm = make_llm(ExecutionError("LLM provider request failed (500): down"), {"ok": True})
    with pytest.raises(ExecutionError, match=r"^LLM provider request failed \(500\): down at "):
        run(program(DECIDE), llm=llm)
    assert len(llm.requests) == 1


def test_shape_errors_on_the_last_attempt_are_raised(
    run: Run, program: Program, make_llm: MakeLlm
) -> None:
    llm = make_llm({"ok": "maybe"}, {"ok": "still maybe"})
    with pytest.raises(ExecutionError, match=r"^LLM result field 'ok' must be a boolean, got "):
        run(program(DECIDE), llm=llm)
    assert len(llm.requests) == 2


def test_repairs_do_not_accumulate(run: Run, program: Program, make_llm: MakeLlm) -> None:
    llm = make_llm({"ok": 1}, {"ok": 2}, {"ok": True})
    run(program('return generate({ input: "Decide.", attempts: 3 }) -> { ok boolean }'), llm=llm)
    third = llm.instructions[2]
    assert third.count("Previous generation failed.") == 1
    assert '"ok": 2' in third and '"ok": 1' not in third


@pytest.mark.parametrize(
    ("instruction", "expected_keys"),
    [('{ task: "t", level: 2 }', ["task", "level", "repair"]), ("42", ["input", "repair"])],
)
def test_repair_of_non_string_instructions(
    instruction: str, expected_keys: list[str], run: Run, program: Program, make_llm: MakeLlm
) -> None:
    llm = make_llm({"ok": "no"}, {"ok": True})
    run(
        program(f"return generate({{ input: {instruction}, attempts: 2 }}) -> {{ ok boolean }}"),
        llm=llm,
    )
    repaired = llm.instructions[1]
    assert list(repaired) == expected_keys
    assert repaired["repair"].startswith("Previous generation failed.\n\nPrevious output:\n")
    if "input" in repaired:
        assert repaired["input"] == 42


def test_attempts_zero_is_rejected_at_runtime(
    run: Run, program: Program, make_llm: MakeLlm
) -> None:
    source = program('return generate({ input: "x", attempts: 0 }) -> { a }')
    llm = make_llm()
    with pytest.raises(ExecutionError) as caught:
        run(source, llm=llm, check=False)
    assert str(caught.value) == (
        f"generate attempts must be a positive integer at {generate_line(source)}:8"
    )
    assert llm.requests == []


# ----------------------------------------------------------------------------- use evaluation


def context_texts(llm: Any, request: int = 0) -> list[tuple[str, str]]:
    return [(item.heading, item.text) for item in llm.requests[request].context]


def test_use_is_evaluated_when_the_generate_runs(
    run: Run, program: Program, make_llm: MakeLlm
) -> None:
    llm = make_llm()
    run(
        program('x = "before"\nuse x\nx = "after"\nreturn generate({ input: "g" }) -> { a }'),
        llm=llm,
    )
    assert context_texts(llm) == [("[0] x:", "after")]


def test_use_is_evaluated_in_the_scope_that_declared_it(
    run: Run, program: Program, make_llm: MakeLlm
) -> None:
    llm = make_llm()
    run(
        program(
            'x = "outer"\nuse x\nif true {\n  x2 = "inner"\n  use x2\n'
            '  r = generate({ input: "g" }) -> { a }\n}\nreturn 1'
        ),
        llm=llm,
    )
    assert context_texts(llm) == [("[0] x:", "outer"), ("[1] x2:", "inner")]


def test_uses_of_a_finished_block_are_gone(run: Run, program: Program, make_llm: MakeLlm) -> None:
    llm = make_llm()
    run(
        program(
            'use "kept"\nfor item in ["a", "b"] < 2 {\n  use item\n'
            '  r = generate({ input: "in loop" }) -> { a }\n}\n'
            'return generate({ input: "after" }) -> { a }'
        ),
        llm=llm,
    )
    assert context_texts(llm, 0) == [('[0] "kept":', "kept"), ("[1] item:", "a")]
    assert context_texts(llm, 1) == [('[0] "kept":', "kept"), ("[1] item:", "b")]
    assert context_texts(llm, 2) == [('[0] "kept":', "kept")]


def test_use_is_not_inherited_by_called_functions(
    run: Run, program: Program, make_llm: MakeLlm
) -> None:
    llm = make_llm()
    run(
        program(
            'use "caller context"\nreturn helper()',
            functions='  func helper() { return generate({ input: "g" }) -> { a } }\n',
        ),
        llm=llm,
    )
    assert context_texts(llm) == []


def test_use_of_a_tool_call_runs_the_tool_at_generate_time(
    run: Run, program: Program, make_llm: MakeLlm
) -> None:
    result = run(
        program('use Search.query("tides")\nreturn generate({ input: "g" }) -> { a }'),
        llm=make_llm(),
    )
    assert [event["kind"] for event in result.trace] == ["use", "tool", "generate"]
    item = result.trace[2]["data"]["context"]["context"][0]
    assert item["source"] == 'Search.query("tides")'
    assert item["value"] == {
        "summary": "Search.query",
        "source": "mcp://tools/search",
        "args": ["tides"],
    }


def test_use_evaluation_errors_propagate(run: Run, program: Program, make_llm: MakeLlm) -> None:
    llm = make_llm()
    with pytest.raises(ExecutionError, match=r"^Unknown object property 'missing' at 10:5$"):
        # The checker finds `missing` already (UNKNOWN_FIELD); the run stops there too.
        source = 'y = {}\nuse y.missing\nreturn generate({ input: "g" }) -> { a }'
        run(program(source), llm=llm, check=False)
    assert llm.requests == []


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("answer", "message", "at_field"),
    [
        ({}, "LLM result is missing required field 'n'", True),
        ([1], "LLM result must be an object matching the generate return shape", False),
        ("text", "LLM result must be an object matching the generate return shape", False),
        ({"n": 1, "extra": 2}, "LLM result contains unexpected field 'extra'", False),
        ({"n": None}, "LLM result field 'n' must be a number, got null", True),
        ({"n": "042"}, "LLM result field 'n' must be a number, got \"042\"", True),
        ({"n": True}, "LLM result field 'n' must be a number, got true", True),
    ],
)
def test_shape_mismatch_errors(
    answer: Any, message: str, at_field: bool, run: Run, program: Program, make_llm: MakeLlm
) -> None:
    source = program('return generate({ input: "g" }) -> { n number }')
    line = generate_line(source)
    column = source.splitlines()[line - 1].index("n number" if at_field else "generate") + 1
    with pytest.raises(ExecutionError) as caught:
        run(source, llm=make_llm(answer))
    assert str(caught.value) == f"{message} at {line}:{column}"


@pytest.mark.parametrize(
    ("field_type", "answer", "message"),
    [
        ("string", 42, "LLM result field 'f' must be a string, got 42"),
        ("boolean", "yes", "LLM result field 'f' must be a boolean, got \"yes\""),
        ("list", {"a": 1}, "LLM result field 'f' must be a list, got {\"a\":1}"),
        ("list[string]", ["a", 1], r"LLM result field 'f\[1\]' must be a string, got 1"),
        (
            "list[list[number]]",
            [[1], ["x"]],
            r"LLM result field 'f\[1\]\[0\]' must be a number, got \"x\"",
        ),
    ],
)
def test_field_type_errors(
    field_type: str, answer: Any, message: str, run: Run, program: Program, make_llm: MakeLlm
) -> None:
    with pytest.raises(ExecutionError, match=rf"^{message} at "):
        run(
            program(f'return generate({{ input: "g" }}) -> {{ f {field_type} }}'),
            llm=make_llm({"f": answer}),
        )


@pytest.mark.parametrize("value", [None, 1, "s", [1, {"a": [True]}], {"deep": {"x": None}}])
def test_json_fields_accept_any_json(
    value: Any, run: Run, program: Program, make_llm: MakeLlm
) -> None:
    result = run(
        program('return generate({ input: "g" }) -> { j json }'), llm=make_llm({"j": value})
    )
    assert result.value == {"j": value}


@pytest.mark.parametrize(
    ("field_type", "answer", "value"),
    [
        ("boolean", "true", True),
        ("boolean", " FALSE ", False),
        ("number", "42", 42),
        ("number", "-3.50", -3.5),
        ("number", " 0 ", 0),
        ("list[boolean]", ["false", "true"], [False, True]),
        ("list[number]", ["1", "2.5"], [1, 2.5]),
        ("string", "42", "42"),
        ("string", "true", "true"),
        ("json", "42", "42"),
    ],
)
def test_coercion_of_obvious_strings(
    field_type: str, answer: Any, value: Any, run: Run, program: Program, make_llm: MakeLlm
) -> None:
    result = run(
        program(f'return generate({{ input: "g" }}) -> {{ f {field_type} }}'),
        llm=make_llm({"f": answer}),
    )
    assert result.value == {"f": value}
    assert type(result.value["f"]) is type(value)


def test_strict_true_disables_coercion_and_rejects_extra_fields(
    run: Run, program: Program, make_llm: MakeLlm
) -> None:
    source = program('return generate({ input: "g", strict: true }) -> { b boolean }')
    with pytest.raises(ExecutionError, match=r"^LLM result field 'b' must be a boolean, got "):
        run(source, llm=make_llm({"b": "true"}))
    with pytest.raises(ExecutionError, match=r"^LLM result contains unexpected field 'x' at "):
        run(source, llm=make_llm({"b": True, "x": 1}))


def test_strict_false_coerces_and_allows_extra_fields(
    run: Run, program: Program, make_llm: MakeLlm
) -> None:
    result = run(
        program('return generate({ input: "g", strict: false }) -> { b boolean }'),
        llm=make_llm({"b": "true", "extra": [1]}),
    )
    assert result.value == {"b": True, "extra": [1]}


def test_default_behaviour_coerces_but_rejects_extra_fields(
    run: Run, program: Program, make_llm: MakeLlm
) -> None:
    source = program('return generate({ input: "g" }) -> { b boolean }')
    assert run(source, llm=make_llm({"b": "false"})).value == {"b": False}
    with pytest.raises(ExecutionError, match=r"^LLM result contains unexpected field 'x' at "):
        run(source, llm=make_llm({"b": True, "x": 1}))


@pytest.mark.parametrize(
    ("options", "extra_fields_allowed", "kept"),
    [
        ("", False, False),
        ("", True, True),
        (", strict: true", True, False),
        (", strict: false", False, True),
    ],
)
def test_extra_fields_follow_strict_else_the_release(
    program: Program, make_llm: MakeLlm, options: str, extra_fields_allowed: bool, kept: bool
) -> None:
    """`strict` decides when given; otherwise the release the run is of (0.1.0 rejects, the
    newer releases keep), which the composition hands in as ExecutionOptions."""
    source = program(f'return generate({{ input: "g"{options} }}) -> {{ b boolean }}')
    run_options = ExecutionOptions(
        llm=make_llm({"b": True, "x": 1}),
        tools=MockTools(),
        extra_fields_allowed=extra_fields_allowed,
    )
    if kept:
        assert execute(agentscript.load_source(source), {}, run_options).value == {
            "b": True,
            "x": 1,
        }
    else:
        with pytest.raises(ExecutionError, match="unexpected field 'x'"):
            execute(agentscript.load_source(source), {}, run_options)


def test_free_form_generate_returns_text_without_schema(
    run: Run, program: Program, make_llm: MakeLlm
) -> None:
    llm = make_llm("Plain words.")
    result = run(program('return generate({ input: "Talk." })'), llm=llm)
    assert result.value == "Plain words."
    request = llm.requests[0]
    assert request.schema is None and request.return_shape is None
    assert request.built.final_user_message == "Instruction:\nTalk."


@pytest.mark.parametrize(
    ("shape", "value"),
    [
        (
            "{ s string, n number, b boolean, j json, l list }",
            {"s": "", "n": 0, "b": True, "j": {}, "l": []},
        ),
        ("{ ls list[string], lln list[list[number]] }", {"ls": [""], "lln": [[0]]}),
    ],
)
def test_mock_model_answers_with_shape_defaults(
    shape: str, value: dict[str, Any], run: Run, program: Program
) -> None:
    result = run(program(f'return generate({{ input: "g" }}) -> {shape}'), llm=MockLlm())
    assert result.value == value


# ----------------------------------------------------------------------------- runtime config


@pytest.mark.parametrize(
    ("config", "missing"),
    [("", "model"), ('model M\n  description "d"', "role"), ('model M\n  role "r"', "description")],
)
def test_missing_configuration_fails_at_runtime_with_a_location(
    config: str, missing: str, run: Run
) -> None:
    source = (
        f'import llm M from "openai://x"\nagent A {{\n  {config}\n'
        '  main func() { return generate({ input: "g" }) -> { a } }\n}'
    )
    with pytest.raises(ExecutionError) as caught:
        run(source, check=False)
    line = generate_line(source)
    assert str(caught.value) == f"generate requires {missing} in the current scope at {line}:24"


# ----------------------------------------------------------------------------- file import


def test_file_import_with_a_budget(tmp_path: Path, run: Run, make_llm: MakeLlm) -> None:
    (tmp_path / "notes.txt").write_text("0123456789" * 5, encoding="utf-8")
    source = (
        'import llm M from "openai://x"\nimport file Notes from "notes.txt"\n'
        'agent A {\n  model M\n  role "r"\n  description "d"\n'
        '  main func() {\n    use Notes < 12\n    return generate({ input: "g" }) -> { a }\n  }\n}'
    )
    llm = make_llm()
    run(source, llm=llm, path=tmp_path / "main.as")
    (item,) = llm.requests[0].context
    assert (item.heading, item.text, item.original_size, item.clipped_size) == (
        "[0] Notes:",
        "012345678901",
        50,
        12,
    )


# ----------------------------------------------------------------------------- trace


def test_successful_generate_after_repairs_records_the_errors(
    run: Run, program: Program, make_llm: MakeLlm
) -> None:
    result = run(program(DECIDE), llm=make_llm({"ok": "maybe"}, {"ok": True}))
    (event,) = result.trace
    data = event["data"]
    assert data["attempts"] == 2
    assert data["result"] == {"ok": True}
    assert data["instruction"] == "Decide."
    assert data["context"]["instruction"].startswith("Decide.\n\nPrevious generation failed.")
    assert [error.split(" at ")[0] for error in data["errors"]] == [
        "LLM result field 'ok' must be a boolean, got \"maybe\""
    ]
    assert "ok" not in data


def test_first_time_success_has_no_errors(run: Run, program: Program, make_llm: MakeLlm) -> None:
    (event,) = run(program(DECIDE), llm=make_llm({"ok": False})).trace
    assert set(event["data"]) == {
        "instruction",
        "attempts",
        "budget",
        "debug",
        "context",
        "result",
        "max_attempts",
        "promptTokens",
        "model",
        "duration_ms",
    }
    assert event["data"]["max_attempts"] == 2


def test_failed_generate_is_traced(run: Run, program: Program, make_llm: MakeLlm) -> None:
    with pytest.raises(ExecutionError) as caught:
        run(program(DECIDE), llm=make_llm({"ok": 1}, {"ok": 2}))
    assert caught.value.trace is not None
    (event,) = caught.value.trace
    data = event["data"]
    assert event["kind"] == "generate"
    assert data["ok"] is False
    assert data["attempts"] == 2
    assert data["error"] == str(caught.value)
    assert len(data["errors"]) == 2
    assert "result" not in data


def test_a_generate_says_which_model_was_asked_and_how_long_it_took(
    run: Run, program: Program, make_llm: MakeLlm
) -> None:
    (event,) = run(program(DECIDE), llm=make_llm({"ok": True})).trace
    data = event["data"]
    assert data["model"] == "openai://gpt-4.1-mini"
    assert isinstance(data["duration_ms"], float | int) and data["duration_ms"] >= 0
