"""The approval gate: policy decisions, modes, asking the user, and the trace it leaves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.app.configuration import RunConfig
from agentscript.providers.tools.approvals import (
    Answer,
    ApprovalGate,
    ApprovalMode,
    ApprovalPolicy,
    ApprovalRequest,
)
from agentscript.runtime.errors import LoadError
from tools_support import make_tools

PROGRAM = """
import tool File from "file://workspace"

agent Writer {
  main func() {
    text = File.read({ path: "in.txt" })
    File.write({ path: "out.txt", content: text })
    File.write({ path: "out2.txt", content: text })
    return "done"
  }
}
"""


class ScriptedUser:
    """Answers approval questions from a list and remembers what it was asked."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return self.answers.pop(0)


def run_with(
    tmp_path: Path,
    mode: ApprovalMode | None = None,
    policy: ApprovalPolicy | None = None,
    user: ScriptedUser | None = None,
) -> agentscript.RunResult:
    (tmp_path / "in.txt").write_text("payload")
    gate = ApprovalGate(make_tools(tmp_path), policy=policy, mode=mode, ask_user=user)
    return agentscript.run(
        agentscript.load_source(PROGRAM), {}, RunConfig(model="mock", tools=gate)
    )


def approvals(trace: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    return [
        (event["data"]["approval_id"], event["data"]["decision"], event["data"].get("by"))
        for event in trace
        if event["kind"] == "approval"
    ]


def test_reads_run_without_approval_and_writes_ask_the_user(tmp_path: Path) -> None:
    user = ScriptedUser("yes", "yes")
    result = run_with(tmp_path, user=user)
    assert result.value == "done"
    assert [(r.tool, r.method, r.risk) for r in user.asked] == [("File", "write", "effect")] * 2
    assert approvals(result.trace) == [
        ("approval-1", "pending", None),
        ("approval-1", "approved", "user"),
        ("approval-2", "pending", None),
        ("approval-2", "approved", "user"),
    ]
    kinds = [event["kind"] for event in result.trace]
    assert kinds == ["tool", "approval", "approval", "tool", "approval", "approval", "tool"]


def test_always_approves_the_same_tool_method_for_the_rest_of_the_run(tmp_path: Path) -> None:
    user = ScriptedUser("always")
    result = run_with(tmp_path, user=user)
    assert len(user.asked) == 1
    assert approvals(result.trace)[-1] == ("approval-2", "approved", "always")


def test_a_refusal_stops_the_call_and_no_file_is_written(tmp_path: Path) -> None:
    with pytest.raises(agentscript.ExecutionError) as caught:
        run_with(tmp_path, user=ScriptedUser("no"))
    assert "File.write was refused by the user" in str(caught.value)
    assert not (tmp_path / "out.txt").exists()
    assert approvals(caught.value.trace or [])[-1] == ("approval-1", "refused", "user")


def test_without_a_terminal_ask_means_refuse_with_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(agentscript.ExecutionError) as caught:
        run_with(tmp_path)
    assert "File.write needs approval and there is no terminal to ask" in str(caught.value)
    assert "--approve auto" in str(caught.value)


@pytest.mark.parametrize(
    ("mode", "written", "by"), [("auto", True, "auto"), ("deny", False, "mode")]
)
def test_modes_decide_without_asking(
    tmp_path: Path, mode: ApprovalMode, written: bool, by: str
) -> None:
    user = ScriptedUser()
    try:
        result = run_with(tmp_path, mode=mode, user=user)
        trace = result.trace
    except agentscript.ExecutionError as error:
        trace = error.trace or []
    assert user.asked == []
    assert (tmp_path / "out.txt").exists() is written
    assert approvals(trace)[1][1:] == ("approved" if written else "refused", by)
    assert {event["data"]["mode"] for event in trace if event["kind"] == "approval"} == {mode}


def test_policy_rules_match_first_and_override_the_risk_defaults(tmp_path: Path) -> None:
    policy = ApprovalPolicy.from_data(
        {
            "rules": [{"tool": "File", "method": "write", "decision": "run"}],
            "defaults": {"read": "run"},
        }
    )
    result = run_with(tmp_path, policy=policy)
    assert approvals(result.trace)[1] == ("approval-1", "approved", "policy")
    denying = ApprovalPolicy.from_data(
        {"rules": [{"scheme": "file", "risk": "read", "decision": "deny"}]}
    )
    with pytest.raises(
        agentscript.ExecutionError, match=r"File\.read was refused by the approval policy"
    ):
        run_with(tmp_path, policy=denying, mode="auto")


def test_policy_files_load_from_yaml_and_json_and_reject_mistakes(tmp_path: Path) -> None:
    yaml_file = tmp_path / "approvals.yml"
    yaml_file.write_text(
        "mode: auto\nrules:\n  - scheme: http\n    method: post\n    decision: deny\n"
    )
    policy = ApprovalPolicy.load(yaml_file)
    assert policy.mode == "auto"
    assert policy.rules[0].decision == "deny"
    json_file = tmp_path / "approvals.json"
    json_file.write_text('{"defaults": {"effect": "run"}}')
    assert ApprovalPolicy.load(json_file).defaults == {"effect": "run"}
    bad = tmp_path / "bad.yml"
    bad.write_text("rules:\n  - scheme: file\n    decision: maybe\n")
    with pytest.raises(LoadError, match=r"bad.yml is invalid: rules.0.decision"):
        ApprovalPolicy.load(bad)
    typo = tmp_path / "typo.yml"
    typo.write_text("mdoe: auto\n")
    with pytest.raises(LoadError, match="mdoe"):
        ApprovalPolicy.load(typo)


def test_mode_from_the_policy_file_applies_unless_the_caller_sets_one(tmp_path: Path) -> None:
    policy = ApprovalPolicy.from_data({"mode": "auto"})
    assert ApprovalGate(make_tools(tmp_path), policy=policy).mode == "auto"
    assert ApprovalGate(make_tools(tmp_path), policy=policy, mode="deny").mode == "deny"
