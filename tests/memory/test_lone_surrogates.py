"""Lone surrogates are refused as invalid input at the memory service's boundary, on SQLite and
PostgreSQL, and no store write ever dies of one; a run whose data holds one is journaled.

Issue 13, finding 12: `MemoryService.remember("\\ud800")` raised UnicodeEncodeError from the
store; `run --input '{"a":"\\ud800"}'` printed "run journal stopped recording". A lone surrogate
comes from a JSON escape such as `"\\ud800"`, or from a file name that is not UTF-8.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.app.configuration import RunConfig
from agentscript.learn.journal import journal_path, shared_journal
from agentscript.memory import Entry, MemoryService, MemoryServiceError

pytest_plugins = ["memsvc_support"]

LONE = "\ud800"
STAMP = "2026-05-06T09:30:00.000Z"


@pytest.fixture
def memory_backend(each_memory_backend: str) -> str:
    return each_memory_backend


def refusal(call: Callable[[], Any]) -> MemoryServiceError:
    with pytest.raises(MemoryServiceError) as raised:
        call()
    assert raised.value.code == "invalid_argument"
    return raised.value


@pytest.mark.parametrize(
    ("field", "arguments"),
    [
        ("text", {"text": f"before {LONE} after"}),
        ("title", {"text": "ok", "title": f"t{LONE}"}),
        ("key", {"text": "ok", "key": f"k{LONE}", "kind": "fact"}),
        ("tags[0]", {"text": "ok", "tags": [f"x{LONE}"]}),
        ("context", {"text": "ok", "context": LONE}),
        ("source.reason", {"text": "ok", "source": {"reason": LONE}}),
        ("scope", {"text": "ok", "scope": f"/w/{LONE}"}),
    ],
)
def test_remember_refuses_a_lone_surrogate_in_any_field(
    memory: MemoryService, field: str, arguments: dict[str, Any]
) -> None:
    error = refusal(lambda: memory.remember(**arguments))
    assert error.field == field
    assert "lone surrogate (U+D800)" in error.message or field == "scope"
    assert memory.stats()["active"] == 0
    assert memory.remember("still works")["action"] == "created"


def test_update_and_recall_refuse_it_too(memory: MemoryService) -> None:
    made = memory.remember("a note about deploys")
    assert refusal(lambda: memory.update(made["id"], text=LONE)).field == "text"
    assert refusal(lambda: memory.recall(f"deploy {LONE}")).field == "query"
    assert memory.get(made["id"])["body"] == "a note about deploys"


def test_no_store_write_dies_of_one(memory: MemoryService) -> None:
    """An entry built by another path (an import, a summary) is refused by the store itself."""
    broken = Entry(
        id=str(uuid.uuid4()),
        kind="knowledge",
        scope="global",
        title="imported",
        body=f"body {LONE}",
        created_at=STAMP,
        updated_at=STAMP,
        accessed_at=STAMP,
        event_time=STAMP,
        bucket="2026-05-06",
    )
    with memory.store.transaction() as tx:
        assert refusal(lambda: tx.insert(broken)).field == "body"
    assert memory.stats(scope="global")["active"] == 0


def test_a_run_with_a_lone_surrogate_in_its_data_is_journaled(tmp_path: Path) -> None:
    program = tmp_path / "echo.as"
    program.write_text("agent A { main func(input { a: string }) { return input.a } }\n")
    config = RunConfig(model="mock", memory_db=tmp_path / "memory.db")
    result = agentscript.run(agentscript.load(program), {"a": LONE}, config)
    assert result.value == LONE
    assert result.journal is not None
    assert result.journal.wait(30) == []
    journal = shared_journal(journal_path(tmp_path))
    record = journal.resolve("last")
    assert record.status == "ok"
    # The input is kept escaped, and reads back as the same string.
    finished = journal.store.entries(record.run_id)[-1].data
    assert finished["value"] == LONE
