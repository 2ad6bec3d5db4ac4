"""The `agentscript` command: the 0.1.0 flag form, the run/check/parse subcommands, their output
and exit codes, and errors reported as one line without a traceback (reference §6.1)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from agentscript import __version__
from agentscript.app import run as app_run
from agentscript.cli import actions, render
from agentscript.cli.app import cli
from agentscript.cli.input import PromptedInput, answer_value
from agentscript.cli.main import SUBCOMMANDS, main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "cli"
SCRIPT = Path(sys.executable).with_name("agentscript")


@pytest.fixture
def programs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the fixture programs, also the working directory, so nothing a run
    writes (traces, memory) lands in the repository."""
    target = tmp_path / "programs"
    shutil.copytree(FIXTURES, target)
    monkeypatch.chdir(target)
    return target


def cli_run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Call `main(argv)` in-process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def script(*argv: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """Run the installed `agentscript` script in a real process."""
    return subprocess.run(
        [str(SCRIPT), *argv], cwd=cwd, input=stdin, capture_output=True, text=True, timeout=60
    )


# ---------------------------------------------------------------------------- help and version


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_usage_with_subcommands_and_exits_zero(
    capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    code, out, err = cli_run(capsys, flag)
    assert code == 0
    assert out.startswith("Usage: agentscript")
    for command in ("run", "check", "parse", "repl", "--real-llm"):
        assert command in out
    assert err == ""


@pytest.mark.parametrize("flag", ["--version", "-v"])
def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str], flag: str) -> None:
    assert cli_run(capsys, flag) == (0, f"{__version__}\n", "")


def test_help_after_a_file_still_shows_usage(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli_run(capsys, "greet.as", "--help")
    assert code == 0
    assert "Usage: agentscript" in out


def test_options_without_a_file_print_usage_to_stderr_and_fail(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = cli_run(capsys, "--input", "{}")
    assert code == 1
    assert out == ""
    assert err.startswith("Usage: agentscript")


def test_dispatch_knows_every_click_subcommand() -> None:
    assert set(cli.list_commands(click.Context(cli))) == SUBCOMMANDS


# ---------------------------------------------------------------------------- parse


@pytest.mark.parametrize("argv", [["parse", "greet.as"], ["greet.as", "--parse"]])
def test_parse_prints_the_program_tree_as_json(
    programs: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = cli_run(capsys, *argv)
    assert (code, err) == (0, "")
    tree = json.loads(out)
    assert tree["kind"] == "Program"
    assert tree["imports"][0]["uri"] == "openai://gpt-4.1-mini"
    assert [agent["name"] for agent in tree["agents"]] == ["Greeter"]
    assert out.startswith('{\n  "kind": "Program",\n')


def test_parse_shows_imported_agents_merged_first(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = cli_run(capsys, "parse", "team.as")
    agents = json.loads(out)["agents"]
    assert [(agent["name"], agent["isMain"]) for agent in agents] == [
        ("Worker", False),
        ("Team", True),
    ]


def test_parse_error_names_file_line_and_column(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli_run(capsys, "parse", "broken.as")
    assert code == 1
    assert out == ""
    assert err == (
        "Expected configuration declaration or function declaration at "
        f"{programs / 'broken.as'}:6:1\n"
    )


# ---------------------------------------------------------------------------- check


def test_flag_form_check_prints_nothing_for_a_valid_file(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_run(capsys, "greet.as", "--check") == (0, "", "")


def test_check_subcommand_reports_each_valid_file(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_run(capsys, "check", "greet.as", "team.as") == (
        0,
        "",
        "greet.as: ok\nteam.as: ok\n",
    )


def test_check_subcommand_quiet_prints_nothing_on_success(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_run(capsys, "check", "--quiet", "greet.as") == (0, "", "")


@pytest.mark.parametrize("argv", [["check", "invalid.as"], ["invalid.as", "--check"]])
def test_check_prints_located_diagnostics_and_fails(
    programs: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = cli_run(capsys, *argv)
    assert (code, out) == (1, "")
    assert err == (
        f"ERROR UNKNOWN_IDENTIFIER at {programs / 'invalid.as'}:3:12: "
        "Unknown identifier 'missing_name'\n"
    )


def test_check_goes_on_after_a_broken_file(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli_run(capsys, "check", "broken.as", "missing.as", "greet.as")
    assert code == 1
    lines = err.splitlines()
    assert lines[0].startswith("Expected configuration declaration")
    assert lines[1] == f"Program file not found: {programs / 'missing.as'}"
    assert lines[2] == "greet.as: ok"


# ---------------------------------------------------------------------------- run


def test_flag_form_runs_with_the_mock_model(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli_run(capsys, "greet.as", "--input", '{"name": "Ada"}')
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert document["value"] == {"greeting": "", "name": "Ada"}
    assert [event["kind"] for event in document["trace"]] == ["use", "generate"]
    assert out.startswith('{\n  "value": {\n    "greeting": "",\n')


def test_run_subcommand_uses_the_real_model_by_default(
    programs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Any] = []

    def fake_run(program: Any, input_value: Any, config: Any) -> Any:
        seen.append(config)
        raise actions.CliError("stopped before calling a model")

    monkeypatch.setattr(app_run, "run", fake_run)
    code, _, err = cli_run(capsys, "run", "greet.as", "--input", '{"name": "Ada"}')
    assert (code, err) == (1, "stopped before calling a model\n")
    assert seen[0].model == "real"
    assert seen[0].debug_stream is sys.stderr


def test_flag_form_real_llm_selects_the_real_model(
    programs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Any] = []

    def fake_run(program: Any, input_value: Any, config: Any) -> Any:
        seen.append(config.model)
        raise actions.CliError("stopped")

    monkeypatch.setattr(app_run, "run", fake_run)
    cli_run(capsys, "greet.as", "--real-llm", "--input", '{"name": "Ada"}')
    cli_run(capsys, "greet.as", "--input", '{"name": "Ada"}')
    assert seen == ["real", "mock"]


def test_mock_file_answers_with_scripted_responses(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli_run(
        capsys, "run", "greet.as", "--mock", "answers.json", "--input", '{"name": "Ada"}'
    )
    assert code == 0
    assert json.loads(out)["value"] == {"greeting": "Hello, Ada!", "name": "Ada"}


def test_mock_without_a_file_answers_with_shape_defaults(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli_run(capsys, "run", "greet.as", "--mock", "--input", '{"name": "Ada"}')
    assert code == 0
    assert json.loads(out)["value"]["greeting"] == ""


def test_mock_before_the_file_explains_what_it_took(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli_run(capsys, "run", "--mock", "greet.as")
    assert code == 1
    assert err == "Missing argument 'FILE' (--mock took 'greet.as' as its answers file).\n"


def test_dry_run_prints_each_prompt_to_stderr(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli_run(capsys, "run", "greet.as", "--dry-run", "--input", '{"name": "Ada"}')
    assert code == 0
    assert json.loads(out)["value"] == {"greeting": "", "name": "Ada"}
    system = err.index("--- system ---\nYou are Greeter.\nrole: Greeter\n")
    user = err.index("--- user ---\nContext:\n[0] input.name:\nAda\nInstruction:\n")
    assert err.startswith("=== dry-run prompt 1: Greeter.__main (attempt 1) ===\n")
    assert system < user < err.index("=== end of prompt 1 ===")


def test_generate_debug_output_goes_to_stderr(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli_run(capsys, "debug.as")
    assert code == 0
    assert json.loads(out)["value"] == {"yes": True}
    assert "Say yes" in err
    assert "Say yes" not in out.split('"trace"')[0]


def test_positional_json_is_rejected(programs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = "Unexpected positional argument. Use --input to pass input JSON.\n"
    assert cli_run(capsys, "greet.as", '{"name": "Ada"}') == (1, "", expected)
    assert cli_run(capsys, "run", "greet.as", '{"name": "Ada"}') == (1, "", expected)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--input", "[1, 2]"], "--input must be a JSON object"),
        (["--input", '"text"'], "--input must be a JSON object"),
        (["--input-file", "list.json"], "--input-file must be a JSON object"),
    ],
)
def test_input_must_be_a_json_object(
    programs: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    (programs / "list.json").write_text("[1]")
    assert cli_run(capsys, "greet.as", *argv) == (1, "", message + "\n")


def test_invalid_input_json_is_one_line(programs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli_run(capsys, "run", "greet.as", "--mock", "--input", "{name: 1}")
    assert (code, out) == (1, "")
    assert err.startswith("--input is not valid JSON: ")
    assert err.count("\n") == 1


def test_input_file_supplies_the_input(programs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli_run(capsys, "greet.as", "--input-file", "input.json", "--quiet")
    assert code == 0
    assert json.loads(out) == {"greeting": "", "name": "Grace"}


def test_missing_input_file_is_reported(programs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli_run(capsys, "greet.as", "--input-file", "nowhere.json")
    assert code == 1
    assert err == "--input-file not found: nowhere.json\n"


def test_trace_file_receives_the_trace(programs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli_run(
        capsys, "greet.as", "--input", '{"name": "Ada"}', "--trace", "trace.json"
    )
    assert code == 0
    assert json.loads(out) == {
        "value": {"greeting": "", "name": "Ada"},
        "trace": {"file": "trace.json"},
    }
    text = (programs / "trace.json").read_text()
    assert text.endswith("]\n")
    assert [event["kind"] for event in json.loads(text)] == ["use", "generate"]


def test_trace_pretty_prints_plain_lines_after_the_json(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli_run(capsys, "greet.as", "--input", '{"name": "Ada"}', "--trace", "pretty")
    assert code == 0
    document, pretty = out.rsplit("}\n", 1)
    assert json.loads(document + "}")["value"]["name"] == "Ada"
    assert pretty == "- use input.name\n- generate Greet the person by name\n"


def test_quiet_prints_only_the_value(programs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli_run(capsys, "greet.as", "--input", '{"name": "Ada"}', "--quiet")
    assert code == 0
    assert out == '{\n  "greeting": "",\n  "name": "Ada"\n}\n'


def test_verbose_shows_loops_and_imported_agent_calls(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli_run(capsys, "team.as", "--input", '{"tasks": ["a", "b"]}', "--verbose")
    assert code == 0
    pretty = out[out.index("\n- ") + 1 :]
    assert pretty.splitlines() == [
        "- for task[0]",
        "- agent Worker.__main",
        "  - use input.task",
        "  - use Notes",
        "  - generate Complete the task",
        "- for task[1]",
        "- agent Worker.__main",
        "  - use input.task",
        "  - use Notes",
        "  - generate Complete the task",
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["greet.as", "--quiet", "--verbose"],
        ["greet.as", "--trace", "pretty", "--quiet"],
        ["run", "greet.as", "--mock", "--quiet", "--verbose"],
    ],
)
def test_quiet_conflicts_with_verbose_trace_output(
    programs: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    expected = "Use either --quiet or verbose trace output, not both\n"
    assert cli_run(capsys, *argv) == (1, "", expected)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["greet.as", "--parse", "--check"], "Use either --parse or --check, not both"),
        (
            ["greet.as", "--input", "{}", "--input-file", "input.json"],
            "Use either --input or --input-file, not both",
        ),
        (
            ["run", "greet.as", "--input", "{}", "--input-file", "input.json"],
            "Use either --input or --input-file, not both",
        ),
        (["run", "greet.as", "--mock", "--dry-run"], "Use either --mock or --dry-run, not both"),
        (["greet.as", "--x"], "Unknown option '--x'"),
        (["run", "greet.as", "--x"], "Unknown option '--x'"),
        (["greet.as", "--agent"], "Expected value after --agent"),
        (["run", "greet.as", "--agent"], "Expected value after --agent"),
        (["check"], "Missing argument 'FILE...'."),
    ],
)
def test_usage_errors_are_one_line_with_exit_code_1(
    programs: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert cli_run(capsys, *argv) == (1, "", message + "\n")


def test_relative_file_import_resolves_next_to_the_importing_file(
    programs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(programs / "data")
    code, out, err = cli_run(capsys, "../team.as", "--input", '{"tasks": ["x"]}', "--quiet")
    assert (code, err) == (0, "")
    assert json.loads(out) == {"results": [{"task": "x", "done": True, "owner": "ops-team"}]}


def test_relative_memory_import_resolves_next_to_the_script(
    programs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(programs / "lib")
    code, out, _ = cli_run(capsys, "../memory.as", "--input", '{"note": "hi"}')
    assert code == 0
    trace = json.loads(out)["trace"]
    assert {event["data"]["uri"] for event in trace} == {f"file://{programs / 'journal.jsonl'}"}


def test_imported_agent_is_called(programs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli_run(capsys, "run", "team.as", "--mock", "--input", '{"tasks": ["a"]}')
    assert code == 0
    calls = [event for event in json.loads(out)["trace"] if event["kind"] == "agent"]
    assert [(call["data"]["agent"], call["data"]["args"]) for call in calls] == [
        ("Worker", [{"task": "a"}])
    ]


@pytest.mark.parametrize(
    ("argv", "value"),
    [
        (["--agent", "Second"], "second"),
        (["--function", "other"], "first.other"),
        ([], "first"),
    ],
)
def test_agent_and_function_choose_the_entry(
    programs: Path, capsys: pytest.CaptureFixture[str], argv: list[str], value: str
) -> None:
    code, out, _ = cli_run(capsys, "entries.as", "--quiet", *argv)
    assert (code, json.loads(out)) == (0, value)


def test_unknown_agent_is_a_one_line_error(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_run(capsys, "entries.as", "--agent", "Nobody") == (
        1,
        "",
        "Unknown agent 'Nobody'\n",
    )


def test_failed_run_reports_the_location_and_writes_the_partial_trace(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli_run(capsys, "fails.as", "--trace", "partial.json")
    assert (code, out) == (1, "")
    assert err == f"List index 5 is out of range at {programs / 'fails.as'}:8:12\n"
    trace = json.loads((programs / "partial.json").read_text())
    assert [event["kind"] for event in trace] == ["for", "use", "for", "use", "loop_end"]


def test_failed_verbose_run_shows_how_far_it_got(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli_run(capsys, "fails.as", "--verbose")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "- for item[0]",
        "- use item",
        "- for item[1]",
        "- use item",
        f"List index 5 is out of range at {programs / 'fails.as'}:8:12",
    ]


def test_semantic_errors_stop_a_run_before_it_starts(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli_run(capsys, "invalid.as", "--trace", "never.json")
    assert (code, out) == (1, "")
    assert err.startswith("ERROR UNKNOWN_IDENTIFIER at ")
    assert not (programs / "never.json").exists()


def test_missing_input_without_a_terminal_is_an_error(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli_run(capsys, "greet.as")
    assert code == 1
    assert err.startswith("Missing input 'input.name' and no interactive input provider")


def test_missing_input_is_asked_for_at_a_terminal(
    programs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    questions: list[str] = []

    def answer(question: str) -> str:
        questions.append(question)
        return "Lin"

    monkeypatch.setattr(actions, "at_terminal", lambda: True)
    monkeypatch.setattr("builtins.input", answer)
    code, out, _ = cli_run(capsys, "greet.as", "--quiet")
    assert code == 0
    assert questions == ["input.name: "]
    assert json.loads(out) == {"greeting": "", "name": "Lin"}


@pytest.mark.parametrize(
    ("typed", "value"),
    [("42", 42), ("true", True), ('["a"]', ["a"]), ("plain words", "plain words"), ("  ", "")],
)
def test_typed_answers_are_json_when_they_parse(typed: str, value: Any) -> None:
    assert answer_value(typed) == value
    assert PromptedInput(lambda prompt: typed).read("x", "input.x") == value


# ---------------------------------------------------------------------------- rendering


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_pretty_trace_at_a_terminal_is_a_tree() -> None:
    trace = [
        {"kind": "for", "data": {"item": "t", "index": 0, "value": "a"}},
        {
            "kind": "agent",
            "data": {
                "agent": "Worker",
                "function": "__main",
                "trace": [{"kind": "use", "data": {"source": "input.task [0]"}}],
            },
        },
    ]
    stream = _Terminal()
    render.print_trace(trace, stream)
    text = stream.getvalue()
    assert "├── " in text
    assert "└── " in text
    assert "Worker.__main" in text
    assert "input.task [0]" in text  # user text is not read as rich markup
    assert "- for" not in text


def test_pretty_trace_in_a_pipe_is_plain_lines() -> None:
    stream = io.StringIO()
    render.print_trace([], stream)
    assert stream.getvalue() == "(empty trace)\n"


# ---------------------------------------------------------------------------- click runner


def test_click_runner_run_subcommand_prints_the_value(programs: Path) -> None:
    result = CliRunner().invoke(
        cli, ["run", str(programs / "greet.as"), "--mock", "--quiet", "--input", '{"name": "A"}']
    )
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"greeting": "", "name": "A"}


def test_click_runner_usage_errors_exit_1_with_the_plain_message() -> None:
    result = CliRunner().invoke(cli, ["run", "x.as", "--nope"])
    assert result.exit_code == 1
    assert result.stderr == "Unknown option '--nope'\n"


def test_click_runner_check_failure_exits_1() -> None:
    result = CliRunner().invoke(cli, ["check", str(FIXTURES / "invalid.as")])
    assert result.exit_code == 1
    assert "UNKNOWN_IDENTIFIER" in result.stderr


# ---------------------------------------------------------------------------- real processes


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["missing.as"], "Program file not found: "),
        (["broken.as"], "Expected configuration declaration or function declaration at "),
        (["greet.as", "--input", "{"], "--input is not valid JSON: "),
        (["entries.as", "--function", "nope"], "Unknown function 'nope'"),
        (["run", "greet.as", "--mock", "nowhere.json"], "Scripted responses not found: "),
        (["run", "greet.as", "--input", "{}", "--trace-file"], "Expected value after --trace-file"),
    ],
)
def test_errors_exit_1_with_one_line_and_no_traceback(
    programs: Path, argv: list[str], message: str
) -> None:
    result = script(*argv, cwd=programs)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith(message)
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_script_runs_a_program_and_exits_zero(programs: Path) -> None:
    result = script("team.as", "--input", '{"tasks": ["a"]}', "--quiet", cwd=programs)
    assert (result.returncode, result.stderr) == (0, "")
    assert json.loads(result.stdout)["results"][0]["owner"] == "ops-team"


def test_python_dash_m_is_the_same_command(programs: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "agentscript", "check", "invalid.as"],
        cwd=programs,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "UNKNOWN_IDENTIFIER" in result.stderr


def test_no_arguments_start_the_repl(programs: Path) -> None:
    result = script(cwd=programs, stdin=":agents\n")
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        "AgentScript REPL",
        "Paste one complete agent or use :help.",
        "(no agents)",
    ]
