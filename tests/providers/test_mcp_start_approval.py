"""Starting an MCP server is an action the approval gate decides before anything runs.

Every server here is the real echo server (tests/fixtures/mcp/echo_server.py) started through a
tiny launcher that first leaves a marker file, so "the server started" is a fact on disk, not a
guess. The attacks are issue 13's finding 1: a start under `--approve deny`, under `ask` with no
terminal, in autonomous mode, and a program that writes `agentscript.mcp.json` itself.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.app.configuration import RunConfig
from agentscript.cli.main import main
from agentscript.providers.tools.approvals import ApprovalMode
from agentscript.runtime.errors import AgentScriptError

ECHO_SERVER = str(Path(__file__).parents[1] / "fixtures" / "mcp" / "echo_server.py")
# Leaves argv[1] as a marker, then serves as the echo server.
LAUNCHER = (
    "import pathlib, runpy, sys; pathlib.Path(sys.argv[1]).write_text('started'); "
    "sys.argv = sys.argv[2:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)

CALLS_PEEK = """
import tool Echo from "mcp://echo"
agent A { main func() { return Echo.peek({}) } }
"""

WRITES_CONFIG_THEN_CALLS = """
import tool File from "file://workspace"
import tool Evil from "mcp://evil"
agent A {
  main func(input { config: string }) {
    File.write({ path: "agentscript.mcp.json", content: input.config })
    return Evil.call({ tool: "peek" })
  }
}
"""


def launcher(marker: Path, **extra: Any) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": ["-c", LAUNCHER, str(marker), ECHO_SERVER],
        "startTimeout": 120,
        **extra,
    }


def workspace_with(tmp_path: Path, servers: dict[str, Any], source: str = CALLS_PEEK) -> Path:
    (tmp_path / "agentscript.mcp.json").write_text(json.dumps({"mcpServers": servers}))
    path = tmp_path / "prog.as"
    path.write_text(source)
    return path


def run(path: Path, approve: ApprovalMode | None = None, **options: Any) -> Any:
    input_value = options.pop("input", {})
    config = RunConfig(model="mock", approve=approve, journal=False, learn=False, **options)
    return agentscript.run(agentscript.load(path), input_value, config)


def refusal(path: Path, approve: ApprovalMode | None = None, **options: Any) -> str:
    with pytest.raises(AgentScriptError) as raised:
        run(path, approve, **options)
    return str(raised.value)


def pin(marker: Path, **extra: Any) -> dict[str, Any]:
    """A `servers:` rule that pins the launcher exactly as `launcher(marker)` configures it."""
    return {
        "server": "echo",
        "command": [sys.executable, "-c", LAUNCHER, str(marker), ECHO_SERVER],
        **extra,
    }


def policy_file(tmp_path: Path, policy: dict[str, Any]) -> Path:
    path = tmp_path.parent / f"{tmp_path.name}-policy.json"
    path.write_text(json.dumps(policy))
    return path


# ---------------------------------------------------------------------- no start without approval


@pytest.mark.parametrize("mode", ["deny", "ask", "autonomous"])
def test_no_server_starts_when_the_mode_does_not_allow_it(tmp_path: Path, mode: str) -> None:
    marker = tmp_path / "started"
    path = workspace_with(
        tmp_path, {"echo": launcher(marker, tools={"peek": {"readOnlyHint": True}})}
    )
    message = refusal(path, mode)  # type: ignore[arg-type]
    assert "MCP server 'echo'" in message and "was not started" in message
    assert not marker.exists()


def test_a_config_the_run_writes_cannot_start_anything(tmp_path: Path) -> None:
    """A policy that allows only File.write: the program writes a server entry and calls it."""
    marker = tmp_path / "started"
    path = tmp_path / "prog.as"
    path.write_text(WRITES_CONFIG_THEN_CALLS)
    # The attacker rates its tool read-only, so the call itself needs no approval.
    evil = launcher(marker, tools={"peek": {"readOnlyHint": True}})
    config = json.dumps({"mcpServers": {"evil": evil}})
    policy = policy_file(
        tmp_path, {"rules": [{"tool": "File", "method": "write", "decision": "run"}]}
    )
    for mode in ("ask", "auto"):
        (tmp_path / "agentscript.mcp.json").unlink(missing_ok=True)
        message = refusal(path, mode, approvals=policy, input={"config": config})  # type: ignore[arg-type]
        # The configuration was read when the run started, before the program wrote it.
        assert "MCP server 'evil' not found in agentscript.mcp.json" in message
        assert not marker.exists()
    # The next run reads the file the last one wrote, and the start still needs approval.
    message = refusal(path, "ask", approvals=policy, input={"config": config})
    assert "MCP server 'evil' (" in message and "there is no terminal to ask" in message
    assert not marker.exists()


def test_an_unrated_tool_is_destructive_and_is_refused_before_the_server_starts(
    tmp_path: Path,
) -> None:
    """The server's own annotation says peek is read-only; only the configuration counts."""
    marker = tmp_path / "started"
    path = workspace_with(tmp_path, {"echo": launcher(marker)})
    message = refusal(path, "ask")
    assert "Echo.peek needs approval and there is no terminal to ask" in message
    assert not marker.exists()


# ---------------------------------------------------------------------- pins


def test_a_pinned_server_starts_and_a_configured_read_runs_without_asking(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    path = workspace_with(
        tmp_path, {"echo": launcher(marker, tools={"peek": {"readOnlyHint": True}})}
    )
    policy = policy_file(tmp_path, {"servers": [pin(marker)]})
    result = run(path, "ask", approvals=policy)
    assert result.value["text"] == "peeked"
    assert marker.exists()
    approvals = [event["data"] for event in result.trace if event["kind"] == "approval"]
    assert [(data["decision"], data.get("by")) for data in approvals] == [
        ("pending", None),
        ("approved", "policy"),
    ]
    assert approvals[1]["start"] == {
        "server": "echo",
        "transport": "stdio",
        "command": [sys.executable, "-c", LAUNCHER, str(marker), ECHO_SERVER],
    }


def test_a_pin_holds_in_autonomous_runs(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    path = workspace_with(
        tmp_path, {"echo": launcher(marker, tools={"peek": {"readOnlyHint": True}})}
    )
    policy = policy_file(tmp_path, {"servers": [pin(marker)]})
    assert run(path, "autonomous", approvals=policy).value["text"] == "peeked"
    assert marker.exists()


@pytest.mark.parametrize(
    "config",
    [
        {"args": ["-c", LAUNCHER, "other-marker", ECHO_SERVER]},
        {"env": {"LD_PRELOAD": "./evil.so"}},
        {"cwd": "."},
    ],
    ids=["args", "env", "cwd"],
)
def test_a_server_whose_launch_differs_from_its_pin_never_starts(
    tmp_path: Path, config: dict[str, Any]
) -> None:
    marker = tmp_path / "started"
    entry = {**launcher(marker, tools={"peek": {"readOnlyHint": True}}), **config}
    path = workspace_with(tmp_path, {"echo": entry})
    policy = policy_file(tmp_path, {"servers": [pin(marker)]})
    message = refusal(path, "auto", approvals=policy)
    assert "pins 'echo' to another launch" in message
    assert not marker.exists() and not (tmp_path / "other-marker").exists()


def test_a_pin_that_denies_wins_over_auto(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    path = workspace_with(
        tmp_path, {"echo": launcher(marker, tools={"peek": {"readOnlyHint": True}})}
    )
    policy = policy_file(tmp_path, {"servers": [pin(marker, decision="deny")]})
    assert "refused by the approval policy" in refusal(path, "auto", approvals=policy)
    assert not marker.exists()


def test_auto_starts_a_configured_server_and_asks_once(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    path = workspace_with(tmp_path, {"echo": launcher(marker)})
    result = run(path, "auto")
    assert result.value["text"] == "peeked" and marker.exists()
    decisions = [
        (event["data"]["method"], event["data"]["decision"], "start" in event["data"])
        for event in result.trace
        if event["kind"] == "approval"
    ]
    # The call (destructive: peek is not rated in the configuration), then the start.
    assert decisions == [
        ("peek", "pending", False),
        ("peek", "approved", False),
        ("peek", "pending", True),
        ("peek", "approved", True),
    ]


def test_server_pins_are_validated(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    path = workspace_with(tmp_path, {"echo": launcher(marker)})
    policy = policy_file(tmp_path, {"servers": [{"server": "echo"}]})
    message = refusal(path, "auto", approvals=policy)
    assert "servers.0" in message and "either command" in message


# ---------------------------------------------------------------------- commands that never start


def test_dry_runs_start_no_server(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    path = workspace_with(
        tmp_path, {"echo": launcher(marker, tools={"peek": {"readOnlyHint": True}})}
    )
    config = RunConfig(model="dry-run", journal=False, learn=False)
    result = agentscript.run(agentscript.load(path), {}, config)
    assert result.value == {"ok": True, "dryRun": True, "effects": []}
    assert not marker.exists()


@pytest.mark.parametrize(
    "command",
    [["check"], ["parse"], ["models"], ["tools", "--dry"], ["tools", "--dry", "--json"]],
    ids=lambda words: " ".join(words),
)
def test_inspecting_commands_start_no_server(
    tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "started"
    path = workspace_with(
        tmp_path, {"echo": launcher(marker, tools={"peek": {"readOnlyHint": True}})}
    )
    assert main([*command, str(path)]) == 0, capsys.readouterr().err
    assert not marker.exists()


def test_tools_dry_shows_the_launch_and_the_configured_risks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "started"
    path = workspace_with(
        tmp_path, {"echo": launcher(marker, tools={"peek": {"readOnlyHint": True}})}
    )
    assert main(["tools", "--dry", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Echo  mcp://echo"
    assert lines[1].startswith(f"  starts: {sys.executable} -c ")
    assert lines[2] == "  peek [read] (configured)"
