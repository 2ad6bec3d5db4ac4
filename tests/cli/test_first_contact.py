"""First contact and daily use: defaults that serve the user and errors that say what to do.

Learning only from live models, one journal rule for `run` and `runs`, `check` naming unknown
schemes and providers, `models` exit codes, shells refused before anyone is asked, replay misses
that say what changed, the original's later flag forms, and the REPL's expressions and models.
"""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.app.configuration import RunConfig, learns_from
from agentscript.cli.main import main
from agentscript.cli.repl import BANNER, run_lines
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall
from openai_wire import serving

GREET = """import llm Model from "openai://gpt-4.1-mini"

main agent Greeter {
  model Model
  role "greeter"
  description "Greets."
  main func(input { name string }) {
    use input.name
    return generate({ input: "Greet." }) -> { greeting string }
  }
}
"""


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git checkout holding a program in a subfolder; the shell is at the checkout root."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "agents").mkdir()
    (root / "agents" / "greet.as").write_text(GREET)
    monkeypatch.chdir(root)
    return root


def memory_entries(database: Path) -> int:
    if not database.exists():
        return 0
    with sqlite3.connect(database) as connection:
        return int(connection.execute("SELECT count(*) FROM memory_entries").fetchone()[0])


# ----------------------------------------------------------------------------- learning


@pytest.mark.parametrize(
    ("config", "learns"),
    [
        (RunConfig(), True),
        (RunConfig(model="mock"), False),
        (RunConfig(model="dry-run"), False),
        (RunConfig(replay="session.jsonl"), False),
        (RunConfig(model="mock", learn=True), True),
        (RunConfig(learn=False), False),
    ],
)
def test_only_runs_answered_by_a_live_model_learn_by_default(
    config: RunConfig, learns: bool
) -> None:
    assert learns_from(config) is learns


def test_a_mock_run_learns_nothing_unless_asked(
    project: Path, private_memory_database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "agents/greet.as", "--mock", "--input", '{"name": "Ada"}', "--quiet"]
    assert cli(capsys, *argv)[0] == 0
    assert cli(capsys, "learn")[0] == 0  # learning from queued runs happens later, or now
    assert memory_entries(private_memory_database) == 0
    assert cli(capsys, *argv, "--learn")[0] == 0
    assert cli(capsys, "learn")[0] == 0
    assert memory_entries(private_memory_database) >= 1  # the run memory at least


def test_a_live_run_with_no_learn_still_leaves_its_run_memory(
    project: Path,
    private_memory_database: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with serving(lambda model, body: '{"greeting": "Hello Ada"}') as server:
        for name, value in server.environ().items():
            monkeypatch.setenv(name, value)
        argv = ["run", "agents/greet.as", "--input", '{"name": "Ada"}', "--quiet", "--no-learn"]
        assert cli(capsys, *argv)[0] == 0
    assert cli(capsys, "learn")[0] == 0
    with sqlite3.connect(private_memory_database) as connection:
        keys = [row[0] for row in connection.execute("SELECT key FROM memory_entries")]
    # The run memory (auto_sink): --no-learn stops only the distilling of experiences.
    assert len(keys) == 1 and keys[0].startswith("run:")


# ----------------------------------------------------------------------------- journal


def test_run_and_runs_share_the_journal_at_the_workspace_root(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = cli(capsys, "run", "agents/greet.as", "--mock", "--input", '{"name": "Ada"}')
    assert code == 0
    assert (project / ".agentscript" / "runs.db").is_file()
    assert not (project / "agents" / ".agentscript").exists()
    code, out, _ = cli(capsys, "runs", "show", "last")
    assert code == 0
    assert json.loads(out)["run"]["program"].endswith("agents/greet.as")


def test_runs_from_a_subfolder_finds_the_same_journal(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cli(capsys, "run", "agents/greet.as", "--mock", "--input", '{"name": "Ada"}')
    monkeypatch.chdir(project / "agents")
    code, out, _ = cli(capsys, "runs", "list", "--json")
    assert code == 0 and len(json.loads(out)) == 1


def test_an_explicit_workspace_holds_its_own_journal(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    argv = ["run", "agents/greet.as", "--mock", "--input", '{"name": "A"}', "--quiet"]
    assert cli(capsys, *argv, "--workspace", str(elsewhere))[0] == 0
    assert (elsewhere / ".agentscript" / "runs.db").is_file()
    code, out, _ = cli(capsys, "runs", "list", "--json", "--workspace", str(elsewhere))
    assert code == 0 and len(json.loads(out)) == 1


# ----------------------------------------------------------------------------- check, models


def test_check_rejects_unknown_tool_schemes_and_provider_less_models(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.as"
    path.write_text(
        'import llm Model from "gpt-4"\nimport tool F from "ftp://x"\n'
        'import tool Shell from "sh://bash"\nimport tool G from "htps://example.com"\n'
        "main agent A {\n  main func() { return 1 }\n}\n"
    )
    code, _, err = cli(capsys, "check", str(path))
    lines = err.splitlines()
    assert code == 1
    assert lines[0] == (
        f"ERROR UNKNOWN_MODEL_PROVIDER at {path}:1:1: Model 'Model' (gpt-4): LLM URI must use "
        "an explicit protocol URL form; write PROVIDER://MODEL with a known provider: openai://, "
        "anthropic://, ollama:// (e.g. openai://gpt-4)"
    )
    assert lines[1].endswith(
        "Tool 'F' uses the unknown scheme 'ftp://'; known schemes: env://, file://, host://, "
        "http://, https://, mcp://, memory://, node://, npm://, python://, sh://"
    )
    assert "Forbidden shell tool 'bash'" in lines[2]
    assert "unknown scheme 'htps://' (did you mean 'https'?)" in lines[3]


def test_models_exits_1_when_a_model_is_unusable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    path = tmp_path / "greet.as"
    path.write_text(GREET)
    code, out, _ = cli(capsys, "models", str(path))
    assert code == 1 and "OPENAI_API_KEY missing (required)" in out
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert cli(capsys, "models", str(path))[0] == 0


def test_models_says_the_key_is_optional_with_a_custom_base_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    path = tmp_path / "greet.as"
    path.write_text(GREET)
    code, out, _ = cli(capsys, "models", str(path))
    assert code == 0
    assert "OPENAI_API_KEY not set (optional with a custom base URL)" in out


# ----------------------------------------------------------------------------- tools


def test_a_shell_is_refused_as_forbidden_before_any_approval_is_asked(tmp_path: Path) -> None:
    from agentscript.app.composition import build_tools

    asked: list[Any] = []
    config = RunConfig(ask_user=lambda request: asked.append(request) or "yes", approve="ask")
    gate = build_tools(config, tmp_path, [])
    events: list[tuple[str, dict[str, Any]]] = []
    call = ToolCall(
        "Shell", "sh://bash", "run", [{"args": ["-c", "ls"]}], lambda k, d: events.append((k, d))
    )
    with pytest.raises(ExecutionError, match="Forbidden shell tool 'bash'"):
        gate.call(call)
    assert asked == [] and events == []


# ----------------------------------------------------------------------------- replay


def test_a_replay_miss_shows_what_changed(tmp_path: Path) -> None:
    recording = tmp_path / "session.jsonl"
    recorded = {
        "model": "openai://gpt-4.1-mini",
        "system": "You are Greeter.",
        "user": "Context:\n[0] input.name:\nAda\n\nInstruction:\nGreet.",
        "schema": None,
        "max_output_tokens": None,
        "temperature": 0.2,
        "think": None,
        "strict": None,
    }
    entry = {"version": 1, "digest": "0" * 64, "call": "Greeter.__main", "request": recorded}
    recording.write_text(json.dumps(entry) + "\n")
    program = agentscript.load_source(GREET)
    with pytest.raises(ExecutionError) as caught:
        agentscript.run(program, {"name": "Bob"}, RunConfig(replay=recording, journal=False))
    message = str(caught.value)
    assert "has no recorded answer for Greeter.__main" in message
    assert "temperature: 0.2 -> null" in message
    assert "user prompt changed:" in message
    assert "  -Ada" in message and "  +Bob" in message


# ----------------------------------------------------------------------------- flag form


def test_the_later_flag_forms_of_the_original_work(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(
        capsys,
        "agents/greet.as",
        "--mock",
        "--input",
        '{"name": "Ada"}',
        "--concurrency",
        "2",
        "--trace-file",
        "t.json",
    )
    assert code == 0
    assert json.loads(out) == {
        "value": {"greeting": ""},
        "trace": {"file": "t.json"},
    }
    assert json.loads((project / "t.json").read_text())[-1]["kind"] == "generate"
    code, _, err = cli(capsys, "agents/greet.as", "--dry-run", "--input", '{"name": "Ada"}')
    assert code == 0 and "=== dry-run prompt 1: Greeter.__main (attempt 1) ===" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--concurrency", "0"], "--concurrency must be a positive integer"),
        (["--mock", "--dry-run"], "Use only one of --mock, --dry-run and --real-llm"),
    ],
)
def test_the_later_flag_forms_refuse_bad_values(
    project: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert cli(capsys, "agents/greet.as", *argv) == (1, "", message + "\n")


# ----------------------------------------------------------------------------- REPL


def repl(*lines: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    run_lines(io.StringIO("".join(line + "\n" for line in lines)), out, err)
    return out.getvalue()[len(BANNER) + 1 :], err.getvalue()


def test_the_repl_evaluates_expressions_and_assignments() -> None:
    out, err = repl("x = 1 + 2", "x", 'x * 2 + "!"', ":vars", "inptu")
    assert out.splitlines() == ["3", "3", '"6!"', "x = 3"]
    assert err == "Unknown identifier 'inptu' (did you mean 'input'?)\n"


def test_the_repl_runs_short_with_scripted_answers(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"Greeter": [{"greeting": "Hi Ada"}]}))
    (tmp_path / "greet.as").write_text(GREET)
    out, err = repl(
        f":load {tmp_path / 'greet.as'}",
        f":mock {answers}",
        ':run {"name": "Ada"}',
        ":trace pretty",
    )
    lines = out.splitlines()
    assert lines[0] == "loaded 1 agent(s)"
    assert lines[1] == f"generates use the mock model (scripted answers from {answers})"
    assert json.loads("\n".join(lines[2:5])) == {"greeting": "Hi Ada"}
    assert err.startswith("usage: 1 model call") and err.rstrip().endswith("(:trace for the rest)")
    assert "- generate Greet." in lines  # :trace pretty keeps the 0.1.0 lines


def test_the_repl_switches_to_the_real_models(tmp_path: Path) -> None:
    out, _ = repl(":model real", ":model", ":model mock")
    assert out.splitlines() == [
        "generates use the program's real models",
        "generates use the program's real models",
        "generates use the mock model (shape defaults)",
    ]
