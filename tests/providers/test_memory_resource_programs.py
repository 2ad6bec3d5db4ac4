"""AgentScript programs with `import memory`, run through the public API on every backend.

The program stores a note and reads it back; the test checks the values the program sees,
the `memory` trace events, and that errors carry the program location.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import agentscript
from agentscript.providers.memory.router import MemoryRouter
from timings import without_timings

if TYPE_CHECKING:
    from memory_support import MemoryBackend

pytest_plugins = ["memory_support"]

PROGRAM = """import memory Notes from "{uri}"

main agent Keeper {{
  main func(input {{ note string  kind string }}) {{
    added = Notes.add({{ kind: input.kind, text: input.note, tags: ["ünï"] }})
    Notes.add({{ kind: "other", text: input.note }})
    found = Notes.query({{ kind: input.kind, text: "NOTE", limit: 5 }})
    return {{ id: added.id, found: found, count: found.length }}
  }}
}}
"""

# The memory URI as written in the program, per backend (relative where the backend allows).
WRITTEN = {
    "jsonl": "file://./.agentscript/notes.jsonl",
    "sqlite": "sqlite://./.agentscript/memory.db#notes",
}


def run_keeper(root: Path, uri: str, note: str = "First note") -> agentscript.RunResult:
    path = root / "keeper.as"
    path.write_text(PROGRAM.format(uri=uri), encoding="utf-8")
    router = MemoryRouter(root, root)
    try:
        config = agentscript.RunConfig(model="mock", memory=router)
        return agentscript.run(agentscript.load(path), {"note": note, "kind": "lesson"}, config)
    finally:
        router.close()


def memory_events(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [without_timings(event["data"]) for event in trace if event["kind"] == "memory"]


@pytest.mark.parametrize("name", ["jsonl", "sqlite", "postgres"])
def test_a_program_adds_and_queries_memory(
    open_backend: Callable[[str], MemoryBackend], tmp_path: Path, name: str
) -> None:
    backend = open_backend(name)
    written = WRITTEN.get(name) or backend.uri("notes")
    result = run_keeper(tmp_path, written)

    value = result.value
    record = {"kind": "lesson", "text": "First note", "tags": ["ünï"]}
    assert value["count"] == 1
    assert [envelope["record"] for envelope in value["found"]] == [record]
    assert value["found"][0]["id"] == value["id"]

    add, _, query = memory_events(result.trace)
    # The loader made relative file and SQLite URIs absolute; the trace shows that form.
    uri = written.replace("./", f"{tmp_path}/") if name in WRITTEN else written
    assert add == {
        "memory": "Notes",
        "operation": "add",
        "uri": uri,
        "args": record,
        "result": value["found"][0],
        "count": None,
        "id": value["id"],
        "record": record,
    }
    assert query == {
        "memory": "Notes",
        "operation": "query",
        "uri": uri,
        "args": {"kind": "lesson", "text": "NOTE", "limit": 5},
        "result": value["found"],
        "count": 1,
    }


@pytest.mark.parametrize("name", ["jsonl", "sqlite", "postgres"])
def test_memory_persists_between_runs(
    open_backend: Callable[[str], MemoryBackend], tmp_path: Path, name: str
) -> None:
    backend = open_backend(name)
    written = WRITTEN.get(name) or backend.uri("notes")
    first = run_keeper(tmp_path, written, "First note").value
    second = run_keeper(tmp_path, written, "Second note").value
    assert second["count"] == 2
    assert [envelope["id"] for envelope in second["found"]] == [second["id"], first["id"]]
    if name in WRITTEN:
        assert (tmp_path / ".agentscript").is_dir()


def test_a_bad_query_fails_at_its_place_in_the_program(tmp_path: Path) -> None:
    path = tmp_path / "bad.as"
    path.write_text(
        'import memory Notes from "file://notes.jsonl"\n\n'
        "main agent Keeper {\n"
        "  main func() {\n"
        "    return Notes.query({ limit: 0 })\n"
        "  }\n"
        "}\n"
    )
    router = MemoryRouter(tmp_path, tmp_path)
    config = agentscript.RunConfig(model="mock", memory=router)
    with pytest.raises(agentscript.ExecutionError) as caught:
        agentscript.run(agentscript.load(path), {}, config)
    router.close()
    assert caught.value.bare_message == "memory.query limit must be a positive integer"
    assert caught.value.located().endswith(f"at {path}:5:12")


def test_a_corrupt_store_fails_with_the_memory_named(tmp_path: Path) -> None:
    (tmp_path / "notes.jsonl").write_text("{torn\n")
    path = tmp_path / "reader.as"
    path.write_text(
        'import memory Notes from "file://notes.jsonl"\n\n'
        "main agent Reader {\n"
        "  main func() {\n"
        "    return Notes.query({})\n"
        "  }\n"
        "}\n"
    )
    router = MemoryRouter(tmp_path, tmp_path)
    config = agentscript.RunConfig(model="mock", memory=router)
    with pytest.raises(agentscript.ExecutionError) as caught:
        agentscript.run(agentscript.load(path), {}, config)
    router.close()
    assert caught.value.bare_message.startswith(
        f"Memory Notes.query (file://{tmp_path}/notes.jsonl) failed: "
        f"Invalid memory JSONL at {tmp_path}/notes.jsonl:1: "
    )
