"""The library calls behind `agentscript memory show/export/import/repair`, on every backend."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agentscript.app.memory_resources import export, import_records, repair, show
from agentscript.providers.memory.store import MemoryStoreError
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.jsjson import stringify

if TYPE_CHECKING:
    from memory_support import MemoryBackend

pytest_plugins = ["memory_support"]


def test_show_applies_the_query_rules(backend: MemoryBackend) -> None:
    for index in range(4):
        backend.add({"kind": "lesson" if index % 2 else "note", "text": f"Tip Ä{index}"})
    uri = backend.uri()
    assert [e["record"]["text"] for e in show(uri)] == ["Tip Ä3", "Tip Ä2", "Tip Ä1", "Tip Ä0"]
    assert [e["record"]["text"] for e in show(uri, kind="lesson", limit=1)] == ["Tip Ä3"]
    assert [e["record"]["text"] for e in show(uri, text="ä2")] == ["Tip Ä2"]
    with pytest.raises(ExecutionError, match="limit must be a positive integer"):
        show(uri, limit=0)


def test_show_and_export_of_a_missing_store_are_empty(backend: MemoryBackend) -> None:
    assert show(backend.uri("missing")) == []
    assert list(export(backend.uri("missing"))) == []


def test_an_export_moves_between_backends_unchanged(
    open_backend: Callable[[str], MemoryBackend], backend: MemoryBackend
) -> None:
    source = open_backend("jsonl")
    for index in range(3):
        source.add({"kind": "lesson", "text": f"t{index}", "n": index})
    lines = [stringify(envelope) + "\n" for envelope in export(source.uri())]
    counts = import_records(backend.uri("copy"), lines)
    assert (counts.added, counts.skipped) == (3, 0)
    assert list(export(backend.uri("copy"))) == list(export(source.uri()))
    assert backend.query({"kind": "lesson"}, namespace="copy") == source.query({"kind": "lesson"})
    again = import_records(backend.uri("copy"), lines)
    assert (again.added, again.skipped) == (0, 3)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"^Invalid memory JSONL at dump\.jsonl:2: "),
        ('{"id": "x", "record": {}}', r"^Invalid memory JSONL envelope at dump\.jsonl:2$"),
    ],
)
def test_a_bad_import_line_imports_nothing(backend: MemoryBackend, line: str, message: str) -> None:
    good = '{"id":"a","created_at":"2026-01-01T00:00:00.000Z","updated_at":"2026-01-01T00:00:00.000Z","record":{}}'
    with pytest.raises(MemoryStoreError, match=message):
        import_records(backend.uri(), [good, line], source="dump.jsonl")
    assert show(backend.uri()) == []


def test_import_keeps_only_the_envelope_fields(backend: MemoryBackend) -> None:
    line = '{"id":"a","created_at":"c","updated_at":"u","record":{"k":1},"extra":true}'
    import_records(backend.uri(), ["", line, "   "])
    assert show(backend.uri()) == [
        {"id": "a", "created_at": "c", "updated_at": "u", "record": {"k": 1}}
    ]


def test_repair_accepts_a_path_or_a_file_uri(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text('{"torn\n')
    assert repair(str(path)).moved == (1,)
    path.write_text('{"torn\n')
    assert repair(f"file://{path}").moved == (1,)
    assert path.read_text() == ""
