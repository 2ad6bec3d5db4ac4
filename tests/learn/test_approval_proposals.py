"""Repeated approvals of one call become a proposal to the user, never a policy change."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentscript.cli.app import cli
from agentscript.learn.approval_proposals import policy_proposals
from agentscript.learn.journal import close_shared_journals
from agentscript.providers.tools.approvals import ApprovalPolicy
from experience_support import WRITER, journal_of, learned_run, make_workspace


@pytest.fixture(autouse=True)
def _close_journals() -> Iterator[None]:
    yield
    close_shared_journals()


def write(workspace: Path, database: Path, task: str, answer: str) -> None:
    learned_run(
        workspace, database, [], task=task, source=WRITER, name="writer.as", approve="ask",
        ask_user=lambda request: answer,
    )  # fmt: skip


def test_three_runs_approved_by_the_user_make_a_proposal(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    database = tmp_path / "memory.db"
    write(workspace, database, "Note one", "yes")
    write(workspace, database, "Note two", "yes")
    assert policy_proposals(journal_of(workspace).graph) == []
    write(workspace, database, "Note three", "yes")

    (proposal,) = policy_proposals(journal_of(workspace).graph)
    assert (proposal.tool, proposal.method, len(proposal.runs)) == ("File", "write", 3)
    assert proposal.rule == "- {scheme: file, tool: File, method: write, decision: run}"
    # The rule it proposes is one the approval policy accepts, and it allows that call.
    rule_data = {
        "rules": [{"scheme": "file", "tool": "File", "method": "write", "decision": "run"}]
    }
    assert ApprovalPolicy.from_data(rule_data).rules[0].decision == "run"

    shown = CliRunner().invoke(cli, ["learn", "proposals", "--workspace", str(workspace)])
    assert shown.exit_code == 0, shown.output
    assert "You approved File.write yourself in 3 runs" in shown.output
    bare = CliRunner().invoke(
        cli, ["learn", "--workspace", str(workspace), "--db", str(database), "--json"]
    )
    assert json.loads(bare.output)["proposals"] == 1


def test_a_refusal_by_the_user_withdraws_it(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    database = tmp_path / "memory.db"
    for task in ("Note one", "Note two", "Note three"):
        write(workspace, database, task, "yes")
    write(workspace, database, "Note four", "no")
    assert policy_proposals(journal_of(workspace).graph) == []


def test_approvals_by_auto_mode_propose_nothing(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    database = tmp_path / "memory.db"
    for task in ("Note one", "Note two", "Note three"):
        learned_run(
            workspace, database, [], task=task, source=WRITER, name="writer.as", approve="auto"
        )
    assert policy_proposals(journal_of(workspace).graph) == []
    shown = CliRunner().invoke(cli, ["learn", "proposals", "--workspace", str(workspace)])
    assert shown.output.strip() == "(no proposals)"
