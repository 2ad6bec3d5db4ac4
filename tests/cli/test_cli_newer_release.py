"""The command line as the original's newer releases have it, for workspaces that declare one
(package.json: "@rong/agentscript": "^0.1.22"), and as 0.1.0 had it for every other program:
what `--mock` mocks, which model the flag form calls, bare `--trace`, `--version`, and the
`sh://read-range` tool."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from agentscript.cli.main import main
from openai_wire import OpenAiWireServer, serving

ROOT = Path(__file__).parents[2]

PROBE = """\
import tool File from "file://workspace"
import tool Architect from "host://architect"
import memory Journal from "file://journal.jsonl"

main agent Probe {
  main func() {
    text = File.read({ path: "notes.txt" })
    Journal.add({ text: "seen" })
    checked = Architect.validateSpec({ spec: "not a spec" })
    return { text: text, checked: checked }
  }
}
"""

ASKER = """\
import llm Model from "openai://local-model"

main agent Asker {
  model Model
  role "Analyst"
  description "Answers briefly."
  main func(input { question string }) {
    use input.question
    return generate({ input: "Answer the question." }) -> { answer string }
  }
}
"""

READER = """\
import tool Lines from "sh://read-range"

main agent Reader {
  main func() {
    return Lines.run({ path: "notes.txt", start: 2, max: 2 })
  }
}
"""

# What the real host:// tool answers to a spec that is not an object.
NOT_A_SPEC = {"ok": False, "code": "invalid_input", "message": "spec must be a JSON object"}


def declare_newer(workspace: Path) -> None:
    manifest = {"name": "agents", "dependencies": {"@rong/agentscript": "^0.1.22"}}
    (workspace / "package.json").write_text(json.dumps(manifest), encoding="utf-8")


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding the programs, also the working directory (the flag form's root)."""
    (tmp_path / "probe.as").write_text(PROBE, encoding="utf-8")
    (tmp_path / "asker.as").write_text(ASKER, encoding="utf-8")
    (tmp_path / "reader.as").write_text(READER, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("alpha", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def quiet_value(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run_cli(capsys, *argv, "--quiet")
    assert code == 0, err
    return json.loads(out)


# ---------------------------------------------------------------------------- --mock


@pytest.mark.parametrize("form", [["run", "probe.as"], ["probe.as"]])
def test_newer_mock_mocks_tools_and_memory_and_runs_host_tools(
    workspace: Path, capsys: pytest.CaptureFixture[str], form: list[str]
) -> None:
    declare_newer(workspace)
    value = quiet_value(capsys, *form, "--mock")
    assert value == {
        "text": {"summary": "File.read", "source": "file://workspace", "args": [{"path": "notes.txt"}]},
        "checked": NOT_A_SPEC,
    }  # fmt: skip
    assert not (workspace / "journal.jsonl").exists()


@pytest.mark.parametrize("form", [["run", "probe.as"], ["probe.as"]])
def test_0_1_0_mock_mocks_only_the_model(
    workspace: Path, capsys: pytest.CaptureFixture[str], form: list[str]
) -> None:
    assert quiet_value(capsys, *form, "--mock") == {"text": "alpha", "checked": NOT_A_SPEC}
    assert '"seen"' in (workspace / "journal.jsonl").read_text(encoding="utf-8")


def test_mock_tools_still_mocks_every_tool_in_a_newer_workspace(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    declare_newer(workspace)
    value = quiet_value(capsys, "run", "probe.as", "--mock", "--mock-tools")
    assert value["checked"]["summary"] == "Architect.validateSpec"


# ---------------------------------------------------------------------------- the flag form


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    with serving(lambda model, body: json.dumps({"answer": f"from {model}"})) as running:
        for name, value in running.environ().items():
            monkeypatch.setenv(name, value)
        yield running


def test_newer_flag_form_calls_the_real_model_unless_mock(
    workspace: Path, server: OpenAiWireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    declare_newer(workspace)
    question = ["asker.as", "--input", '{"question": "why?"}']
    assert quiet_value(capsys, *question) == {"answer": "from local-model"}
    assert len(server.requests) == 1
    assert quiet_value(capsys, *question, "--mock") == {"answer": ""}
    assert len(server.requests) == 1


def test_0_1_0_flag_form_answers_with_the_mock_unless_asked(
    workspace: Path, server: OpenAiWireServer, capsys: pytest.CaptureFixture[str]
) -> None:
    question = ["asker.as", "--input", '{"question": "why?"}']
    assert quiet_value(capsys, *question) == {"answer": ""}
    assert server.requests == []
    assert quiet_value(capsys, *question, "--real-llm") == {"answer": "from local-model"}
    assert len(server.requests) == 1


# ---------------------------------------------------------------------------- --trace, --version


@pytest.mark.parametrize("form", [["reader.as"], ["run", "reader.as", "--mock"]])
def test_bare_trace_prints_the_pretty_trace(
    workspace: Path, capsys: pytest.CaptureFixture[str], form: list[str]
) -> None:
    bare = run_cli(capsys, *form, "--trace")
    named = run_cli(capsys, *form, "--trace", "pretty")
    assert bare[0] == named[0] == 0
    assert "tool Lines.run" in bare[1]
    assert _without_durations(bare[1]) == _without_durations(named[1])


def _without_durations(text: str) -> list[str]:
    return [line.split("  [")[0] for line in text.splitlines() if "duration_ms" not in line]


def test_trace_followed_by_another_flag_is_bare_and_a_value_is_a_file(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "probe.as", "--trace", "--quiet")
    assert (code, err) == (1, "Use either --quiet or verbose trace output, not both\n")
    assert run_cli(capsys, "probe.as", "--mock", "--trace", "trace.json")[0] == 0
    assert json.loads((workspace / "trace.json").read_text(encoding="utf-8"))[0]["kind"] == "tool"
    code, _, err = run_cli(capsys, "run", "--trace", "probe.as")
    assert (code, err) == (
        1,
        "Missing argument 'FILE' (--trace took 'probe.as' as its trace file).\n",
    )


def test_version_prints_the_version_this_package_is_released_as(
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert run_cli(capsys, "--version") == (0, f"{project['version']}\n", "")


# ---------------------------------------------------------------------------- sh://read-range


def test_read_range_checks_clean_is_listed_and_reads_lines(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "notes.txt").write_text("one\ntwo\nthree\nfour\n", encoding="utf-8")
    assert run_cli(capsys, "check", "reader.as") == (0, "", "reader.as: ok\n")
    assert run_cli(capsys, "tools", "reader.as", "--json")[1:] == (
        json.dumps([{"name": "Lines", "uri": "sh://read-range", "scheme": "sh"}], indent=2) + "\n",
        "",
    )
    assert quiet_value(capsys, "run", "reader.as") == {
        "ok": True,
        "text": "two\nthree",
        "start": 2,
        "end": 3,
    }


def test_newer_mock_in_the_optimizer_mode_mocks_the_optimizer_programs_tools(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert quiet_value(capsys, "probe.as", "reader.as", "--mock")["text"] == "alpha"
    declare_newer(workspace)
    value = quiet_value(capsys, "probe.as", "reader.as", "--mock")
    assert value == {
        "text": {"summary": "File.read", "source": "file://workspace", "args": [{"path": "notes.txt"}]},
        "checked": NOT_A_SPEC,
    }  # fmt: skip
