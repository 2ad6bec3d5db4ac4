"""`import tool Memory from "memory://workspace"` (and `memory://global`): programs that use the
long-term memory service, run through the public API with the mock model and a temporary
database, plus the scheme tool's risk levels and its life cycle in the composition root."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.app.composition import build_run
from agentscript.app.configuration import RunConfig
from agentscript.app.memory_service import memory_tools
from agentscript.memory import MemoryService
from agentscript.memory.adapter import METHODS, MemoryTools
from agentscript.providers.llm.mock import ScriptedLlm
from agentscript.runtime.ports import ToolCall

HEADER = """import llm Model from "openai://gpt-4.1-mini"
import tool Memory from "memory://workspace"
import tool Global from "memory://global"

main agent Keeper {{
  model Model
  role "Assistant"
  description "Remembers what it learns."

  main func(input {{ task string }}) {{
{body}
  }}
}}
"""


@pytest.fixture(autouse=True)
def no_home_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever opens the default database opens one of this test's, never the home one."""
    monkeypatch.setenv("AGENTSCRIPT_MEMORY_DB", str(tmp_path / "default.db"))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


def run(
    workspace: Path,
    database: Path,
    body: str,
    task: str = "deploy",
    **options: Any,
) -> agentscript.RunResult:
    source = HEADER.format(body=body)
    program = agentscript.load_source(source, path=workspace / "main.as")
    settings: dict[str, Any] = {"model": "mock", "approve": "auto", "journal": False, **options}
    config = RunConfig(memory_db=database, **settings)
    return agentscript.run(program, {"task": task}, config)


def failure(workspace: Path, database: Path, body: str, **options: Any) -> str:
    with pytest.raises(agentscript.AgentScriptError) as caught:
        run(workspace, database, body, **options)
    return str(caught.value)


def tool_events(result: agentscript.RunResult) -> list[dict[str, Any]]:
    return [event["data"] for event in result.trace if event["kind"] == "tool"]


# ------------------------------------------------------------------------------ programs


def test_a_program_remembers_recalls_corrects_and_forgets(workspace: Path, database: Path) -> None:
    result = run(
        workspace,
        database,
        """
    made = Memory.remember({ text: "Deploy with make release", tags: ["deploy"] })
    fact = Global.remember({ text: "User prefers short answers", kind: "fact", key: "style" })
    found = Memory.recall({ query: input.task })
    fixed = Memory.update({ id: made.id, text: "Deploy with make release-all" })
    versions = Global.history({ key: "style" })
    gone = Memory.forget({ id: fixed.id, reason: "moved to CI" })
    after = Memory.recall({ query: input.task })
    stats = Memory.stats()
    check = Memory.check({})
    pages = Memory.browse({ by: "month" })
    return { made: made, fact: fact, found: found, fixed: fixed, versions: versions,
             gone: gone, after: after.count, stats: stats, check: check, pages: pages }
""",
    )
    value = result.value
    assert value["made"]["action"] == "created"
    workspace_id = value["made"]["scope"]
    assert workspace_id == str(workspace.resolve())
    assert value["fact"]["scope"] == "global"
    assert [hit["id"] for hit in value["found"]["results"]] == [value["made"]["id"]]
    assert value["fixed"]["id"] == value["made"]["id"] and value["fixed"]["previous_version"]
    assert [version["status"] for version in value["versions"]["versions"]] == ["active"]
    assert value["gone"]["action"] == "archived"
    assert value["after"] == 0
    assert [scope["scope"] for scope in value["stats"]["scopes"]] == [workspace_id, "global"]
    assert value["stats"]["active"] == 1
    assert value["check"]["ok"] is True
    assert value["pages"]["by"] == "month"
    events = tool_events(result)
    assert [event["method"] for event in events] == [
        "remember",
        "remember",
        "recall",
        "update",
        "history",
        "forget",
        "recall",
        "stats",
        "check",
        "browse",
    ]
    assert {event["scheme"] for event in events} == {"memory"}
    # The run used the database it was given, and nothing else.
    with MemoryService.open(workspace, database=database) as memory:
        assert memory.get(value["fact"]["id"])["key"] == "style"


def test_use_of_the_digest_puts_its_text_into_the_prompt(workspace: Path, database: Path) -> None:
    with MemoryService.open(workspace, database=database) as memory:
        memory.remember("User prefers short answers", kind="fact", key="style", scope="global")
        memory.remember("Deploy with make release", tags=["deploy"])
        expected = memory.digest(max_bytes=600)["text"]
    assert "- style: User prefers short answers" in expected
    result = run(
        workspace,
        database,
        """
    use Memory.digest({ max_bytes: 600 }) as memory
    answer = generate({ input: "Plan the deploy." }) -> { text: string }
    digest = Memory.digest({ max_bytes: 600 })
    return { digest: digest }
""",
    )
    assert result.value["digest"] == expected
    (generate,) = [event["data"] for event in result.trace if event["kind"] == "generate"]
    prompt = generate["context"]["finalUserMessage"]
    assert prompt.startswith(
        f"Context:\n[memory] Memory.digest({{ max_bytes: 600 }}):\n{expected}\n"
    )
    assert "Instruction:\nPlan the deploy." in prompt


def test_the_digest_of_an_empty_memory_is_empty_text(workspace: Path, database: Path) -> None:
    result = run(workspace, database, "    return Memory.digest({ max_bytes: 300 })")
    assert result.value == ""


def test_experiences_are_compact_lines_for_the_task(workspace: Path, database: Path) -> None:
    with MemoryService.open(workspace, database=database) as memory:
        for index in range(6):
            memory.remember(
                f"Deploy lesson {index}: run the migrations first\n\nWhen to apply: deploys"
                "\n\nEvidence:\n- run 20270101-000000-aaaaaa\n\nConfidence: 0.70",
                tags=["experience", "procedure"],
            )
        memory.remember("Deploy on Fridays is fine", tags=["opinion"])
    result = run(
        workspace,
        database,
        """
    some = Memory.experiences({ task: input.task })
    two = Memory.experiences({ task: input.task, limit: 2 })
    tight = Memory.experiences({ task: input.task, budget: 20 })
    return { some: some, two: two, tight: tight }
""",
    )
    lines = result.value["some"].splitlines()
    assert len(lines) == 5
    assert all(
        line.startswith("- Deploy lesson ")
        and line.endswith(": run the migrations first (confidence 0.70, 1 run)")
        for line in lines
    )
    # No ids, run ids, tags or evidence: only what a prompt needs.
    assert "20270101" not in result.value["some"] and "experience" not in result.value["some"]
    assert len(result.value["two"].splitlines()) == 2
    assert len(result.value["tight"].splitlines()) == 1


def test_memory_global_reads_and_writes_only_the_global_scope(
    workspace: Path, database: Path
) -> None:
    with MemoryService.open(workspace, database=database) as memory:
        memory.remember("Workspace note about deploys")
    result = run(
        workspace,
        database,
        """
    Global.remember({ text: "Global note about deploys" })
    mine = Memory.recall({ query: "deploys" })
    theirs = Global.recall({ query: "deploys" })
    pinned = Global.recall({ query: "deploys", scope: "global" })
    return { mine: mine.count, theirs: theirs.results, pinned: pinned.count }
""",
    )
    assert result.value["mine"] == 2
    assert [hit["scope"] for hit in result.value["theirs"]] == ["global"]
    assert result.value["pinned"] == 1
    message = failure(
        workspace, database, '    return Global.recall({ query: "x", scope: "/elsewhere" })'
    )
    assert message == (
        "Tool Global.recall (memory://global) failed: memory://global reads and writes only "
        "the global scope, not '/elsewhere': leave scope out, or import memory://workspace "
        "at 11:12"
    )


def test_refusals_fail_the_call_with_the_services_message(workspace: Path, database: Path) -> None:
    assert failure(workspace, database, "    return Memory.recall({ limit: 500 })") == (
        "Tool Memory.recall (memory://workspace) failed: limit: Input should be less than or "
        "equal to 200 at 11:12"
    )
    assert failure(workspace, database, '    return Memory.forget({ id: "nope" })') == (
        "Tool Memory.forget (memory://workspace) failed: no entry 'nope' in scope "
        f"{workspace.resolve()} or global at 11:12"
    )
    assert failure(workspace, database, '    return Memory.remember("text")') == (
        "Tool Memory.remember (memory://workspace) failed: Memory.remember expects one json "
        "object argument at 11:12"
    )
    assert failure(workspace, database, "    return Memory.summarise({})") == (
        "Tool Memory.summarise (memory://workspace) failed: Unsupported memory method "
        "'summarise'. Supported: remember, remember_many, recall, update, forget, stats, "
        "check, browse, digest, history, checkpoint, experiences at 11:12"
    )


def test_only_workspace_and_global_are_memory_uris(workspace: Path, database: Path) -> None:
    source = HEADER.replace("memory://global", "memory://team").format(
        body="    return Global.stats()"
    )
    program = agentscript.load_source(source, path=workspace / "main.as")
    with pytest.raises(agentscript.AgentScriptError) as caught:
        agentscript.run(
            program, {"task": "x"}, RunConfig(model="mock", memory_db=database, journal=False)
        )
    assert str(caught.value) == (
        "Tool Global.stats (memory://team) failed: Unsupported memory URI 'memory://team': use "
        "memory://workspace or memory://global at 11:12"
    )


def test_a_broken_memory_yml_is_reported(workspace: Path, database: Path) -> None:
    (workspace / ".agentscript").mkdir()
    (workspace / ".agentscript" / "memory.yml").write_text("digest: {max_bytes: many}\n")
    message = failure(workspace, database, "    return Memory.stats()")
    assert message.startswith("Tool Memory.stats (memory://workspace) failed: ")
    assert "memory.yml: digest.max_bytes: Input should be a valid integer" in message


def test_without_memory_db_the_environment_names_the_database(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = tmp_path / "from-env.db"
    monkeypatch.setenv("AGENTSCRIPT_MEMORY_DB", str(database))
    source = HEADER.format(body='    return Memory.remember({ text: "Found by the env" })')
    program = agentscript.load_source(source, path=workspace / "main.as")
    # A model the caller hands in (not the built-in mock) is a run that means it.
    config = RunConfig(model=ScriptedLlm([]), approve="auto", journal=False)
    created = agentscript.run(program, {"task": "x"}, config).value
    with MemoryService.open(workspace, database=database) as memory:
        assert memory.get(created["id"])["title"] == "Found by the env"


def test_a_mock_run_remembers_into_a_scratch_memory_that_goes_with_it(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    users = tmp_path / "users.db"
    monkeypatch.setenv("AGENTSCRIPT_MEMORY_DB", str(users))
    with MemoryService.open(workspace, database=users) as memory:
        memory.remember("The user's own fact", kind="fact")
    body = """    Memory.remember({ text: "Tried out under the mock" })
    return Memory.recall({ query: "tried mock" })"""
    program = agentscript.load_source(HEADER.format(body=body), path=workspace / "main.as")
    recalled = agentscript.run(
        program, {"task": "x"}, RunConfig(model="mock", approve="auto", journal=False)
    ).value
    # Within the run the program sees what it remembered, and only that.
    assert [hit["title"] for hit in recalled["results"]] == ["Tried out under the mock"]
    with MemoryService.open(workspace, database=users) as memory:
        stored = memory.recall("", limit=10).to_json()
    assert [hit["title"] for hit in stored["results"]] == ["The user's own fact"]
    assert not list(Path(tempfile.gettempdir()).glob("agentscript-mock-memory-*"))


# ------------------------------------------------------------------------ risk and gate


@pytest.mark.parametrize(
    ("method", "arguments", "risk"),
    [
        ("recall", [{"query": "x"}], "read"),
        ("stats", [], "read"),
        ("check", [{}], "read"),
        ("browse", [{}], "read"),
        ("history", [{"key": "k"}], "read"),
        ("digest", [{"max_bytes": 300}], "read"),
        ("experiences", [{"task": "x"}], "read"),
        ("remember", [{"text": "x"}], "effect"),
        ("update", [{"id": "x", "text": "y"}], "effect"),
        ("forget", [{"id": "x"}], "effect"),
        ("forget", [{"id": "x", "purge": False}], "effect"),
        ("forget", [{"id": "x", "purge": True}], "destructive"),
    ],
)
def test_risk_of_each_method(
    workspace: Path, database: Path, method: str, arguments: list[Any], risk: str
) -> None:
    tools = memory_tools(workspace, database, None)
    try:
        assert tools.risk(ToolCall("Memory", "memory://workspace", method, arguments)) == risk
    finally:
        tools.close()


def test_every_tool_is_a_method() -> None:
    assert sorted(METHODS) == sorted(
        [
            "remember",
            "remember_many",
            "recall",
            "update",
            "forget",
            "stats",
            "check",
            "browse",
            "digest",
            "history",
            "checkpoint",
            "experiences",
        ]
    )


def test_the_approval_gate_lets_reads_run_and_refuses_writes_when_denied(
    workspace: Path, database: Path
) -> None:
    with MemoryService.open(workspace, database=database) as memory:
        memory.remember("Deploy with make release")
    result = run(
        workspace, database, '    return Memory.recall({ query: "deploy" }).count', approve="deny"
    )
    assert result.value == 1
    message = failure(
        workspace, database, '    return Memory.remember({ text: "no" })', approve="deny"
    )
    assert message.startswith("Tool Memory.remember (memory://workspace) failed: ")
    assert "refused" in message
    with MemoryService.open(workspace, database=database) as memory:
        assert memory.stats()["active"] == 1


def test_a_dry_run_reads_memory_but_writes_nothing(workspace: Path, database: Path) -> None:
    with MemoryService.open(workspace, database=database) as memory:
        memory.remember("Deploy with make release")
    result = run(
        workspace,
        database,
        """
    made = Memory.remember({ text: "Written only for real" })
    found = Memory.recall({ query: "deploy" })
    return { made: made, found: found.count }
""",
        model="dry-run",
    )
    assert result.value == {"made": {"ok": True, "dryRun": True, "effects": []}, "found": 1}
    with MemoryService.open(workspace, database=database) as memory:
        assert memory.stats()["active"] == 1


def test_the_service_opens_on_first_use_and_closes_with_the_run(
    workspace: Path, database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[MemoryTools] = []
    original = MemoryTools.close

    def close(self: MemoryTools) -> None:
        closed.append(self)
        original(self)

    monkeypatch.setattr(MemoryTools, "close", close)
    config = RunConfig(model="mock", approve="auto", memory_db=database, journal=False)
    idle = build_run(config, str(workspace / "main.as"))
    idle.close()
    assert closed == [] and not database.exists()

    setup = build_run(config, str(workspace / "main.as"))
    tools = setup.options.tools
    assert tools is not None
    try:
        created = tools.call(
            ToolCall("Memory", "memory://workspace", "remember", [{"text": "Opened lazily"}])
        )
    finally:
        setup.close()
    assert len(closed) == 1 and database.exists()
    with MemoryService.open(workspace, database=database) as memory:
        assert memory.get(created["id"])["title"] == "Opened lazily"


class LinkedTools:
    """A ToolUsage that says how much each tool is used (by its lower-case name)."""

    def __init__(self, strengths: dict[str, float]) -> None:
        self.strengths = strengths

    def strength(self, tool: str) -> float:
        return self.strengths.get(tool, 0.0)


def _lesson(memory: MemoryService, lesson: str, key: str, tags: list[str]) -> None:
    body = f"{lesson}\n\nWhen to apply: x\n\nEvidence:\n- none\n\nConfidence: 0.70"
    memory.remember(body, key=key, title=lesson, tags=["experience", *tags])


def test_confirmed_reinforced_and_linked_experiences_come_first(
    workspace: Path, database: Path
) -> None:
    from agentscript.memory.tools import call_tool
    from agentscript.runtime.tokens import estimate_tokens

    with MemoryService.open(workspace, database=database) as memory:
        _lesson(memory, "Check the report first.", "experience:a", ["failure"])
        _lesson(memory, "Seen often.", "experience:b", ["success"])
        for _ in range(4):  # the same value again: reinforced, not a new version
            _lesson(memory, "Seen often.", "experience:b", ["success"])
        _lesson(memory, "Confirmed by the user.", "experience:c", ["failure", "important"])
        _lesson(memory, "About a tool in use.", "experience:d", ["failure", "tool:file.read"])

        def lines(**arguments: Any) -> list[str]:
            found = call_tool(memory, "memory_experiences", {"task": "", **arguments})
            return str(found["text"]).splitlines()

        unlinked = lines()
        memory.tool_usage = LinkedTools({"file.read": 0.8})
        linked = lines()
        first = "- IMPORTANT: Confirmed by the user. (confidence 0.70, 1 run)"
        budgeted = lines(budget=estimate_tokens(first) + 2)

    assert unlinked[:2] == [
        "- IMPORTANT: Confirmed by the user. (confidence 0.70, 1 run)",
        "- Seen often. (confidence 0.70, 5 runs)",
    ]
    # The tool links the workspace's runs strengthened rank a lesson about that tool above
    # an equally reinforced one about nothing in use.
    assert linked[2] == "- About a tool in use. (confidence 0.70, 1 run)"
    assert unlinked.index("- About a tool in use. (confidence 0.70, 1 run)") > 1
    # Whole lines only, within the budget.
    assert budgeted == [first]
    assert not any("experience:" in line or str(workspace) in line for line in linked)


def test_no_experiences_is_said_in_words(workspace: Path, database: Path) -> None:
    from agentscript.memory.tools import call_tool

    with MemoryService.open(workspace, database=database) as memory:
        found = call_tool(memory, "memory_experiences", {"task": "anything"})
    assert found["text"] == "(no experiences yet)"
