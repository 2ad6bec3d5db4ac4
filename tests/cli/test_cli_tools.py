"""The tool-related command line: approvals, workspace, env allow-list, undo and tools."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentscript.cli.approval import TerminalApprover
from agentscript.cli.main import main
from agentscript.providers.tools.approvals import ApprovalRequest

ECHO_SERVER = Path(__file__).parents[1] / "fixtures" / "mcp" / "echo_server.py"

WRITER = """
import tool File from "file://workspace"

agent Writer {
  main func() {
    result = File.write({ path: "out/report.md", content: "# Report" })
    return result.effects[0].id
  }
}
"""

EDITOR = """
import tool File from "file://workspace"

agent Editor {
  main func() {
    File.write({ path: "notes.md", content: "first" })
    File.patch({ path: "notes.md", search: "first", replace: "second" })
    File.write({ path: "draft.md", content: "draft" })
    return "edited"
  }
}
"""


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def program(tmp_path: Path, source: str, name: str = "prog.as") -> Path:
    path = tmp_path / name
    path.write_text(source)
    return path


def test_writes_need_approval_and_without_a_terminal_they_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, "run", str(program(tmp_path, WRITER)), "--mock")
    assert code == 1
    assert "File.write needs approval and there is no terminal to ask" in err
    assert not (tmp_path / "out").exists()


def test_approve_auto_lets_writes_run_and_records_the_decision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(capsys, "run", str(program(tmp_path, WRITER)), "--mock", "--approve", "auto")
    assert code == 0
    document = json.loads(out)
    assert document["value"] == "file-write:out/report.md"
    decisions = [e["data"]["decision"] for e in document["trace"] if e["kind"] == "approval"]
    assert decisions == ["pending", "approved"]
    assert (tmp_path / "out" / "report.md").read_text() == "# Report"


def test_approve_deny_and_policy_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = program(tmp_path, WRITER)
    code, _, err = cli(capsys, "run", str(path), "--mock", "--approve", "deny")
    assert code == 1 and "File.write was refused (--approve deny)" in err
    policy = tmp_path / "policy.yml"
    policy.write_text("rules:\n  - tool: File\n    method: write\n    decision: run\n")
    code, _, _ = cli(capsys, "run", str(path), "--mock", "--approvals", str(policy))
    assert code == 0
    assert (tmp_path / "out" / "report.md").exists()
    policy.write_text("rules: [oops")
    code, _, err = cli(capsys, "run", str(path), "--mock", "--approvals", str(policy))
    assert code == 1 and "Approval policy" in err and "Traceback" not in err


def test_workspace_flag_moves_the_jail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    path = program(tmp_path, WRITER)
    code, _, _ = cli(
        capsys, "run", str(path), "--mock", "--approve", "auto", "--workspace", str(elsewhere)
    )
    assert code == 0
    assert (elsewhere / "out" / "report.md").exists()
    assert not (tmp_path / "out").exists()


def test_env_allow_reaches_the_env_tool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "tok-123")
    path = program(
        tmp_path,
        'import tool Env from "env://process"\n'
        'agent A { main func() { return Env.get({ name: "DEPLOY_TOKEN" }) } }\n',
    )
    code, _, err = cli(capsys, "run", str(path), "--mock")
    assert code == 1 and "looks like a secret" in err
    code, out, _ = cli(capsys, "run", str(path), "--mock", "--env-allow", "HOME, DEPLOY_TOKEN")
    assert code == 0
    document = json.loads(out)
    assert document["value"] == "tok-123"
    assert "tok-123" not in json.dumps(document["trace"])


def test_undo_reverts_a_recorded_run_and_reports_conflicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "draft.md").write_text("old draft")
    path = program(tmp_path, EDITOR)
    trace = tmp_path / "run.json"
    code, _, _ = cli(capsys, "run", str(path), "--mock", "--approve", "auto", "--trace", str(trace))
    assert code == 0
    code, out, _ = cli(capsys, "undo", str(trace), "--dry-run", "--workspace", str(tmp_path))
    assert code == 0
    assert out.splitlines() == [
        "would restore draft.md",
        "would restore notes.md",
        "would delete notes.md",
    ]
    assert (tmp_path / "notes.md").read_text() == "second"
    (tmp_path / "draft.md").write_text("edited by hand after the run")
    code, out, _ = cli(capsys, "undo", str(trace), "--workspace", str(tmp_path))
    assert code == 1
    assert out.splitlines() == [
        "restore notes.md",
        "delete notes.md",
        "CONFLICT draft.md: the file changed since the effect (left as it is)",
    ]
    assert not (tmp_path / "notes.md").exists()
    assert (tmp_path / "draft.md").read_text() == "edited by hand after the run"


def test_undo_reports_unreadable_traces_clearly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = cli(capsys, "undo", str(bad))
    assert code == 1 and "is not valid JSON" in err
    code, _, err = cli(capsys, "undo", str(tmp_path / "missing.json"))
    assert code == 1 and "Trace not found: " in err


def test_tools_lists_mcp_server_tools_with_their_risk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "agentscript.mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "echo": {
                        "command": "${AGENTSCRIPT_PYTHON}",
                        "args": [str(ECHO_SERVER)],
                        "tools": {"peek": {"readOnlyHint": True}},
                    }
                }
            }
        )
    )
    path = program(
        tmp_path,
        'import tool Echo from "mcp://echo"\nimport tool Grep from "sh://grep"\n'
        "agent A { main func() { return 1 } }\n",
    )
    code, out, err = cli(capsys, "tools", str(path))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:2] == ["Echo  mcp://echo", f"  starts: ${{AGENTSCRIPT_PYTHON}} {ECHO_SERVER}"]
    assert any(line.startswith("  wipe [destructive]") for line in lines)
    assert any(line.startswith("  peek [read]") for line in lines)
    # The server claims `note` does nothing destructive; the configuration does not say so.
    assert any(line.startswith("  note [destructive] (server claims effect)") for line in lines)
    assert "Grep  sh://grep" in out
    code, out, _ = cli(capsys, "tools", str(path), "--json")
    listing = json.loads(out)
    assert listing[1] == {"name": "Grep", "uri": "sh://grep", "scheme": "sh"}
    assert listing[0]["configured"] == {"peek": "read"}
    assert listing[0]["configured"] == {"peek": "read"}
    assert {tool["name"] for tool in listing[0]["tools"]} >= {"echo", "add", "wipe", "peek"}


def test_terminal_approver_reads_yes_no_always_and_asks_again_when_unclear() -> None:
    request = ApprovalRequest(
        "approval-1", "File", "write", "file://workspace", "effect", [{"path": "a"}]
    )
    replies = iter(["maybe", "Y"])
    assert TerminalApprover(lambda prompt: next(replies))(request) == "yes"
    assert TerminalApprover(lambda prompt: "a")(request) == "always"
    assert TerminalApprover(lambda prompt: "")(request) == "no"

    def closed(prompt: str) -> str:
        raise EOFError

    assert TerminalApprover(closed)(request) == "no"


def test_flag_form_roots_tools_at_the_working_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (tmp_path / "data.txt").write_text("from the working directory")
    path = program(
        scripts,
        'import tool File from "file://workspace"\n'
        'agent A { main func() { return File.read({ path: "data.txt" }) } }\n',
    )
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli(capsys, str(path), "--quiet")
    assert code == 0
    assert json.loads(out) == "from the working directory"
    assert os.getcwd() == str(tmp_path)


def test_a_dry_run_reads_for_real_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.md").write_text("real notes")
    path = program(
        tmp_path,
        'import llm M from "openai://m"\nimport tool File from "file://workspace"\n'
        'agent A {\n  model M\n  role "r"\n  description "d"\n  main func() {\n'
        '    text = File.read({ path: "notes.md" })\n'
        '    saved = File.write({ path: "out/new.md", content: text })\n'
        "    use text\n"
        '    generate({ input: "Summarise." }) -> { summary }\n'
        "    return saved\n  }\n}\n",
    )
    code, out, err = cli(capsys, "run", str(path), "--dry-run")
    assert code == 0
    assert "Context:\n[0] text:\nreal notes" in err
    assert json.loads(out)["value"] == {"ok": True, "dryRun": True, "effects": []}
    assert not (tmp_path / "out").exists()


def test_undo_removes_the_directories_a_write_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "run.json"
    path = program(tmp_path, WRITER.replace("out/report.md", "deep/er/report.md"))
    code, _, _ = cli(capsys, "run", str(path), "--mock", "--approve", "auto", "--trace", str(trace))
    assert code == 0 and (tmp_path / "deep" / "er" / "report.md").exists()
    code, _, _ = cli(capsys, "undo", str(trace), "--workspace", str(tmp_path))
    assert code == 0
    assert not (tmp_path / "deep").exists()


def test_terminal_approver_shows_the_command_a_server_start_would_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from agentscript.providers.tools.mcp_launch import ServerLaunch

    launch = ServerLaunch("notes", "stdio", command=("python", "notes.py"), env=(("TOKEN", "x"),))
    request = ApprovalRequest(
        "approval-2", "Notes", "search", "mcp://notes", "destructive", [], launch=launch
    )
    assert TerminalApprover(lambda prompt: "y")(request) == "yes"
    shown = capsys.readouterr().err.splitlines()
    assert shown[1:3] == [
        "MCP server 'notes' wants to start for Notes.search (mcp://notes):",
        "  python notes.py (env: TOKEN)",
    ]
