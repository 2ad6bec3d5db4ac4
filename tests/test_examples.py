"""The example and tutorial programs: each one checks clean, runs offline, and keeps its goldens.

Every `.as` under examples/ and tutorials/ is a program a reader will copy, so it must parse and
check without diagnostics. Every program that is not only imported by another one must also run
with the scripted mock model (`NAME.responses.json`), the real host tools and the input shown in
its header's `agentscript run …` line, using up exactly the answers its script holds. Each run
works in a copy of the program's directory tree under a temporary directory, so nothing a
program writes (files, effect side stores, memory) lands in the repository.

Golden files under tests/fixtures/examples/ pin what a reader sees: the `--parse` JSON, the exact
prompt of the first generate, and the run's value. After an intended change, regenerate them with
`UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_examples.py` and review the diff.

Smaller guards live here too: programs whose header claims 0.1.0 syntax use no later form, a
header passes `--approve auto` (or `--approvals POLICY`) exactly when its program needs approvals, the compensate and MCP
tutorials do what their headers promise, and the complete programs in docs/language.md check
and run.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import quote

import pytest

import agentscript
from agentscript.app.composition import build_tools
from agentscript.app.run_view.page import write_run_pages
from agentscript.lang import ast
from agentscript.lang.errors import ParseError
from agentscript.lang.lexer import tokenize
from agentscript.lang.parser import parse_program
from agentscript.lang.tokens import TokenKind
from agentscript.learn.journal import Journal
from agentscript.providers.tools.effects import effects_in_trace
from agentscript.runtime.ports import Closeable, GenerateRequest
from agentscript.runtime.shapes import default_object
from browser import Browser
from timings import without_timings

ROOT = Path(__file__).resolve().parents[1]
PROGRAM_DIRS = ("examples", "tutorials")
GOLDEN_DIR = ROOT / "tests" / "fixtures" / "examples"
UPDATE_GOLDEN = os.environ.get("UPDATE_GOLDEN") == "1"
# Absolute paths in `--parse` output (file and memory imports) and in effect records depend on
# where the programs lie: the checkout, or the temporary copy a test runs them in.
ROOT_PLACEHOLDER = "<ROOT>"
# Not copied with a program's tree: what earlier runs in the checkout may have left behind.
NOT_COPIED = shutil.ignore_patterns(".agentscript", "__pycache__")
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
        found.extend(
            _relative(path)
            for path in (ROOT / directory).rglob("*.as")
            if not _in_generated_client(path)
        )
    return sorted(found)


def _in_generated_client(path: Path) -> bool:
    """A copy of a program inside a package `agentscript generate python` wrote: not an
    example of its own (tests/app/test_python_service_example.py keeps it current)."""
    from agentscript.app.python_client import HEADER

    return any(
        (folder / "client.py").is_file()
        and (folder / "client.py").read_text(encoding="utf-8").startswith(HEADER)
        for folder in path.parents
    )


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
# Programs with promises of their own, checked at the end of this file.
COMPENSATE = "tutorials/compensate/compensate.as"
MCP_TUTORIAL = "tutorials/mcp/mcp.as"
SELF_IMPROVE = "examples/self-improve.as"


@dataclass(frozen=True, slots=True)
class RunCommand:
    """The offline run a program's header documents: program, scripted answers and input."""

    program: str
    responses: str
    input: Any
    approve: str | None = None
    approvals: str | None = None


def _header(program: str) -> list[str]:
    """The leading `//` comment block, without the comment markers."""
    lines: list[str] = []
    for line in (ROOT / program).read_text(encoding="utf-8").splitlines():
        if not line.startswith("//"):
            break
        lines.append(line[2:].strip())
    return lines


def _parse_run_command(text: str) -> RunCommand:
    """`agentscript run FILE --mock RESPONSES [--approve MODE] [--approvals POLICY] [--trace T]
    [--input JSON]`."""
    words = shlex.split(text)
    assert words[:2] == ["agentscript", "run"], text
    options = dict(zip(words[3::2], words[4::2], strict=False))
    assert "--mock" in options, f"the run line must pass --mock RESPONSES: {text}"
    return RunCommand(
        program=words[2],
        responses=options["--mock"],
        input=json.loads(options.get("--input", "{}")),
        approve=options.get("--approve"),
        approvals=options.get("--approvals"),
    )


def run_command(program: str) -> RunCommand:
    """The run line of a program's header; a trailing `\\` continues it on the next line."""
    joined = "\n".join(_header(program)).replace("\\\n", " ")
    lines = [line for line in joined.splitlines() if line.startswith("agentscript run ")]
    assert len(lines) == 1, f"{program}: the header needs exactly one 'agentscript run' line"
    return _parse_run_command(lines[0])


# ----------------------------------------------------------------------------- running


def copy_program_tree(program: str, base: Path) -> Path:
    """Copy the directory of `program`, with everything below it, to the same place under
    `base` (which then stands for the checkout) and return the copied program's path."""
    source = (ROOT / program).parent
    shutil.copytree(source, base / source.relative_to(ROOT), ignore=NOT_COPIED)
    return base / program


def scripted_config(base: Path, program: str, **options: Any) -> agentscript.RunConfig:
    """The header's run as a RunConfig: scripted mock model, real tools, writes approved, and
    the header's approval policy, if it names one."""
    command = run_command(program)
    responses = base / command.responses
    approvals = str(base / command.approvals) if command.approvals else None
    return agentscript.RunConfig(
        model="mock", responses=str(responses), approve="auto", approvals=approvals, **options
    )


class _FirstPrompt(Exception):
    """Stops a dry run at its first generate, carrying the request it was about to send."""

    def __init__(self, request: GenerateRequest) -> None:
        super().__init__("first generate reached")
        self.request = request


def _stop_at_first_prompt(request: GenerateRequest) -> None:
    raise _FirstPrompt(request)


@dataclass(frozen=True, slots=True)
class ScriptedRun:
    """A finished run and `base`, the directory that stood for the checkout in its copy."""

    result: agentscript.RunResult
    base: Path


@dataclass(frozen=True, slots=True)
class FirstPrompt:
    """The request of a dry run's first generate (None if it has none), and its copy's base."""

    request: GenerateRequest | None
    base: Path


@dataclass(slots=True)
class ProgramRuns:
    """Each program's scripted run and first-prompt dry run, done once per module, each in a
    fresh copy of the program's tree."""

    factory: pytest.TempPathFactory
    runs: dict[str, ScriptedRun] = field(default_factory=dict)
    prompts: dict[str, FirstPrompt] = field(default_factory=dict)

    def scripted(self, program: str) -> ScriptedRun:
        if program not in self.runs:
            base = self.factory.mktemp("run")
            path = copy_program_tree(program, base)
            config = scripted_config(base, program)
            result = agentscript.run(agentscript.load(path), run_command(program).input, config)
            self.runs[program] = ScriptedRun(result, base)
        return self.runs[program]

    def first_prompt(self, program: str) -> FirstPrompt:
        if program not in self.prompts:
            base = self.factory.mktemp("dry-run")
            path = copy_program_tree(program, base)
            # A dry run answers tools with the mock tool; the prompt a reader sees is built
            # from the real tools' answers, so hand it the real ones.
            owned: list[Closeable] = []
            tools = build_tools(agentscript.RunConfig(approve="auto"), path.parent, owned)
            config = agentscript.RunConfig(
                model="dry-run", on_dry_run_prompt=_stop_at_first_prompt, tools=tools
            )
            request = None
            try:
                agentscript.run(agentscript.load(path), run_command(program).input, config)
            except agentscript.ExecutionError as error:
                # The runtime wraps what a model provider raises, so look at the cause.
                if not isinstance(error.__cause__, _FirstPrompt):
                    raise
                request = error.__cause__.request
            finally:
                for provider in owned:
                    provider.close()
            self.prompts[program] = FirstPrompt(request, base)
        return self.prompts[program]


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> ProgramRuns:
    return ProgramRuns(tmp_path_factory)


def events(trace: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The data of every `kind` event, including those nested in agent calls, in run order."""
    found: list[dict[str, Any]] = []
    for event in trace:
        if event["kind"] == kind:
            found.append(event["data"])
        if event["kind"] == "agent":
            found.extend(events(event["data"]["trace"], kind))
    return found


def generate_events(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return events(trace, "generate")


def scripted_answer_count(responses: Path) -> int:
    script = json.loads(responses.read_text(encoding="utf-8"))
    if isinstance(script, list):
        return len(script)
    return sum(len(answers) for answers in script.values())


def snapshot(directory: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and directory (None) below `directory`, by relative path, leaving
    out AgentScript's own state directory (the run journal is written on every run)."""
    return {
        relative: None if path.is_dir() else path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if not (relative := path.relative_to(directory).as_posix()).startswith(".agentscript")
    }


# ----------------------------------------------------------------------------- golden files


def machine_independent(text: str, *copies: Path) -> str:
    """`text` with the checkout location, and that of any copy of it, replaced by a placeholder
    (plain, resolved and URI-quoted)."""
    variants: set[str] = set()
    for root in (ROOT, *copies):
        for form in (str(root), str(root.absolute()), str(root.resolve())):
            variants.update((form, quote(form)))
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
    assert {COMPENSATE, MCP_TUTORIAL, SELF_IMPROVE} <= set(ENTRY_PROGRAMS)
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
def test_header_approves_writes_exactly_when_the_program_needs_approvals(
    program: str, programs: ProgramRuns
) -> None:
    approvals = events(programs.scripted(program).result.trace, "approval")
    deciders = {data.get("by") for data in approvals if data["decision"] != "pending"}
    command = run_command(program)
    wanted = "auto" if "auto" in deciders else None
    assert command.approve == wanted, "--approve auto iff a call needs the mode's approval"
    assert (command.approvals is not None) == ("policy" in deciders), (
        "--approvals iff the policy decided something"
    )


@pytest.mark.parametrize("program", ENTRY_PROGRAMS)
def test_program_runs_under_mock_and_uses_every_scripted_answer(
    program: str, programs: ProgramRuns
) -> None:
    run = programs.scripted(program)
    generates = generate_events(run.result.trace)
    assert [g for g in generates if g.get("ok") is False] == []
    used = sum(g["attempts"] for g in generates)
    assert used == scripted_answer_count(ROOT / run_command(program).responses)
    assert run.result.trace, "a run leaves a trace"
    value = machine_independent(render_json(run.result.value), run.base)
    assert_golden(program, ".value.json", value)


@pytest.mark.parametrize("program", ENTRY_PROGRAMS)
def test_parse_json_matches_golden(program: str) -> None:
    parsed = agentscript.load(ROOT / program).to_json()
    assert_golden(program, ".parse.json", machine_independent(render_json(parsed)))


@pytest.mark.parametrize("program", ENTRY_PROGRAMS)
def test_first_prompt_matches_golden(program: str, programs: ProgramRuns) -> None:
    prompt = programs.first_prompt(program)
    rendered = machine_independent(render_prompt(prompt.request), prompt.base)
    assert_golden(program, ".prompt.txt", rendered)


@pytest.mark.parametrize("program", ENTRY_PROGRAMS)
def test_dry_run_prompt_is_the_prompt_the_scripted_run_traced(
    program: str, programs: ProgramRuns
) -> None:
    request = programs.first_prompt(program).request
    generates = generate_events(programs.scripted(program).result.trace)
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


# ----------------------------------------------------------------------------- promises


def _run_copy(path: Path, config: agentscript.RunConfig, program: str) -> agentscript.RunResult:
    return agentscript.run(agentscript.load(path), run_command(program).input, config)


def _undo_command(
    trace_file: Path, workspace: Path, *options: str
) -> subprocess.CompletedProcess[str]:
    """`agentscript undo TRACE.json`, run as a separate process the way a reader would: from
    the program's directory, which is the run's workspace."""
    return subprocess.run(
        [sys.executable, "-m", "agentscript", "undo", str(trace_file), *options],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_compensate_rejected_writes_leave_the_workspace_as_found(tmp_path: Path) -> None:
    path = copy_program_tree(COMPENSATE, tmp_path / "copy")
    workspace = path.parent
    script = json.loads(path.with_name("compensate.responses.json").read_text(encoding="utf-8"))
    script["Publisher.verify"] = [{"ok": False, "problem": "Rejected by the test."}] * 2
    reject_all = tmp_path / "reject-all.json"
    reject_all.write_text(json.dumps(script), encoding="utf-8")
    before = snapshot(workspace)
    config = agentscript.RunConfig(model="mock", responses=str(reject_all), approve="auto")
    result = _run_copy(path, config, COMPENSATE)
    assert [entry["kept"] for entry in result.value.values()] == [False, False]
    undos = [e for e in events(result.trace, "tool") if e["method"] == "undo"]
    assert [(u["result"]["ok"], len(u["result"]["undone"])) for u in undos] == [(True, 1)] * 2
    assert snapshot(workspace) == before


def test_compensate_keeps_the_good_write_and_the_cli_undoes_it(tmp_path: Path) -> None:
    path = copy_program_tree(COMPENSATE, tmp_path / "copy")
    workspace = path.parent
    before = snapshot(workspace)
    result = _run_copy(path, scripted_config(tmp_path / "copy", COMPENSATE), COMPENSATE)
    assert result.value["changelog"]["kept"] is True
    assert result.value["announcement"]["kept"] is False
    after = snapshot(workspace)
    assert set(after) == set(before), "the rejected announcement.md is gone again"
    assert [name for name in before if after[name] != before[name]] == ["CHANGELOG.md"]
    assert after["CHANGELOG.md"].startswith(b"## 2.4\n")
    recorded = effects_in_trace(result.trace)
    assert [(e["action"], e["path"], e["existed"]) for e in recorded] == [
        ("write", "CHANGELOG.md", True),
        ("write", "announcement.md", False),
    ]

    trace_file = tmp_path / "run.json"
    trace_file.write_text(json.dumps(result.trace, ensure_ascii=False), encoding="utf-8")
    dry = _undo_command(trace_file, workspace, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would restore CHANGELOG.md" in dry.stdout
    assert snapshot(workspace) == after, "a dry run changes nothing"
    undo = _undo_command(trace_file, workspace)
    assert undo.returncode == 0, undo.stderr
    assert undo.stdout.splitlines()[0] == "restore CHANGELOG.md"
    assert snapshot(workspace) == before


def _import_file(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"tutorial_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mcp_tutorial_traces_the_real_servers_answers(programs: ProgramRuns) -> None:
    run = programs.scripted(MCP_TUTORIAL)
    server = _import_file(run.base / "tutorials" / "mcp" / "notes_server.py")
    calls = events(run.result.trace, "tool")
    assert [(call["method"], call["scheme"], call["uri"]) for call in calls] == [
        ("call", "mcp", "mcp://notes"),
        ("get", "mcp", "mcp://notes"),
    ]
    search, get = (call["result"] for call in calls)
    topic = run_command(MCP_TUTORIAL).input["topic"]
    hits = server.search(topic, 3).model_dump()
    assert search["structured"] == hits
    assert json.loads(search["text"]) == hits
    assert (get["ok"], get["isError"]) == (True, False)
    assert get["text"] == server.note_text(calls[1]["args"][0]["id"])
    answer = generate_events(run.result.trace)[-1]
    assert get["text"] in answer["context"]["finalUserMessage"], "the note is the context"


def test_mcp_tutorial_tools_lists_the_servers_tools() -> None:
    from agentscript.app.programs import tools

    (listing,) = tools(agentscript.load(ROOT / MCP_TUTORIAL))
    assert listing.get("problem") is None
    assert [(tool["name"], tool["risk"]) for tool in listing["tools"]] == [
        ("search", "read"),
        ("get", "read"),
    ]


def test_self_improve_lessons_persist_in_a_jsonl_memory(tmp_path: Path) -> None:
    path = copy_program_tree(SELF_IMPROVE, tmp_path)
    tasks = run_command(SELF_IMPROVE).input["tasks"]
    lesson = "Lead with the benefit to the user, not with the feature name."

    def run(product: str) -> tuple[int, str]:
        config = scripted_config(tmp_path, SELF_IMPROVE)  # the default, real memory
        result = agentscript.run(path, {"product": product, "tasks": tasks}, config)
        first = generate_events(result.trace)[0]["context"]["finalUserMessage"]
        return result.value["lessons"], first

    first_run, second_run, other_product = run("Tally"), run("Tally"), run("Ledger")
    assert first_run[0] == 1 and lesson not in first_run[1]
    assert second_run[0] == 2 and lesson in second_run[1], "the first run's lesson is read back"
    assert other_product[0] == 1 and lesson not in other_product[1], "lessons are per product"
    stored = (path.parent / ".agentscript" / "lessons.jsonl").read_text(encoding="utf-8")
    records = [json.loads(line)["record"] for line in stored.splitlines()]
    assert [(r["kind"], r["product"], r["text"]) for r in records] == [
        ("lesson", "Tally", lesson),
        ("lesson", "Tally", lesson),
        ("lesson", "Ledger", lesson),
    ]


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
def test_docs_program_checks_and_runs_under_mock(index: int, tmp_path: Path) -> None:
    # As if saved in an empty directory: whatever the snippet writes stays there.
    program = agentscript.load_source(DOC_PROGRAMS[index], tmp_path / f"snippet-{index}.as")
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


@pytest.mark.parametrize("program", ENTRY_PROGRAMS)
def test_replay_from_the_journal_gives_the_same_value_and_trace(
    programs: ProgramRuns, program: str
) -> None:
    """The journal is the cassette: replaying the scripted run answers every model, tool and
    memory call from it, with no model and no side effect, and tells the same story."""
    scripted = programs.scripted(program)
    journal = scripted.result.journal
    assert journal is not None
    assert journal.wait(30) == []
    path = scripted.base / program

    def files() -> dict[Path, bytes]:
        return {
            p: p.read_bytes()
            for p in path.parent.rglob("*")
            if p.is_file() and ".agentscript" not in p.parts
        }

    before = files()
    replayed = agentscript.run(
        agentscript.load(path),
        run_command(program).input,
        agentscript.RunConfig(replay=journal.run_id, approve="deny", journal=False),
    )
    assert replayed.value == scripted.result.value
    assert without_timings(replayed.trace) == without_timings(scripted.result.trace)
    assert files() == before


# ----------------------------------------------------------------------------- run pages


@pytest.fixture(scope="module")
def page_browser() -> Iterator[Browser]:
    with Browser.launch() as browser:
        yield browser


@pytest.mark.browser
@pytest.mark.parametrize("program", ENTRY_PROGRAMS)
def test_every_programs_run_opens_in_the_run_viewer(
    program: str, programs: ProgramRuns, page_browser: Browser
) -> None:
    run = programs.scripted(program)
    assert run.result.journal is not None
    assert run.result.journal.wait(30) == []
    journal = Journal.for_workspace((run.base / program).parent)
    try:
        (page, *_) = write_run_pages(journal, run.result.journal.run_id, None)
    finally:
        journal.close()
    page_browser.open(page.as_uri())
    assert page_browser.evaluate("document.body.dataset.ready") == "1"
    steps = page_browser.evaluate("document.querySelectorAll('.step').length")
    assert steps >= len(run.result.trace)
    assert page_browser.evaluate("document.getElementById('run-status').textContent") == "ok"


@pytest.mark.parametrize("program", ENTRY_PROGRAMS)
def test_no_scripted_run_makes_more_model_calls_than_its_static_bound(
    program: str, programs: ProgramRuns
) -> None:
    from agentscript.runtime.call_bound import max_model_calls

    run = programs.scripted(program)
    assert run.result.usage["calls"] <= max_model_calls(agentscript.load(ROOT / program))
