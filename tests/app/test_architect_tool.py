"""`host://architect` from a program, its soft errors, and the analysis of source: the
original's answers (0.1.21), plus a summary of what a program declares."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.app.architect.analyze import analyze_source
from agentscript.app.architect.build import ARCHITECT_PROGRAM, agent_name_for
from agentscript.app.architect.tool import ArchitectTool
from agentscript.runtime.ports import ToolCall

ROOT = Path(__file__).parents[2]
SPEC = ROOT / "tests" / "fixtures" / "architect" / "notes-answerer.spec.json"

DESIGNER = """import llm Model from "openai://gpt-4.1-mini"
import tool Architect from "host://architect"

main agent Designer {
    model Model
    role "agent designer"
    description "Checks a spec, compiles it and checks the program."

    main func(input { spec json }) {
        checked = Architect.validateSpec({ spec: input.spec })
        if not checked.ok {
            return { checked: checked }
        }
        compiled = Architect.compileSpec({ spec: input.spec })
        analysis = Architect.analyzeSource({ source: compiled.source })
        return { checked: checked, compiled: compiled, analysis: analysis }
    }
}
"""


def design(tmp_path: Path, spec: Any) -> dict[str, Any]:
    program = tmp_path / "designer.as"
    program.write_text(DESIGNER, encoding="utf-8")
    result = agentscript.run(
        program, {"spec": spec}, agentscript.RunConfig(model="mock", journal=False)
    )
    value: dict[str, Any] = result.value
    return value


def call(method: str, *args: Any, uri: str = "host://architect") -> Any:
    return ArchitectTool().call(ToolCall("Architect", uri, method, list(args)))


def test_check_accepts_the_import(tmp_path: Path) -> None:
    assert agentscript.check(agentscript.load_source(DESIGNER, tmp_path / "d.as")) == []


def test_a_program_validates_compiles_and_analyzes_a_spec(tmp_path: Path) -> None:
    value = design(tmp_path, json.loads(SPEC.read_text(encoding="utf-8")))
    assert value["checked"] == {"ok": True, "diagnostics": []}
    assert value["compiled"]["ok"] is True
    assert "main agent NotesAnswerer {" in value["compiled"]["source"]
    analysis = value["analysis"]
    assert analysis["ok"] is True and analysis["diagnostics"] == []
    (agent,) = analysis["summary"]["agents"]
    (function,) = agent["functions"]
    assert function["params"] == [
        {"name": "input", "shape": {"question": "string", "topic": "string"}}
    ]
    assert function["calls"] == [{"kind": "tool", "target": "Search.run"}]
    assert [use["source"] for use in function["uses"]] == ["input.question", "hits"]
    (generate,) = function["generates"]
    assert generate["output"] == {
        "answer": "string",
        "sources": "list[string]",
        "confident": "boolean",
        "missing": "list[string]",
    }
    assert generate["max_output"] == "800"


def test_a_program_reads_the_diagnostics_of_a_bad_spec(tmp_path: Path) -> None:
    value = design(tmp_path, {"version": "0.1"})
    checked = value["checked"]
    assert checked["ok"] is False
    assert {"code": "MISSING_FIELD", "path": "/agent", "severity": "error",
            "message": "Missing required field 'agent'."} in checked["diagnostics"]  # fmt: skip


def test_soft_errors_are_answers_the_program_can_read() -> None:
    assert call("validateSpec", {"spec": None}) == {
        "ok": False,
        "code": "invalid_input",
        "message": "spec must be a JSON object",
    }
    assert call("compileSpec", {"spec": [1]})["code"] == "invalid_input"
    assert call("validateSpec", {"spec": {}}, uri="host://architect/x")["code"] == "invalid_uri"
    compiled = call("compileSpec", {"spec": {}})
    assert compiled["ok"] is False and compiled["code"] == "validation_required"
    parsed = call("analyzeSource", {"source": "not source"})
    assert parsed["ok"] is False and parsed["code"] == "parse_error"
    assert parsed["diagnostics"] == [] and "1:1" in parsed["message"]


def test_a_wrong_call_stops_the_run_with_what_was_wrong() -> None:
    with pytest.raises(agentscript.ExecutionError, match="Unknown Architect method 'design'"):
        call("design", {})
    with pytest.raises(agentscript.ExecutionError, match="expects one json object argument"):
        call("validateSpec")
    with pytest.raises(
        agentscript.ExecutionError, match=r"Architect\.analyzeSource\.source is required"
    ):
        call("analyzeSource", {"source": 3})


def test_every_method_is_a_read() -> None:
    tool = ArchitectTool()
    for method in ("validateSpec", "compileSpec", "analyzeSource"):
        assert tool.risk(ToolCall("Architect", "host://architect", method, [{}])) == "read"


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.as")), ids=lambda p: p.name)
def test_the_examples_analyze_clean_with_a_summary(path: Path) -> None:
    analysis = analyze_source(path.read_text(encoding="utf-8"))
    assert analysis["ok"] is True and analysis["diagnostics"] == []
    program = agentscript.load(path)
    assert [agent["name"] for agent in analysis["summary"]["agents"]] == [
        agent.name for agent in program.agents
    ]
    assert [item["name"] for item in analysis["summary"]["imports"]] == [
        decl.name for decl in program.imports
    ]


def test_the_summary_of_the_react_example() -> None:
    analysis = analyze_source((ROOT / "examples" / "react.as").read_text(encoding="utf-8"))
    (agent,) = analysis["summary"]["agents"]
    assert agent["config"]["model"] == "Model" and agent["main"] is True
    (function,) = agent["functions"]
    assert [(use["source"], use["max"]) for use in function["uses"]] == [
        ("input.question", None),
        ("notes.summary", "3k"),
        ("notes.summary", "4k"),
    ]
    assert [sorted(item["output"]) for item in function["generates"]] == [
        ["action", "answer", "cited", "confident", "query", "thought"],
        ["answer", "cited", "confident"],
    ]
    assert function["calls"] == [{"kind": "tool", "target": "Search.run"}]


def test_source_that_checks_with_errors_names_each_place() -> None:
    source = 'import tool T from "ftp://x"\nagent A {\n    func f() {\n        return y\n    }\n}\n'
    analysis = analyze_source(source)
    assert analysis["ok"] is False
    codes = {(item["code"], item["path"]) for item in analysis["diagnostics"]}
    assert ("UNKNOWN_TOOL_SCHEME", "source:1:1") in codes
    assert any(path == "source:4:16" for _, path in codes)


def test_the_packaged_architect_program_checks_clean() -> None:
    assert agentscript.check(agentscript.load(ARCHITECT_PROGRAM)) == []


@pytest.mark.parametrize(
    ("output", "name"),
    [
        ("docs-helper.as", "DocsHelper"),
        ("out/my_first_agent.as", "My_first_agent"),
        ("2fast.as", "Agent2fast"),
        ("---.as", "GeneratedAgent"),
    ],
)
def test_the_agent_is_named_after_the_file(output: str, name: str) -> None:
    assert agent_name_for(Path(output)) == name
