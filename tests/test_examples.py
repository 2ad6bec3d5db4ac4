"""The example and tutorial programs: each one checks clean, runs offline, and keeps its goldens.

Every `.as` under examples/ and tutorials/ is a program a reader will copy, so it must parse and
check without diagnostics. Every program that is not only imported by another one must also run
under the mock model with its scripted answers (`NAME.responses.json`) and the input shown in its
header's `agentscript run …` line, using up exactly the answers its script holds.

Golden files under tests/fixtures/examples/ pin what a reader sees: the `--parse` JSON, the exact
prompt of the first generate, and the run's value. After an intended change, regenerate them with
`UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_examples.py` and review the diff.

Two smaller guards live here too: programs whose header claims 0.1.0 syntax use no later form,
and the complete programs in docs/language.md check and run.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

import agentscript
from agentscript.lang import ast
from agentscript.lang.errors import ParseError
from agentscript.lang.lexer import tokenize
from agentscript.lang.parser import parse_program
from agentscript.lang.tokens import TokenKind
from agentscript.runtime.ports import GenerateRequest
from agentscript.runtime.shapes import default_object

ROOT = Path(__file__).resolve().parents[1]
PROGRAM_DIRS = ("examples", "tutorials")
GOLDEN_DIR = ROOT / "tests" / "fixtures" / "examples"
UPDATE_GOLDEN = os.environ.get("UPDATE_GOLDEN") == "1"
# Absolute paths in `--parse` output (file and memory imports) depend on the checkout location.
ROOT_PLACEHOLDER = "<ROOT>"
# The header line that says a program sticks to the 0.1.0 grammar (checked below).
SYNTAX_0_1_0 = "Syntax: 0.1.0 only"
# Symbols the 0.1.0 tokenizer knows; anything else (`->`, `+`, `>=`, `+=` …) is a later form.
SYMBOLS_0_1_0 = frozenset("{ } ( ) [ ] . , : = ! < * == !=".split())
GENERATE_OPTIONS_0_1_0 = frozenset({"input", "attempts", "limit", "debug"})


# ----------------------------------------------------------------------------- discovery


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _all_programs() -> list[str]:
    found: list[str] = []
    for directory in PROGRAM_DIRS:
        found.extend(_relative(path) for path in (ROOT / directory).rglob("*.as"))
    return sorted(found)


def _agent_import_targets(program: str) -> set[str]:
    """The programs that `program` pulls in with `import agent` (relative to the root)."""
    path = ROOT / program
    try:
        parsed = parse_program(path.read_text(encoding="utf-8"), str(path))
    except ParseError:
        return set()  # reported by test_program_checks_without_diagnostics
    targets: set[str] = set()
    for decl in parsed.imports:
        if decl.resource_kind == "agent":
            uri = decl.uri.removeprefix("file://")
            targets.add(_relative((path.parent / uri).resolve()))
    return targets


ALL_PROGRAMS = _all_programs()
# Files such as planner.as exist only to be imported: they are checked, not run on their own.
IMPORTED_ONLY = sorted(
    {target for program in ALL_PROGRAMS for target in _agent_import_targets(program)}
)
ENTRY_PROGRAMS = [program for program in ALL_PROGRAMS if program not in IMPORTED_ONLY]


@dataclass(frozen=True, slots=True)
class RunCommand:
    """The offline run a program's header documents: program, scripted answers and input."""

    program: str
    responses: str
    input: Any


def _header(program: str) -> list[str]:
    """The leading `//` comment block, without the comment markers."""
    lines: list[str] = []
    for line in (ROOT / program).read_text(encoding="utf-8").splitlines():
        if not line.startswith("//"):
            break
        lines.append(line[2:].strip())
    return lines


def _parse_run_command(text: str) -> RunCommand:
    """`agentscript run FILE --mock RESPONSES [--input JSON] [--trace pretty]`."""
    words = shlex.split(text)
    assert words[:2] == ["agentscript", "run"], text
    options = dict(zip(words[3::2], words[4::2], strict=False))
    assert "--mock" in options, f"the run line must pass --mock RESPONSES: {text}"
    return RunCommand(
        program=words[2],
        responses=options["--mock"],
        input=json.loads(options.get("--input", "{}")),
    )


def run_command(program: str) -> RunCommand:
    """The run line of a program's header; a trailing `\\` continues it on the next line."""
    joined = "\n".join(_header(program)).replace("\\\n", " ")
    lines = [line for line in joined.splitlines() if line.startswith("agentscript run ")]
    assert len(lines) == 1, f"{program}: the header needs exactly one 'agentscript run' line"
    return _parse_run_command(lines[0])


# ----------------------------------------------------------------------------- running


@functools.cache
def scripted_run(program: str) -> agentscript.RunResult:
    command = run_command(program)
    config = agentscript.RunConfig(model="mock", responses=str(ROOT / command.responses))
    return agentscript.run(agentscript.load(ROOT / program), command.input, config)


class _FirstPrompt(Exception):
    """Stops a dry run at its first generate, carrying the request it was about to send."""

    def __init__(self, request: GenerateRequest) -> None:
        super().__init__("first generate reached")
        self.request = request


def _stop_at_first_prompt(request: GenerateRequest) -> None:
    raise _FirstPrompt(request)


def first_prompt(program: str) -> GenerateRequest | None:
    """The request of the program's first generate, captured by a dry run (None if it has none)."""
    config = agentscript.RunConfig(model="dry-run", on_dry_run_prompt=_stop_at_first_prompt)
    try:
        agentscript.run(agentscript.load(ROOT / program), run_command(program).input, config)
    except _FirstPrompt as reached:
        return reached.request
    return None


def generate_events(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every generate event's data, including those nested in agent calls, in run order."""
    found: list[dict[str, Any]] = []
    for event in trace:
        if event["kind"] == "generate":
            found.append(event["data"])
        elif event["kind"] == "agent":
            found.extend(generate_events(event["data"]["trace"]))
    return found


def scripted_answer_count(responses: Path) -> int:
    script = json.loads(responses.read_text(encoding="utf-8"))
    if isinstance(script, list):
        return len(script)
    return sum(len(answers) for answers in script.values())


# ----------------------------------------------------------------------------- golden files


def machine_independent(text: str) -> str:
    """`text` with the checkout location replaced by a placeholder (plain and URI-quoted)."""
    variants = {str(ROOT), quote(str(ROOT)), str(ROOT.absolute()), quote(str(ROOT.absolute()))}
    for variant in sorted(variants, key=len, reverse=True):
        text = text.replace(variant, ROOT_PLACEHOLDER)
    return text


def golden_path(program: str, suffix: str) -> Path:
    return GOLDEN_DIR / (program.removesuffix(".as") + suffix)


def assert_golden(program: str, suffix: str, actual: str) -> None:
    path = golden_path(program, suffix)
    if UPDATE_GOLDEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.exists(), f"missing golden file {path}; run with UPDATE_GOLDEN=1 to create it"
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{path} differs; run with UPDATE_GOLDEN=1 if the change is intended"


def render_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def render_prompt(request: GenerateRequest | None) -> str:
    if request is None:
        return "(this program never generates)\n"
    return (
        f"=== first generate, in {request.agent_name}.{request.function_name} ===\n"
        f"--- system ---\n{request.built.system}\n"
        f"--- final user message ---\n{request.built.final_user_message}\n"
    )


GOLDEN_SUFFIXES = (".parse.json", ".prompt.txt", ".value.json")


# ----------------------------------------------------------------------------- tests


def test_discovery_finds_entry_and_imported_programs() -> None:
    assert "examples/hello.as" in ENTRY_PROGRAMS
    assert "tutorials/plan-execute/main.as" in ENTRY_PROGRAMS
    assert {
        "tutorials/plan-execute/planner.as",
        "tutorials/plan-execute/executor.as",
        "tutorials/plan-execute/verifier.as",
    } <= set(IMPORTED_ONLY)


@pytest.mark.parametrize("program", ALL_PROGRAMS)
def test_program_checks_without_diagnostics(program: str) -> None:
    diagnostics = agentscript.check(agentscript.load(ROOT / program))
    assert [d.format() for d in diagnostics] == []


@pytest.mark.parametrize("program", ALL_PROGRAMS)
def test_program_header_names_file_and_syntax(program: str) -> None:
    header = _header(program)
    assert header, f"{program} must start with a // header comment"
    assert header[0].startswith(f"{program}: "), "the first line names the file"
    assert any(line.startswith("Syntax: ") for line in header), "the header says which syntax"


@pytest.mark.parametrize("program", ENTRY_PROGRAMS)
def test_header_run_line_uses_the_programs_own_responses(program: str) -> None:
    command = run_command(program)
    assert command.program == program
    assert command.responses == program.removesuffix(".as") + ".responses.json"
    assert (ROOT / command.responses).is_file()


@pytest.mark.parametrize("program", ENTRY_PROGRAMS)
def test_program_runs_under_mock_and_uses_every_scripted_answer(program: str) -> None:
    result = scripted_run(program)
    generates = generate_events(result.trace)
    assert [g for g in generates if g.get("ok") is False] == []
    used = sum(g["attempts"] for g in generates)
    assert used == scripted_answer_count(ROOT / run_command(program).responses)
    assert result.trace, "a run leaves a trace"
    assert_golden(program, ".value.json", render_json(result.value))


@pytest.mark.parametrize("program", ENTRY_PROGRAMS)
def test_parse_json_matches_golden(program: str) -> None:
    parsed = agentscript.load(ROOT / program).to_json()
    assert_golden(program, ".parse.json", machine_independent(render_json(parsed)))


@pytest.mark.parametrize("program", ENTRY_PROGRAMS)
def test_first_prompt_matches_golden(program: str) -> None:
    request = first_prompt(program)
    assert_golden(program, ".prompt.txt", machine_independent(render_prompt(request)))


@pytest.mark.parametrize("program", ENTRY_PROGRAMS)
def test_dry_run_prompt_is_the_prompt_the_scripted_run_traced(program: str) -> None:
    request = first_prompt(program)
    generates = generate_events(scripted_run(program).trace)
    if request is None:
        assert generates == []
        return
    traced = generates[0]["context"]
    if generates[0]["attempts"] > 1:
        # The trace keeps the last attempt's prompt; only the system message is shared.
        assert traced["system"] == request.built.system
        return
    assert (traced["system"], traced["finalUserMessage"]) == (
        request.built.system,
        request.built.final_user_message,
    )


def test_every_responses_file_and_golden_file_belongs_to_a_program() -> None:
    entries = set(ENTRY_PROGRAMS)
    for directory in PROGRAM_DIRS:
        for responses in (ROOT / directory).rglob("*.responses.json"):
            program = _relative(responses).removesuffix(".responses.json") + ".as"
            assert program in entries, f"{responses} has no program to answer"
    expected = {golden_path(program, suffix) for program in entries for suffix in GOLDEN_SUFFIXES}
    present = {path for path in GOLDEN_DIR.rglob("*") if path.is_file()}
    if UPDATE_GOLDEN:
        for stale in present - expected:
            stale.unlink()
        return
    assert present == expected


def test_make_demo_runs_an_example_with_its_scripted_answers() -> None:
    recipe = (ROOT / "Makefile").read_text(encoding="utf-8").split("\ndemo:", 1)[1]
    line = next(row for row in recipe.splitlines() if "agentscript run" in row)
    command = _parse_run_command(line.strip().replace("$(BIN)/agentscript", "agentscript"))
    assert command.program in ENTRY_PROGRAMS
    assert command.responses == run_command(command.program).responses
    assert "--trace pretty" in line


# ----------------------------------------------------------------------------- docs snippets

DOCS = ROOT / "docs" / "language.md"


def _doc_programs() -> list[str]:
    """The complete programs of docs/language.md: its code blocks marked `agentscript`."""
    blocks = DOCS.read_text(encoding="utf-8").split("```agentscript\n")[1:]
    return [block.split("```", 1)[0] for block in blocks]


DOC_PROGRAMS = _doc_programs()


def _shape_default_input(program: ast.Program) -> Any:
    """An input that satisfies the entry's input contract: every field at its mock default."""
    entry = next((a for a in program.agents if a.is_main), program.agents[-1])
    main = entry.main_function()
    assert main is not None
    if not main.params or main.params[0].shape is None:
        return {}
    return default_object(main.params[0].shape)


def test_docs_have_program_snippets() -> None:
    assert len(DOC_PROGRAMS) >= 5


@pytest.mark.parametrize("index", range(len(DOC_PROGRAMS)))
def test_docs_program_checks_and_runs_under_mock(index: int) -> None:
    program = agentscript.load_source(DOC_PROGRAMS[index], DOCS.with_name(f"snippet-{index}.as"))
    assert [d.format() for d in agentscript.check(program)] == []
    # Running to the end without an error is the check: snippets are meant to be copied.
    agentscript.run(program, _shape_default_input(program), agentscript.RunConfig(model="mock"))


# ----------------------------------------------------------------------------- 0.1.0 subset


def _nodes(node: Any) -> list[Any]:
    """`node` and every syntax node below it."""
    found = [node]
    for name in getattr(node, "__dataclass_fields__", {}):
        value = getattr(node, name)
        children = value if isinstance(value, list) else [value]
        for child in children:
            if isinstance(child, ast.Node):
                found.extend(_nodes(child))
    return found


def _later_forms(program: str) -> list[str]:
    """What in `program`'s own text needs a grammar newer than 0.1.0."""
    path = ROOT / program
    source = path.read_text(encoding="utf-8")
    tokens = tokenize(source)
    problems: list[str] = []
    for token, after in itertools.pairwise(tokens):
        if token.kind is TokenKind.SYMBOL and token.value not in SYMBOLS_0_1_0:
            problems.append(f"symbol {token.value!r}")
        if token.is_word("else") and after.is_word("if"):
            problems.append("else if")
        if token.is_word("max") and after.kind is TokenKind.NUMBER:
            problems.append("max bound")
    for node in _nodes(parse_program(source, str(path))):
        if isinstance(node, ast.UseStmt) and node.label is not None:
            problems.append(f"use label {node.label!r}")
        if isinstance(node, ast.ShapeField):
            written = source[node.range.start_offset : node.range.end_offset]
            if node.implicit or ":" in written:
                problems.append(f"shape field {written!r}")
        if isinstance(node, ast.GenerateExpr):
            if node.return_shape is None:
                problems.append("generate without a shape")
            for prop in node.options.properties:
                if prop.key not in GENERATE_OPTIONS_0_1_0:
                    problems.append(f"generate option {prop.key}")
        if isinstance(node, ast.FuncDecl) and not (
            node.body and isinstance(node.body[-1], ast.ReturnStmt)
        ):
            problems.append(f"func {node.name} does not end with return")
    return problems


PROGRAMS_0_1_0 = [p for p in ALL_PROGRAMS if any(SYNTAX_0_1_0 in line for line in _header(p))]


def test_some_programs_claim_0_1_0_syntax() -> None:
    assert "examples/react.as" in PROGRAMS_0_1_0


@pytest.mark.parametrize("program", PROGRAMS_0_1_0)
def test_program_claiming_0_1_0_syntax_uses_no_later_form(program: str) -> None:
    assert _later_forms(program) == []
