"""Runs are journaled by default, and `agentscript runs …` reads the journal back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agentscript
from agentscript.app.configuration import RunConfig
from agentscript.cli.main import main

PROGRAM = """
import llm M from "openai://m"
import tool File from "file://workspace"

agent Notes {
  model M
  role "note taker"
  description "Writes one note."
  main func(input { topic: string }) {
    use input.topic
    note = generate({ input: "Write a note." }) -> { text }
    saved = File.write({ path: "note.md", content: note.text })
    return saved.ok
  }
}
"""


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.as").write_text(PROGRAM)
    (tmp_path / "answers.json").write_text(json.dumps({"Notes": [{"text": "Journals keep runs."}]}))
    return tmp_path


def run_cli(
    capsys: pytest.CaptureFixture[str], workspace: Path, *extra: str
) -> tuple[int, str, str]:
    return cli(
        capsys,
        "run",
        str(workspace / "notes.as"),
        "--mock",
        str(workspace / "answers.json"),
        "--approve",
        "auto",
        "--input",
        '{"topic": "journals"}',
        *extra,
    )


def test_a_run_is_journaled_and_listed(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, workspace)
    assert code == 0, err
    assert "warning: run journal" not in err
    code, out, _ = cli(capsys, "runs", "list", "--workspace", str(workspace), "--json")
    assert code == 0
    [run] = json.loads(out)
    assert run["status"] == "ok"
    assert run["program"] == str(workspace / "notes.as")
    code, out, _ = cli(capsys, "runs", "list", "--workspace", str(workspace))
    assert run["id"] in out and "ok" in out


def test_no_journal_leaves_no_record(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run_cli(capsys, workspace, "--no-journal")
    assert code == 0
    assert not (workspace / ".agentscript" / "runs.db").exists()


def test_replay_shows_the_trace_exactly_as_the_run_returned_it(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, workspace)
    trace = json.loads(out)["trace"]
    code, out, _ = cli(capsys, "runs", "replay", "last", "--workspace", str(workspace))
    assert code == 0
    assert json.loads(out) == trace
    code, out, _ = cli(capsys, "runs", "replay", "last", "--pretty", "--workspace", str(workspace))
    assert out.splitlines()[:3] == [
        "- use input.topic",
        "- generate Write a note.",
        "- approval File.write pending",
    ]


def test_show_trace_and_graph(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_cli(capsys, workspace)
    code, out, _ = cli(capsys, "runs", "show", "last", "--workspace", str(workspace))
    assert code == 0
    assert json.loads(out)["run"]["status"] == "ok"
    code, out, _ = cli(capsys, "runs", "show", "last", "--pretty", "--workspace", str(workspace))
    assert "- tool File.write" in out
    code, out, _ = cli(capsys, "runs", "trace", "last", "--workspace", str(workspace))
    trace = json.loads(out)
    assert trace["success"] is True
    assert trace["goal"] == {"topic": "journals"}
    assert [step["tool"] for step in trace["tool_chain"]] == ["File.write"]
    assert trace["files"] == [{"path": "note.md", "actions": ["write"]}]
    page = workspace / "run.html"
    code, out, err = cli(
        capsys, "runs", "graph", "last", "--html", str(page), "--workspace", str(workspace)
    )
    assert code == 0
    assert "File.write" in out
    assert f"wrote {page}" in err
    html = page.read_text()
    assert "<svg" in html and "http://" not in html.replace("http://www.w3.org", "")


def test_a_failed_run_is_journaled_as_an_error(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = run_cli(capsys, workspace, "--approve", "deny")
    assert code == 1
    code, out, _ = cli(capsys, "runs", "list", "--json", "--workspace", str(workspace))
    [run] = json.loads(out)
    assert run["status"] == "error"
    code, out, _ = cli(capsys, "runs", "trace", "last", "--workspace", str(workspace))
    trace = json.loads(out)
    assert trace["success"] is False
    assert "refused" in trace["failure_reason"]


def test_unknown_runs_are_clear_errors(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_cli(capsys, workspace)
    code, _, err = cli(capsys, "runs", "show", "nope", "--workspace", str(workspace))
    assert code == 1
    assert "Traceback" not in err and err.strip()


def test_the_python_api_journals_too_and_dry_runs_do_not(workspace: Path) -> None:
    program = agentscript.load(workspace / "notes.as")
    result = agentscript.run(
        program,
        {"topic": "x"},
        RunConfig(model="mock", responses=workspace / "answers.json", approve="auto"),
    )
    assert result.journal is not None
    assert result.journal.wait(10) == []
    assert (workspace / ".agentscript" / "runs.db").exists()
    dry = agentscript.run(program, {"topic": "x"}, RunConfig(model="dry-run"))
    assert dry.journal is None
