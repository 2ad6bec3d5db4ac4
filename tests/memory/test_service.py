"""MemoryService write rules and the operations built on them: update, forget, get, history."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest

from agentscript.memory import FixedClock, MemoryConfig, MemoryService, MemoryServiceError

pytest_plugins = ["memsvc_support"]


@pytest.fixture
def memory_backend(each_memory_backend: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL (memsvc_support.memory_database)."""
    return each_memory_backend


def test_remember_creates_with_a_title_from_the_first_line(memory: MemoryService) -> None:
    result = memory.remember("\n## Deploy with make release\nRun the tests first.")
    assert result["action"] == "created"
    assert result["kind"] == "knowledge"
    assert result["scope"] == memory.workspace
    entry = memory.get(result["id"])
    assert entry["title"] == "Deploy with make release"
    assert entry["body"] == "## Deploy with make release\nRun the tests first."
    assert entry["created_at"] == "2026-05-06T09:30:00.000Z"
    assert entry["bucket"] == "2026-05-06"
    assert entry["level"] is None


def test_long_first_lines_are_cut_to_eighty_characters(memory: MemoryService) -> None:
    title = memory.remember("word " * 40)["title"]
    assert len(title) == 80 and title.endswith("…")


def test_a_key_supersedes_and_keeps_history(memory: MemoryService) -> None:
    first = memory.remember("User prefers dark mode", kind="fact", key="Theme")
    second = memory.remember("User prefers light mode", kind="fact", key="theme ")
    assert second["action"] == "updated"
    assert second["id"] != first["id"]
    old = memory.get(first["id"])
    assert old["archived"] and old["superseded_by"] == second["id"]
    history = memory.history("THEME")
    assert [v["status"] for v in history["versions"]] == ["active", "superseded"]
    assert [v["title"] for v in history["versions"]] == [
        "User prefers light mode",
        "User prefers dark mode",
    ]
    found = memory.recall("mode")["results"]
    assert [hit["id"] for hit in found] == [second["id"]]
    everything = memory.recall("mode", include_archived=True)["results"]
    assert {hit["id"] for hit in everything} == {first["id"], second["id"]}


def test_the_same_value_under_a_key_reinforces_instead_of_versioning(
    memory: MemoryService,
) -> None:
    first = memory.remember("Editor is vim", kind="fact", key="editor", tags=["tools"])
    again = memory.remember("Editor is vim", kind="fact", key="editor", tags=["cli"])
    assert again == {**first, "action": "merged"}
    entry = memory.get(first["id"])
    assert entry["reinforce_count"] == 1
    assert entry["tags"] == ["tools", "cli"]
    assert len(memory.history("editor")["versions"]) == 1


def test_a_key_slot_is_shared_across_kinds(memory: MemoryService) -> None:
    memory.remember("Build with make", kind="knowledge", key="build")
    result = memory.remember("Build with just", kind="fact", key="build")
    assert result["action"] == "updated"
    assert memory.get(result["id"])["kind"] == "fact"


def test_matching_titles_merge_knowledge(memory: MemoryService) -> None:
    first = memory.remember("Deploy with make release\nRun tests first", tags=["Deploy"])
    merged = memory.remember("deploy  WITH make release\nTag the commit", tags=["git", "deploy"])
    assert merged["action"] == "merged"
    assert merged["id"] == first["id"]
    entry = memory.get(first["id"])
    assert entry["tags"] == ["deploy", "git"]
    assert entry["body"] == (
        "Deploy with make release\nRun tests first\n\ndeploy  WITH make release\nTag the commit"
    )
    assert entry["reinforce_count"] == 1
    assert entry["title"] == "deploy WITH make release"


def test_an_identical_body_is_not_appended_twice(memory: MemoryService) -> None:
    first = memory.remember("Met Alice at PyCon", kind="episodic")
    memory.remember("Met Alice at PyCon", kind="episodic")
    entry = memory.get(first["id"])
    assert entry["body"] == "Met Alice at PyCon"
    assert entry["reinforce_count"] == 1


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"kind": "fact"}, {"kind": "fact"}),
        ({"kind": "knowledge"}, {"kind": "episodic"}),
        ({"kind": "knowledge"}, {"kind": "knowledge", "scope": "global"}),
        ({"kind": "knowledge", "key": "k"}, {"kind": "knowledge"}),
    ],
)
def test_what_never_merges(memory: MemoryService, first: dict, second: dict) -> None:
    a = memory.remember("Same title\nfirst", **first)
    b = memory.remember("Same title\nsecond", **second)
    assert b["action"] == "created"
    assert a["id"] != b["id"]


def test_a_forgotten_key_starts_afresh(memory: MemoryService) -> None:
    first = memory.remember("Port is 8080", kind="fact", key="port")
    memory.forget(first["id"])
    again = memory.remember("Port is 9090", kind="fact", key="port")
    assert again["action"] == "created"
    assert [v["status"] for v in memory.history("port")["versions"]] == ["active", "archived"]


def test_event_time_decides_the_bucket_in_local_time(
    open_memory: Callable[..., MemoryService], memory_clock: FixedClock
) -> None:
    memory = open_memory(clock=FixedClock(memory_clock.now(), ZoneInfo("Asia/Tokyo")))
    result = memory.remember("Late meeting", kind="episodic", event_time="2026-05-01T20:00:00Z")
    entry = memory.get(result["id"])
    assert entry["event_time"] == "2026-05-01T20:00:00.000Z"
    assert entry["bucket"] == "2026-05-02"
    day = memory.get(memory.remember("Holiday", kind="episodic", event_time="2026-04-29")["id"])
    assert day["event_time"] == "2026-04-28T15:00:00.000Z"
    with pytest.raises(MemoryServiceError, match="not a week, month or year"):
        memory.remember("Vague", kind="episodic", event_time="2026-W18")


@pytest.mark.parametrize(
    ("arguments", "code", "field", "message"),
    [
        ({"text": ""}, "invalid_argument", "text", "text must not be empty"),
        ({"text": "   \n "}, "invalid_argument", "text", "text must not be empty"),
        ({"text": 42}, "invalid_argument", "text", "text must be a string"),
        ({"text": "a\x00b"}, "invalid_argument", "text", "NUL"),
        ({"text": "x", "kind": "summary"}, "invalid_argument", "kind", "fact, knowledge"),
        ({"text": "x", "kind": "note"}, "invalid_argument", "kind", "not 'note'"),
        ({"text": "x", "title": "t" * 201}, "too_large", "title", "the limit is 200"),
        ({"text": "x", "key": "k" * 201}, "too_large", "key", "the limit is 200"),
        ({"text": "x", "key": "a\nb"}, "invalid_argument", "key", "one line"),
        ({"text": "x", "tags": "solo"}, "invalid_argument", "tags", "list of strings"),
        (
            {"text": "x", "tags": ["t"] * 0 + [f"t{i}" for i in range(33)]},
            "too_large",
            "tags",
            "limit is 32",
        ),
        ({"text": "x", "tags": ["t" * 65]}, "too_large", "tags[0]", "the limit is 64"),
        ({"text": "x", "tags": [""]}, "invalid_argument", "tags[0]", "must not be empty"),
        (
            {"text": "x", "source": {"session": "s", "user": "u"}},
            "invalid_argument",
            "source",
            "unknown field",
        ),
        ({"text": "x", "source": "s"}, "invalid_argument", "source", "must be an object"),
        ({"text": "x", "scope": "relative/path"}, "invalid_argument", "scope", "absolute"),
    ],
)
def test_invalid_input_is_refused_with_the_field(
    memory: MemoryService, arguments: dict, code: str, field: str, message: str
) -> None:
    options = {name: value for name, value in arguments.items() if name != "text"}
    with pytest.raises(MemoryServiceError) as error:
        memory.remember(arguments["text"], **options)
    assert error.value.code == code
    assert error.value.field == field
    assert message in error.value.message


def test_oversized_entries_are_refused_with_the_limit(memory: MemoryService) -> None:
    with pytest.raises(MemoryServiceError) as error:
        memory.remember("é" * 8200)
    assert error.value.code == "too_large"
    assert "16,561 bytes" in error.value.message
    assert "the limit is 16,384 bytes (max_entry_bytes in memory.yml)" in error.value.message
    assert memory.stats()["active"] == 0


def test_a_merge_that_would_grow_too_large_is_refused(
    open_memory: Callable[..., MemoryService],
) -> None:
    memory = open_memory(config=MemoryConfig(max_entry_bytes=1024))
    first = memory.remember("Growing note\n" + "a" * 600)
    with pytest.raises(MemoryServiceError, match="the limit is 1,024 bytes"):
        memory.remember("Growing note\n" + "b" * 600)
    assert memory.get(first["id"])["reinforce_count"] == 0


def test_max_entries_blocks_only_creation(open_memory: Callable[..., MemoryService]) -> None:
    memory = open_memory(config=MemoryConfig(max_entries=2))
    memory.remember("One")
    keyed = memory.remember("Two", kind="fact", key="two")
    with pytest.raises(MemoryServiceError) as error:
        memory.remember("Three")
    assert error.value.code == "scope_full"
    assert "the limit is 2 (max_entries in memory.yml)" in error.value.message
    assert memory.remember("One\nagain")["action"] == "merged"
    assert memory.remember("Deux", kind="fact", key="two")["action"] == "updated"
    assert memory.update(memory.history("two")["versions"][0]["id"], text="Zwei")["changed"]
    assert memory.remember("Elsewhere", scope="global")["action"] == "created"
    assert keyed["action"] == "created"


def test_update_keeps_the_id_and_the_text_before_as_a_version(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    original = memory.remember("Use pip\nfor installs", tags=["python"])
    memory_clock.advance(timedelta(hours=1))
    result = memory.update(original["id"], text="Use uv\nfor installs", tags=["python", "uv"])
    assert result["id"] == original["id"] and result["changed"]
    now = memory.get(original["id"])
    assert (now["title"], now["tags"], now["updated_at"], now["archived"]) == (
        "Use uv",
        ["python", "uv"],
        "2026-05-06T10:30:00.000Z",
        False,
    )
    before = memory.get(result["previous_version"])
    assert before["archived"] and before["superseded_by"] == original["id"]
    assert before["body"] == "Use pip\nfor installs"
    assert [hit["id"] for hit in memory.recall("uv installs")["results"]] == [original["id"]]
    assert memory.recall("pip")["results"] == []


def test_the_same_id_can_be_updated_again_and_again(memory: MemoryService) -> None:
    first = memory.remember("Port 8080", kind="fact", key="port")
    one = memory.update(first["id"], title="HTTP port 8080")
    two = memory.update(first["id"], text="HTTP port 9090")
    assert one["id"] == two["id"] == first["id"]
    versions = memory.history("port")["versions"]
    assert [(v["id"], v["status"]) for v in versions] == [
        (first["id"], "active"),
        (two["previous_version"], "superseded"),
        (one["previous_version"], "superseded"),
    ]
    assert [v["title"] for v in versions] == ["HTTP port 9090", "HTTP port 8080", "Port 8080"]


def test_a_keyed_update_after_a_new_value_keeps_the_history_a_chain(
    memory: MemoryService,
) -> None:
    first = memory.remember("Editor vim", kind="fact", key="editor")
    second = memory.remember("Editor helix", kind="fact", key="editor")
    fixed = memory.update(second["id"], text="Editor helix 25")
    versions = memory.history("editor")["versions"]
    assert [v["id"] for v in versions] == [second["id"], fixed["previous_version"], first["id"]]
    assert memory.get(first["id"])["superseded_by"] == fixed["previous_version"]


def test_update_without_changes_keeps_the_entry(memory: MemoryService) -> None:
    first = memory.remember("Stable fact", kind="fact")
    result = memory.update(first["id"], text="Stable fact")
    assert result == {
        "id": first["id"],
        "action": "updated",
        "previous_version": None,
        "changed": False,
    }
    assert not memory.get(first["id"])["archived"]


def test_purging_an_updated_entry_deletes_its_earlier_versions(memory: MemoryService) -> None:
    first = memory.remember("Staging password is hunter2")
    fixed = memory.update(first["id"], text="Staging password is in the vault")
    result = memory.forget(first["id"], purge=True)
    assert result["purged"] == sorted([first["id"], fixed["previous_version"]])
    assert memory.recall("hunter2 staging", include_archived=True)["results"] == []


def test_update_refuses_archived_entries_summaries_and_empty_calls(
    memory: MemoryService,
) -> None:
    first = memory.remember("Old", kind="fact", key="k")
    second = memory.remember("New", kind="fact", key="k")
    with pytest.raises(MemoryServiceError, match=f"superseded by {second['id']}") as error:
        memory.update(first["id"], text="Newer")
    assert error.value.code == "conflict"
    with pytest.raises(MemoryServiceError, match="update needs"):
        memory.update(second["id"])
    with pytest.raises(MemoryServiceError) as missing:
        memory.update("no-such-id", text="x")
    assert missing.value.code == "not_found"


def test_forget_archives_and_is_idempotent(memory: MemoryService) -> None:
    first = memory.remember("Temporary note about staging")
    assert memory.forget(first["id"], reason="obsolete") == {
        "id": first["id"],
        "action": "archived",
        "archived": True,
        "purged": [],
    }
    entry = memory.get(first["id"])
    assert entry["archived"] and entry["archive_reason"] == "obsolete"
    assert memory.recall("staging")["results"] == []
    assert memory.recall("staging", include_archived=True)["count"] == 1
    assert memory.forget(first["id"])["action"] == "already_archived"


def test_purge_deletes_the_entry_and_its_whole_key_history(memory: MemoryService) -> None:
    first = memory.remember("Password hint is blue", kind="fact", key="hint")
    second = memory.remember("Password hint is green", kind="fact", key="hint")
    other = memory.remember("Unrelated hint about colours")
    result = memory.forget(second["id"], purge=True)
    assert result["action"] == "purged"
    assert result["purged"] == sorted([first["id"], second["id"]])
    assert memory.history("hint")["versions"] == []
    found = memory.recall("password hint blue green", include_archived=True)["results"]
    assert [hit["id"] for hit in found] == [other["id"]]
    for identifier in (first["id"], second["id"]):
        with pytest.raises(MemoryServiceError, match="no entry"):
            memory.get(identifier)


def test_get_checks_types(memory: MemoryService) -> None:
    with pytest.raises(MemoryServiceError, match="id must be a non-empty string"):
        memory.get("  ")
