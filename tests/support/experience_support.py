"""Support for the experience tests: runs learned from the way `agentscript run` does it, hand-
made execution traces for the rules, and a look into the memory and the task graph.

Every run uses the scripted mock model, the real host tools in a temporary workspace, the
journal in that workspace and a memory database under the test's temporary directory (named by
`RunConfig.memory_db`), so nothing reaches the home directory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import agentscript
from agentscript.app.learning import catch_up
from agentscript.learn.execution_trace import (
    ApprovalStep,
    FileTouch,
    TaskExecutionTrace,
    ToolStep,
)
from agentscript.learn.journal import Journal, journal_path, shared_journal
from agentscript.learn.journal_store import JournalEntry, RunRecord, RunStatus
from agentscript.memory.service import MemoryService
from agentscript.runtime.errors import AgentScriptError

# Reads the file the model names. With `look_up`, finds it first (the lesson of a missing file);
# the summary's total must be a number.
READER = """import llm Model from "openai://gpt-4.1-mini"
import tool File from "file://workspace"
import tool Find from "sh://find"

main agent Reader {
  model Model
  role "reader"
  description "Reads one report."

  main func(input { task string }) {
    use input.task
    plan = generate({ input: "Which file?" }) -> { file string  look_up boolean }
    path = plan.file
    if plan.look_up {
      found = Find.run({ path: ".", name: "*" + plan.file, type: "file", max: 1 })
      path = found.files[0]
    }
    text = File.read({ path: path })
    use text
    generate({ input: "Give the total." }) -> { total number }
  }
}
"""
# Writes a file: the approval gate asks, and the test's approver answers.
WRITER = """import llm Model from "openai://gpt-4.1-mini"
import tool File from "file://workspace"

main agent Writer {
  model Model
  role "writer"
  description "Writes notes."

  main func(input { task string }) {
    File.write({ path: "notes.md", content: input.task })
  }
}
"""
# Ends ok without calling a tool.
TALKER = """import llm Model from "openai://gpt-4.1-mini"

main agent Talker {
  model Model
  role "talker"
  description "Answers."

  main func(input { task string }) {
    use input.task
    generate({ input: "Answer.", attempts: 2 }) -> { answer string  score number }
  }
}
"""

FOUND = {"file": "data.csv", "look_up": True}
GUESSED = {"file": "data.csv", "look_up": False}


@dataclass(slots=True)
class LearnedRun:
    run_id: str
    value: Any
    error: AgentScriptError | None
    problems: list[str]


def make_workspace(base: Path) -> Path:
    workspace = base / "workspace"
    (workspace / "reports").mkdir(parents=True)
    (workspace / "reports" / "data.csv").write_text("amount\n1\n2\n", encoding="utf-8")
    return workspace


def learned_run(
    workspace: Path,
    database: Path | None,
    responses: Any,
    task: str = "Sum the data report",
    source: str = READER,
    name: str = "reader.as",
    **config: Any,
) -> LearnedRun:
    """Run `source` from `workspace` journaled, as `agentscript run` does, wait until the
    journal has it, then learn from it as the next reader of the workspace's memory does."""
    path = workspace / name
    path.write_text(source, encoding="utf-8")
    script = workspace.parent / f"{name}.responses.json"
    script.write_text(json.dumps(responses), encoding="utf-8")
    settings: dict[str, Any] = {"model": "mock", "responses": script, "workspace": workspace}
    if database is not None:
        settings["memory_db"] = database
    settings.update(config)
    program = agentscript.load(path)
    try:
        result = agentscript.run(program, {"task": task}, agentscript.RunConfig(**settings))
    except AgentScriptError as error:
        failed = error.journal
        if failed is None:
            return LearnedRun("", None, error, [])
        problems = failed.wait(30) + catch_up(workspace, database).problems
        return LearnedRun(failed.run_id, None, error, problems)
    if result.journal is None:
        return LearnedRun("", result.value, None, [])
    problems = result.journal.wait(30) + catch_up(workspace, database).problems
    return LearnedRun(result.journal.run_id, result.value, None, problems)


def journal_of(workspace: Path) -> Journal:
    return shared_journal(journal_path(workspace))


def open_memory(workspace: Path, database: Path) -> MemoryService:
    return MemoryService.open(workspace, database=database)


def experiences(memory: MemoryService, *, archived: bool = False) -> list[dict[str, Any]]:
    """Every experience entry, newest first, bodies whole."""
    found = memory.recall(
        "",
        kind="knowledge",
        tags=["experience"],
        include_archived=archived,
        limit=200,
        body_chars=100_000,
    )
    return list(found["results"])


def run_record(
    run_id: str = "20270101-000000-aaaaaa",
    status: RunStatus = "ok",
    workspace: str | None = "/work/app",
    program: str | None = "/work/app/report.as",
    started_at: float = 1_800_000_000.0,
) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        status=status,
        started_at=started_at,
        heartbeat_at=started_at + 1,
        pid=1,
        host="host",
        program=program,
        workspace=workspace,
        ended_at=started_at + 1.5,
    )


def tool_step(pair_id: int, tool: str, ok: bool = True, path: str = "data.csv") -> ToolStep:
    return ToolStep(
        pair_id=pair_id,
        tool=tool,
        uri="file://workspace",
        args=[{"path": path}],
        ok=ok,
        files=[path],
        approval_id=None,
    )


def refusal(
    tool: str = "File.write", by: str = "user", event_ids: tuple[int, ...] = (4, 5)
) -> ApprovalStep:
    return ApprovalStep(
        approval_id="approval-1",
        tool=tool,
        uri="file://workspace",
        risk="effect",
        decision="refused",
        mode="ask",
        by=by,
        event_ids=list(event_ids),
    )


def execution_trace(
    run: RunRecord,
    *,
    tools: list[ToolStep] | None = None,
    approvals: list[ApprovalStep] | None = None,
    failure: str = "",
    goal: Any = None,
    files: list[FileTouch] | None = None,
) -> TaskExecutionTrace:
    chain = tools or []
    return TaskExecutionTrace(
        run_id=run.run_id,
        status=run.status,
        entry=None,
        goal={"task": "Sum the March report"} if goal is None else goal,
        tool_chain=chain,
        approval_trace=approvals or [],
        files=files
        if files is not None
        else [FileTouch(path=step["files"][0], actions=["read"]) for step in chain],
        result=None,
        success=run.status == "ok",
        failure_reason=failure,
        retry_count=0,
        verification=[],
        source_event_ids=[step["pair_id"] for step in chain],
    )


def generate_entry(
    run_id: str,
    event_id: int,
    *,
    ok: bool = True,
    attempts: int = 1,
    instruction: str = "Give the total.",
    fields: dict[str, str] | None = None,
) -> JournalEntry:
    """A generate's journal entry with the return schema of `fields` (name → JSON type)."""
    properties = {name: {"type": kind} for name, kind in (fields or {"total": "number"}).items()}
    data: dict[str, Any] = {
        "instruction": instruction,
        "attempts": attempts,
        "context": {"returnSchema": {"type": "object", "properties": properties}},
    }
    if not ok:
        data.update(ok=False, error="LLM result field must be a number")
    return JournalEntry(run_id, event_id, "end", "generate", event_id, None, 0, 0.0, data)
