"""AgentSpec: the validator names each mistake with the original's code at its JSON pointer,
and the compiler lowers a valid spec to a program that checks clean (0.1.21)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.app.architect.compile import compile_spec
from agentscript.app.architect.validate import typed_spec, validate_spec
from agentscript.lang import ast
from agentscript.lang.checker import check_program
from agentscript.lang.parser import parse_program

FIXTURES = Path(__file__).parents[1] / "fixtures" / "architect"
LINEAR = "notes-answerer.spec.json"
REACT = "notes-researcher.spec.json"


def spec(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return copy.deepcopy(loaded)


def found(draft: dict[str, Any]) -> set[tuple[str, str]]:
    """(code, path) of each diagnostic."""
    result = validate_spec(draft)
    assert result["ok"] is False
    return {(item["code"], item["path"]) for item in result["diagnostics"]}


@pytest.mark.parametrize("name", [LINEAR, REACT])
def test_each_fixture_is_valid_and_compiles_to_a_program_that_checks_clean(name: str) -> None:
    draft = spec(name)
    assert validate_spec(draft) == {"ok": True, "diagnostics": []}
    compiled = compile_spec(draft)
    assert compiled["ok"] is True
    program = agentscript.load_source(compiled["source"], "generated.as")
    assert agentscript.check(program) == []
    assert compile_spec(spec(name)) == compiled  # deterministic


def test_react_lowering_is_the_originals() -> None:
    source = compile_spec(spec(REACT))["source"]
    body = source.split("    }) {\n", 1)[1]
    assert body.startswith(
        '        use input.question as "question"\n'
        "\n"
        "        scratch = []\n"
        '        use scratch.summary max 3k as "what the searches found"\n'
        "        done = false\n"
        "\n"
        "        loop until done max 3 {\n"
        "            thought = generate({\n"
    )
    assert (
        "            obs = Search.run({\n"
        '                path: "notes",\n'
        "                pattern: thought.query\n"
        "            })\n"
        "            scratch.add(obs)\n"
        "            done = thought.done\n"
        "        }\n"
    ) in body


def test_strings_are_written_so_the_program_reads_them_back_unchanged() -> None:
    draft = spec(LINEAR)
    draft["agent"]["role"] = 'Says "hi"\nthen\\answers\b\x01\t'
    draft["generation"]["input"] = "Answer in 'plain' words: ünïcode too."
    program = agentscript.load_source(compile_spec(draft)["source"], "generated.as")
    (agent,) = program.agents
    role = next(item.value for item in agent.config if item.key == "role")
    assert isinstance(role, ast.StringExpr) and role.value == 'Says "hi"\nthen\\answers\b\x01\t'


def test_many_mistakes_are_all_reported_each_at_its_field() -> None:
    draft = spec(LINEAR)
    del draft["agent"]["name"]
    draft["version"] = "0.2"
    draft["inputs"]["bad"] = {"type": "object"}
    draft["locals"][0]["source"] = {
        "kind": "tool_call",
        "tool": "Missing",
        "method": "run",
        "args": {"pattern": "input.nope", "prior": "local.later"},
    }
    draft["locals"].append(
        {
            "name": "later",
            "source": {"kind": "tool_call", "tool": "Search", "method": "run", "args": {}},
        }
    )
    draft["model_context"] = []
    assert found(draft) >= {
        ("MISSING_FIELD", "/agent/name"),
        ("INVALID_VERSION", "/version"),
        ("UNSUPPORTED_TYPE", "/inputs/bad/type"),
        ("UNKNOWN_TOOL", "/locals/0/source/tool"),
        ("UNKNOWN_INPUT_REF", "/locals/0/source/args/pattern"),
        ("FORWARD_LOCAL_REF", "/locals/0/source/args/prior"),
        ("EMPTY_MODEL_CONTEXT", "/model_context"),
    }
    # A mistake two checks see (malformed and unsupported) is reported once.
    codes = [item["code"] for item in validate_spec(draft)["diagnostics"]]
    assert codes.count("UNSUPPORTED_TYPE") == 1


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda s: s.update(output={}), ("MISSING_FIELD", "/output/fields")),
        (lambda s: s["output"]["fields"].update(answer={}), ("MISSING_FIELD", "/output/fields/answer/type")),
        (lambda s: s["output"]["fields"].update(answer={"type": 1}), ("INVALID_SHAPE", "/output/fields/answer/type")),
        (lambda s: s["output"]["fields"].update(answer="string"), ("INVALID_SHAPE", "/output/fields/answer")),
        (lambda s: s["locals"][0]["source"].update(args=[]), ("INVALID_SHAPE", "/locals/0/source/args")),
        (lambda s: s["locals"][0]["source"].update(kind="literal"), ("UNSUPPORTED_KIND", "/locals/0/source/kind")),
        (lambda s: s["locals"][0]["source"]["args"].update(max=5), ("INVALID_TYPE", "/locals/0/source/args/max")),
        (lambda s: s["tools"][0].update(methods={}), ("INVALID_SHAPE", "/tools/0/methods")),
        (lambda s: s["tools"][0].update(methods=[]), ("EMPTY_VALUE", "/tools/0/methods")),
        (lambda s: s["tools"][0].update(import_name="9lives"), ("INVALID_IDENTIFIER", "/tools/0/import_name")),
        (lambda s: s["agent"].update(name="notes"), ("INVALID_IDENTIFIER", "/agent/name")),
        (lambda s: s["agent"].update(role=""), ("EMPTY_VALUE", "/agent/role")),
        (lambda s: s["inputs"]["question"].update(required="yes"), ("INVALID_TYPE", "/inputs/question/required")),
        (lambda s: s.update(inputs={}), ("EMPTY_VALUE", "/inputs")),
        (lambda s: s.update(version=1), ("INVALID_VERSION", "/version")),
        (lambda s: s.update(pattern=1), ("INVALID_SHAPE", "/pattern")),
        (lambda s: s.update(pattern="loop"), ("UNSUPPORTED_PATTERN", "/pattern")),
        (lambda s: s.update(pattern="react"), ("MISSING_PATTERN_BLOCK", "/react")),
        (lambda s: s.update(react={}), ("UNEXPECTED_PATTERN_BLOCK", "/react")),
        (lambda s: s.update(assumptions="none"), ("INVALID_SHAPE", "/assumptions")),
        (lambda s: s.update(assumptions=[""]), ("EMPTY_VALUE", "/assumptions/0")),
        (lambda s: s["generation"].update(max_output=0), ("INVALID_VALUE", "/generation/max_output")),
        (lambda s: s["generation"].update(max_output=True), ("INVALID_VALUE", "/generation/max_output")),
        (lambda s: s["model_context"][1].update(max="4 k"), ("INVALID_BUDGET_FORMAT", "/model_context/1/max")),
        (lambda s: s["model_context"][0].update(source="hits"), ("INVALID_CONTEXT_SOURCE", "/model_context/0/source")),
        (lambda s: s["model_context"][1].update(source="local.nope"), ("UNKNOWN_LOCAL_REF", "/model_context/1/source")),
        (lambda s: s["locals"][0]["source"].update(method="walk"), ("UNKNOWN_TOOL_METHOD", "/locals/0/source/method")),
        (lambda s: s["tools"][0].update(import_name="NotesAnswerer"), ("DUPLICATE_BINDING", "/tools/0/import_name")),
        (lambda s: s["locals"][0].update(name="input"), ("DUPLICATE_BINDING", "/locals/0/name")),
        (lambda s: s["locals"][0].update(name="Search"), ("DUPLICATE_BINDING", "/locals/0/name")),
    ],
)  # fmt: skip
def test_each_mistake_has_the_originals_code_at_its_field(
    change: Any, expected: tuple[str, str]
) -> None:
    draft = spec(LINEAR)
    change(draft)
    assert expected in found(draft)


def test_react_checks_thoughts_the_stop_field_and_reserved_names() -> None:
    draft = spec(REACT)
    draft["inputs"] = {"thought": {"type": "string"}}
    draft["output"]["fields"]["scratch"] = {"type": "string"}
    draft["react"]["reason"]["output"]["fields"]["obs"] = {"type": "string"}
    draft["react"]["act"] = {
        "tool": "Search",
        "method": "missing",
        "args": {"pattern": "thought.missing", "path": "scratch.value"},
    }
    draft["react"]["stop_when"] = "thought.query"
    problems = found(draft)
    assert problems >= {
        ("RESERVED_IDENTIFIER", "/inputs/thought"),
        ("RESERVED_IDENTIFIER", "/output/fields/scratch"),
        ("RESERVED_IDENTIFIER", "/react/reason/output/fields/obs"),
        ("RESERVED_IDENTIFIER", "/react/act/args/path"),
        ("UNKNOWN_TOOL_METHOD", "/react/act/method"),
        ("UNKNOWN_THOUGHT_REF", "/react/act/args/pattern"),
        ("STOP_WHEN_NOT_BOOLEAN", "/react/stop_when"),
    }
    codes = [item["code"] for item in validate_spec(draft)["diagnostics"]]
    assert codes.count("UNKNOWN_TOOL_METHOD") == 1
    assert ("RESERVED_IDENTIFIER", "/react/reason/output/fields/done") not in problems

    draft = spec(REACT)
    draft["react"]["stop_when"] = "thought.done == true"
    assert ("INVALID_STOP_WHEN", "/react/stop_when") in found(draft)
    draft["react"]["stop_when"] = "thought.finished"
    assert ("UNKNOWN_THOUGHT_REF", "/react/stop_when") in found(draft)
    draft = spec(REACT)
    draft["react"]["max_iterations"] = 0
    draft["react"]["scratch"]["max"] = "lots"
    assert found(draft) >= {
        ("INVALID_VALUE", "/react/max_iterations"),
        ("INVALID_BUDGET_FORMAT", "/react/scratch/max"),
    }


def test_a_spec_that_does_not_validate_is_not_compiled() -> None:
    draft = spec(LINEAR)
    draft["version"] = "2"
    compiled = compile_spec(draft)
    assert compiled["ok"] is False and compiled["code"] == "validation_required"
    assert [item["code"] for item in compiled["diagnostics"]] == ["INVALID_VERSION"]


def test_the_typed_spec_drops_what_the_original_ignores() -> None:
    draft = spec(LINEAR)
    draft["extra"] = "ignored"
    typed = typed_spec(draft)
    assert not hasattr(typed, "extra")
    assert list(typed.inputs) == ["question", "topic"] and typed.pattern == "linear"


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every value inside a spec (keys and list positions)."""
    found = [at] if at else []
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []  # fmt: skip
    for key, child in children:
        found += _paths(child, (*at, key))
    return found


@pytest.mark.parametrize("name", [LINEAR, REACT])
def test_any_field_of_any_kind_gives_diagnostics_or_a_program_that_checks(name: str) -> None:
    """Each field of a valid spec replaced by a value of each JSON kind: the validator always
    answers, and whatever it passes compiles to a program the language accepts (URIs are not
    the validator's business, as in the original: the analysis of the source reports them)."""
    replacements: list[Any] = [None, 0, -1, 2.5, True, "", "x", [], {}, ["x"], {"x": 1}]
    original = spec(name)
    for path in _paths(original):
        for replacement in replacements:
            draft = spec(name)
            parent = draft
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = replacement
            compiled = compile_spec(draft)
            if compiled["ok"]:
                program = parse_program(compiled["source"])
                problems = [d for d in check_program(program) if d.severity == "error"]
                assert problems == [], (path, replacement)
            else:
                assert compiled["diagnostics"], (path, replacement)
