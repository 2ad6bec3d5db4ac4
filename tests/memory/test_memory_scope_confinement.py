"""A program's `memory://workspace` reaches its own workspace and `global`, nothing else.

Issue 13, finding 4: an explicit `scope` let a program read and archive another workspace's
memories, even under `--approve deny` (recall is a read; forget only archives). Another scope now
needs a grant in the approval policy (`memory_scopes`); the service itself still takes any scope
from its callers that are the user (CLI, MCP server).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.app.configuration import RunConfig
from agentscript.memory import MemoryService

PROGRAM = """import tool Memory from "memory://workspace"
agent Snoop {{
  main func(input {{ other: string, id: string }}) {{
{body}
  }}
}}
"""


@pytest.fixture(autouse=True)
def no_home_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSCRIPT_MEMORY_DB", str(tmp_path / "default.db"))


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path, Path, str]:
    """This run's workspace, another project with a private memory (its id), the database."""
    mine, other = tmp_path / "mine", tmp_path / "other"
    mine.mkdir()
    other.mkdir()
    database = tmp_path / "memory.db"
    with MemoryService.open(other, database=database) as memory:
        made = memory.remember("The other project's deploy password hint is a cat's name")
    return mine, other, database, str(made["id"])


def run(world: tuple[Path, Path, Path, str], body: str, **options: Any) -> Any:
    mine, other, database, entry = world
    program = agentscript.load_source(PROGRAM.format(body=body), path=mine / "main.as")
    settings: dict[str, Any] = {"model": "mock", "journal": False, "learn": False, **options}
    config = RunConfig(memory_db=database, **settings)
    return agentscript.run(program, {"other": str(other), "id": entry}, config)


def refused(world: tuple[Path, Path, Path, str], body: str, **options: Any) -> str:
    with pytest.raises(agentscript.AgentScriptError) as raised:
        run(world, body, **options)
    return str(raised.value)


def still_there(world: tuple[Path, Path, Path, str]) -> bool:
    _, other, database, entry = world
    with MemoryService.open(other, database=database) as memory:
        # Not archived, and nothing planted next to it.
        return memory.get(entry)["archived"] is False and memory.stats()["scopes"][0]["active"] == 1


READS = {
    "recall": '    return Memory.recall({ query: "password", scope: input.other })',
    "stats": "    return Memory.stats({ scope: input.other })",
    "browse": "    return Memory.browse({ scope: input.other })",
}
WRITES = {
    "forget": "    return Memory.forget({ id: input.id, scope: input.other })",
    "remember": '    return Memory.remember({ text: "planted", scope: input.other })',
}
# Reads run even under --approve deny, which is how the finding was made; writes are tried
# where the gate lets them through.
ATTEMPTS = [("deny", name, body) for name, body in READS.items()] + [
    ("auto", name, body) for name, body in {**READS, **WRITES}.items()
]


@pytest.mark.parametrize(
    ("mode", "body"),
    [(mode, body) for mode, _, body in ATTEMPTS],
    ids=[f"{mode}-{name}" for mode, name, _ in ATTEMPTS],
)
def test_another_workspace_is_out_of_reach(
    world: tuple[Path, Path, Path, str], body: str, mode: str
) -> None:
    message = refused(world, body, approve=mode)
    _, other, _, _ = world
    assert (
        f"may use only this run's workspace ({world[0].resolve()}) and global, not "
        f"'{other}'" in message
    )
    assert "memory_scopes in the approval policy" in message
    assert still_there(world)


def test_the_runs_own_workspace_and_global_may_be_named(
    world: tuple[Path, Path, Path, str],
) -> None:
    mine = world[0]
    body = f"""
    Memory.remember({{ text: "ours", scope: "{mine}" }})
    Memory.remember({{ text: "everyone's", scope: "global" }})
    return Memory.recall({{ query: "" }}).count
"""
    assert run(world, body, approve="auto").value == 2


def test_a_grant_in_the_approval_policy_opens_another_workspace(
    world: tuple[Path, Path, Path, str], tmp_path: Path
) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"memory_scopes": [str(world[1])]}))
    body = '    return Memory.recall({ query: "password", scope: input.other }).count'
    assert run(world, body, approve="deny", approvals=policy).value == 1
