"""The execution trace of a run: what it was asked, which tools it used with which approvals,
which files it touched, how it ended and what that rests on.

Built from the run's journal entries when the run ends (ok, error or interrupted) and kept on
the run's EPISODE node, it is the material later experience distillation works from, so every
field is a summary (see `sensitive`) and `source_event_ids` names the events it came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, NotRequired, TypedDict

from agentscript.learn.graph import tool_name, tool_succeeded, touched_files
from agentscript.learn.journal_store import RUN_KIND, JournalEntry, RunRecord, RunStatus
from agentscript.learn.sensitive import summarise, summarise_text

INTERRUPTED_REASON = "interrupted: the run ended before it finished"


class ToolStep(TypedDict):
    pair_id: int
    tool: str
    uri: str
    args: Any
    ok: bool
    files: list[str]
    # The approval the call had (approved, or refused: a refused call fails).
    approval_id: str | None
    # Why a call that raised failed (a refusal, a missing file…); absent when it returned.
    error: NotRequired[str]


class ApprovalStep(TypedDict):
    approval_id: str
    tool: str
    uri: str
    risk: str | None
    decision: str
    mode: str | None
    by: str | None
    event_ids: list[int]


class FileTouch(TypedDict):
    path: str
    actions: list[str]


class Check(TypedDict):
    check: str
    subject: str
    passed: bool
    event_id: int


@dataclass(frozen=True, slots=True)
class TaskExecutionTrace:
    """The seed's TaskExecutionTrace for one run (`run_id` stands for its conversation, turn
    and task graph ids)."""

    run_id: str
    status: RunStatus
    entry: str | None
    goal: Any
    tool_chain: list[ToolStep]
    approval_trace: list[ApprovalStep]
    files: list[FileTouch]
    result: Any
    success: bool
    failure_reason: str
    # Repair attempts: generate attempts after the first, summed over the run.
    retry_count: int
    verification: list[Check]
    source_event_ids: list[int]

    def to_json(self) -> dict[str, Any]:
        # The fields are JSON data already; a shallow copy is enough (asdict would deep-copy).
        return {field.name: getattr(self, field.name) for field in fields(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskExecutionTrace:
        return cls(**data)


def build_execution_trace(
    run: RunRecord, entries: Sequence[JournalEntry], status: RunStatus
) -> TaskExecutionTrace:
    """The trace of a run from its journal entries in `seq` order; `status` is the run's
    effective status (a dead "running" run is "interrupted")."""
    workspace = run.workspace
    start = next((e for e in entries if e.kind == RUN_KIND and e.phase == "start"), None)
    end = next((e for e in entries if e.kind == RUN_KIND and e.phase == "end"), None)
    tool_chain: list[ToolStep] = []
    approvals: dict[str, ApprovalStep] = {}
    decided: dict[tuple[int | None, str, str, str], str] = {}
    files: dict[str, set[str]] = {}
    checks: list[Check] = []
    asked: dict[str, Any] = {}
    sources: list[int] = []
    repairs = 0
    for entry in entries:
        if entry.phase != "end" or entry.event_id is None:
            continue
        data = entry.data
        if entry.kind == "input":
            asked[str(data.get("path"))] = summarise(data.get("value"), workspace)
        elif entry.kind == "generate":
            attempts = int(data.get("attempts") or 1)
            repairs += attempts - 1
            context = data.get("context")
            if isinstance(context, dict) and context.get("returnSchema") is not None:
                checks.append(
                    Check(
                        check="output shape",
                        subject=_generate_subject(data.get("instruction"), workspace),
                        passed=data.get("ok") is not False,
                        event_id=entry.event_id,
                    )
                )
        elif entry.kind == "approval":
            _approval(approvals, decided, entry, workspace)
        elif entry.kind == "tool":
            name = tool_name(data)
            touched = touched_files(data, workspace)
            for path, action in touched:
                files.setdefault(path, set()).add(action)
            key = (
                entry.parent,
                str(data.get("tool")),
                str(data.get("method")),
                str(data.get("uri")),
            )
            ok = tool_succeeded(data)
            step = ToolStep(
                pair_id=entry.event_id,
                tool=name,
                uri=summarise_text(str(data.get("uri")), workspace),
                args=summarise(data.get("args"), workspace),
                ok=ok,
                files=sorted({path for path, _ in touched}),
                approval_id=decided.pop(key, None),
            )
            if "error" in data:
                step["error"] = summarise_text(str(data["error"]), workspace, preview=200)
            tool_chain.append(step)
            result = data.get("result")
            if isinstance(result, dict) and isinstance(result.get("ok"), bool):
                checks.append(
                    Check(check="tool ok", subject=name, passed=ok, event_id=entry.event_id)
                )
        else:
            continue
        sources.append(entry.event_id)
    end_data = end.data if end is not None and isinstance(end.data, dict) else {}
    start_data = start.data if start is not None and isinstance(start.data, dict) else {}
    goal_input = start_data.get("input")
    goal = summarise(goal_input, workspace) if goal_input not in (None, {}) else (asked or None)
    return TaskExecutionTrace(
        run_id=run.run_id,
        status=status,
        entry=run.entry,
        goal=goal,
        tool_chain=tool_chain,
        approval_trace=list(approvals.values()),
        files=[FileTouch(path=path, actions=sorted(done)) for path, done in sorted(files.items())],
        result=summarise(end_data.get("value"), workspace) if status == "ok" else None,
        success=status == "ok",
        failure_reason=_failure_reason(status, end_data, run, workspace),
        retry_count=repairs,
        verification=checks,
        source_event_ids=sources,
    )


def _approval(
    approvals: dict[str, ApprovalStep],
    decided: dict[tuple[int | None, str, str, str], str],
    entry: JournalEntry,
    workspace: str | None,
) -> None:
    data = entry.data
    assert entry.event_id is not None
    approval_id = str(data.get("approval_id"))
    step = approvals.get(approval_id)
    if step is None:
        step = ApprovalStep(
            approval_id=approval_id,
            tool=tool_name(data),
            uri=summarise_text(str(data.get("uri")), workspace),
            risk=data.get("risk"),
            decision=str(data.get("decision")),
            mode=data.get("mode"),
            by=data.get("by"),
            event_ids=[],
        )
        approvals[approval_id] = step
    step["decision"] = str(data.get("decision"))
    step["by"] = data.get("by")
    step["event_ids"].append(entry.event_id)
    if step["decision"] != "pending" and data.get("start") is None:
        key = (entry.parent, str(data.get("tool")), str(data.get("method")), str(data.get("uri")))
        decided[key] = approval_id


def _generate_subject(instruction: Any, workspace: str | None) -> str:
    if instruction is None:
        return "generate"
    text = instruction if isinstance(instruction, str) else str(summarise(instruction, workspace))
    return "generate " + summarise_text(text, workspace, preview=60)


def _failure_reason(
    status: RunStatus, end_data: dict[str, Any], run: RunRecord, workspace: str | None
) -> str:
    if status == "ok" or status == "running":
        return ""
    if status == "interrupted":
        return INTERRUPTED_REASON
    error = end_data.get("error") or run.error or "the run failed"
    return summarise_text(str(error), workspace, preview=400)
