"""The REPL (reference §6.2) driven by piped lines: pasting agents, the colon commands, input
asked from the following lines, and going on after an error (unlike 0.1.0, which exited)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentscript.cli.repl import BANNER, run_lines

FIXTURES = Path(__file__).parents[1] / "fixtures" / "cli"

GREETER = """\
agent Greeter {
  model Model
  role "Greeter"
  description "Says hello"
  main func(input { name string }) {
    reply = generate({ input: "Say hello {politely}" }) {
      return { text string }
    }
    return { name: input.name, text: reply.text }
  }
}"""

MODEL_IMPORT = 'import llm Model from "openai://gpt-4.1-mini"'


def repl(*lines: str) -> tuple[int, str, str]:
    """Feed `lines` to a REPL: (exit code, stdout without the banner, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = run_lines(io.StringIO("".join(line + "\n" for line in lines)), out, err)
    text = out.getvalue()
    assert text.startswith(BANNER + "\n")
    return code, text[len(BANNER) + 1 :], err.getvalue()


def last_json(out: str) -> Any:
    """The value `:run` printed last (a JSON text over one or more lines at the end)."""
    lines = out.splitlines()
    for start in range(len(lines) - 1, -1, -1):
        try:
            return json.loads("\n".join(lines[start:]))
        except ValueError:
            continue
    raise AssertionError(f"no JSON at the end of {out!r}")


def without_usage(err: str) -> str:
    """stderr without the usage lines `:run` prints."""
    return "".join(line for line in err.splitlines(True) if not line.startswith("usage: "))


def agent(name: str, value: str, main: bool = False) -> str:
    prefix = "main agent" if main else "agent"
    return f'{prefix} {name} {{\n  main func() {{\n    return "{value}"\n  }}\n}}'


def test_pasting_an_agent_adds_it_and_pasting_again_replaces_it() -> None:
    code, out, err = repl(MODEL_IMPORT, GREETER, GREETER.replace("Says hello", "Greets"), ":agents")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "imported",
        "added agent Greeter",
        "replaced agent Greeter",
        "  Greeter",
    ]


def test_check_prints_ok_or_the_diagnostics() -> None:
    _, out, err = repl(MODEL_IMPORT, GREETER, ":check")
    assert out.splitlines()[-1] == "ok"
    assert without_usage(err) == ""
    _, out, err = repl(GREETER, ":check")
    assert "ok" not in out.splitlines()
    assert err == "ERROR UNKNOWN_MODEL at 2:9: Unknown model import 'Model'\n"


def test_run_prints_the_value_and_usage_and_asks_for_missing_input() -> None:
    _, out, err = repl(MODEL_IMPORT, GREETER, ":run", "Ada", ":trace pretty")
    assert err.startswith("usage: 1 model call, ") and err.endswith("(:trace for the rest)\n")
    body = out.split("added agent Greeter\n", 1)[1]
    end = body.index("\n}\n") + 3
    result, pretty = json.loads(body[:end]), body[end:]
    assert result == {"name": "Ada", "text": ""}
    assert pretty == "- input input.name\n- generate Say hello {politely}\n"


def test_run_takes_input_json_and_trace_prints_the_last_trace() -> None:
    _, out, _ = repl(MODEL_IMPORT, GREETER, ':run {"name": "Bo"}', ":trace")
    first = out.index("{")
    value = out[first : out.index("\n}\n") + 2]
    trace_document = out[out.index("\n}\n") + 3 :]
    assert json.loads(value)["name"] == "Bo"
    assert [event["kind"] for event in json.loads(trace_document)] == ["generate"]


def test_trace_before_any_run_says_so() -> None:
    assert repl(":trace") == (0, "(no trace yet; use :run)\n", "")


def test_errors_are_printed_and_the_session_goes_on() -> None:
    code, out, err = repl(
        "agent Broken {",
        "  main func() { return { ok: true } }",
        "  oops",
        "}",
        ":bogus",
        "just words",
        ":run [1]",
        ":run",
        agent("Fine", "fine"),
        ":run",
    )
    assert code == 0
    assert without_usage(err).splitlines() == [
        "Expected configuration declaration or function declaration at 3:3",
        "Unknown command ':bogus'. Use :help.",
        "REPL accepts one complete agent declaration at a time. "
        "Not an expression either: Expected ')'",
        ":run input must be a JSON object",
        "No agents to run. Paste an agent or use :load.",
    ]
    assert last_json(out) == "fine"


def test_a_failed_run_keeps_its_partial_trace() -> None:
    failing = 'agent Fails {\n  main func() {\n    use "step"\n    return [1][3]\n  }\n}'
    _, out, err = repl(failing, ":run", ":trace pretty")
    assert err == "List index 3 is out of range at 4:12\n"
    assert out.splitlines()[-1] == '- use "step"'


def test_a_new_main_agent_demotes_the_previous_one() -> None:
    _, out, _ = repl(agent("One", "1", main=True), agent("Two", "2", main=True), ":agents", ":run")
    assert out.splitlines()[2:4] == ["  One", "* Two"]
    assert last_json(out) == "2"


def test_an_anonymous_main_agent_keeps_its_name_when_demoted() -> None:
    anonymous = 'main agent {\n  main func() { return "anon" }\n}'
    _, out, err = repl(anonymous, agent("Other", "other", main=True), ":check", ":agents")
    assert without_usage(err) == ""
    assert out.splitlines() == [
        "added agent __main_agent",
        "added agent Other",
        "ok",
        "  __main_agent",
        "* Other",
    ]


def test_main_command_chooses_the_entry_agent() -> None:
    _, out, err = repl(
        agent("One", "1"), agent("Two", "2"), ":main One", ":main", ":main Three", ":run"
    )
    assert without_usage(err).splitlines() == ["Usage: :main <AgentName>", "Unknown agent 'Three'"]
    assert "main agent One" in out.splitlines()
    assert last_json(out) == "1"


def test_show_prints_the_session_program_and_parse_its_tree() -> None:
    _, out, _ = repl(":show", MODEL_IMPORT, GREETER, ":show")
    assert out.startswith("(empty program)\nimported\nadded agent Greeter\n")
    assert out.endswith(f"{MODEL_IMPORT}\n\n{GREETER}\n")
    _, out, _ = repl(MODEL_IMPORT, GREETER, ":parse")
    tree = json.loads(out[out.index("{") :])
    assert [a["name"] for a in tree["agents"]] == ["Greeter"]


def test_import_command_validates_the_statement() -> None:
    _, out, err = repl(
        ':import llm Model from "openai://x"',
        ":import",
        ":import nonsense",
        ':import agent W from "./does-not-exist.as"',
        ":show",
    )
    assert out.splitlines() == ["imported", 'import llm Model from "openai://x"']
    lines = err.splitlines()
    assert lines[0] == "Usage: :import <import statement>"
    assert lines[1].startswith("Expected import resource kind")
    assert lines[2].startswith("Failed to load agent import 'W' from ")


def test_braces_inside_strings_and_comments_do_not_end_a_paste() -> None:
    tricky = 'agent Tricky {\n  // a comment with a } brace\n  main func() { return "}}" }\n}'
    _, out, err = repl(tricky, ":run")
    assert without_usage(err) == ""
    assert out.startswith("added agent Tricky\n")
    assert last_json(out) == "}}"


def test_exit_and_quit_stop_reading() -> None:
    assert repl(":exit", ":agents") == (0, "", "")
    assert repl(":quit", ":agents") == (0, "", "")


def test_reset_forgets_everything() -> None:
    _, out, _ = repl(MODEL_IMPORT, GREETER, ":run", "Ada", ":reset", ":agents", ":show", ":trace")
    assert out.splitlines()[-4:] == [
        "reset",
        "(no agents)",
        "(empty program)",
        "(no trace yet; use :run)",
    ]


def test_input_ending_inside_an_agent_is_reported() -> None:
    assert repl("agent Half {") == (0, "", "Discarded an incomplete agent declaration.\n")


def test_a_command_ends_an_unfinished_paste() -> None:
    _, out, err = repl("agent Half {", "  main func() {", ":agents", agent("Whole", "w"), ":agents")
    assert err == "Discarded an incomplete agent declaration.\n"
    assert out.splitlines() == ["(no agents)", "added agent Whole", "  Whole"]


def test_help_lists_the_commands() -> None:
    _, out, _ = repl(":help")
    for command in (":import", ":load", ":agents", ":main", ":show", ":parse", ":check"):
        assert f"  {command} " in out
    for command in (":run", ":trace", ":reset", ":help", ":exit", ":quit"):
        assert command in out


@pytest.fixture
def programs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "programs"
    shutil.copytree(FIXTURES, target)
    monkeypatch.chdir(tmp_path)
    return target


def test_load_takes_imports_and_agents_and_resolves_them_next_to_the_file(
    programs: Path,
) -> None:
    _, out, err = repl(
        ":load programs/team.as", ":agents", ':run {"tasks": ["x"]}', ":load", ":load nowhere.as"
    )
    assert out.splitlines()[:3] == ["loaded 1 agent(s)", "* Team", "{"]
    document = out[out.index("{") : out.rindex("}") + 1]
    value = json.loads(document)
    assert value == {"results": [{"task": "x", "done": True, "owner": "ops-team"}]}
    assert without_usage(err).splitlines() == [
        "Usage: :load <file.as>",
        f"Program file not found: {programs.parent / 'nowhere.as'}",
    ]


def test_relative_imports_resolve_against_the_working_directory(programs: Path) -> None:
    _, out, err = repl(
        ':import agent Worker from "./programs/lib/worker.as"',
        "main agent Boss {",
        "  main func() {",
        '    return Worker({ task: "t" })',
        "  }",
        "}",
        ":run",
    )
    assert without_usage(err) == ""
    assert last_json(out)["owner"] == "ops-team"


def test_repl_subcommand_reads_piped_stdin(programs: Path) -> None:
    result = subprocess.run(
        [str(Path(sys.executable).with_name("agentscript")), "repl"],
        input=f"{agent('Piped', 'through a pipe')}\n:run\n:nope\n:agents\n",
        cwd=programs,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0
    assert without_usage(result.stderr) == "Unknown command ':nope'. Use :help.\n"
    assert "added agent Piped" in result.stdout
    assert '"through a pipe"\n' in result.stdout
    assert result.stdout.endswith("  Piped\n")
