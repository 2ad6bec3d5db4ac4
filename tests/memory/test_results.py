"""The memory service's typed results: attributes for callers, `to_json()` for the wire."""

from __future__ import annotations

import json
from pathlib import Path

from agentscript.memory import MemoryService
from agentscript.memory.results import (
    BrowseGroup,
    BrowseResult,
    CheckFinding,
    CheckResult,
    DigestResult,
    EntryResult,
    ForgetResult,
    HistoryResult,
    RecallHit,
    RecallResult,
    RememberResult,
    ScopeStats,
    StatsResult,
    UpdateResult,
)


def test_each_operation_returns_its_typed_result(tmp_path: Path) -> None:
    with MemoryService.open(tmp_path, database=tmp_path / "memory.db") as memory:
        written = memory.remember("Deploys go out on Fridays", kind="fact", key="deploy day")
        assert isinstance(written, RememberResult)
        assert (written.action, written.kind) == ("created", "fact")

        updated = memory.update(written.id, text="Deploys go out on Thursdays")
        assert isinstance(updated, UpdateResult)
        assert updated.changed and updated.id == written.id and updated.previous_version

        found = memory.recall("deploys thursdays")
        assert isinstance(found, RecallResult) and found.count == 1
        (hit,) = found.hits
        assert isinstance(hit, RecallHit)
        assert hit.id == updated.id and hit.score > 0 and hit.key == "deploy day"
        assert hit.body == "Deploys go out on Thursdays" and not hit.body_truncated

        history = memory.history("Deploy Day")
        assert isinstance(history, HistoryResult)
        assert [version.status for version in history.versions] == ["active", "superseded"]
        assert history.versions[0].entry.id == updated.id

        digest = memory.digest()
        assert isinstance(digest, DigestResult) and "deploy day" in digest.text
        assert digest.bytes == len(digest.text.encode("utf-8"))

        forgotten = memory.forget(updated.id)
        assert isinstance(forgotten, ForgetResult) and forgotten.action == "archived"
        assert memory.recall("deploys").count == 0


def test_the_json_form_is_the_documented_wire_form(tmp_path: Path) -> None:
    with MemoryService.open(tmp_path, database=tmp_path / "memory.db") as memory:
        written = memory.remember("The build cache lives in /var/cache/build")
        found = memory.recall("build cache", body_chars=9)
        empty = memory.recall("the of and")

    assert set(written.to_json()) == {"id", "action", "scope", "kind", "title"}
    data = found.to_json()
    assert data["count"] == 1 and data["results"][0]["id"] == written.id
    assert data["results"][0]["body"] == "The build…" and data["results"][0]["body_truncated"]
    assert "note" not in data
    assert "no searchable words" in empty.to_json()["note"]
    assert json.loads(json.dumps(data)) == data  # plain JSON all the way down
    # The mapping view reads the same JSON and compares equal to it.
    assert found["count"] == 1 and found == data and dict(written) == written.to_json()


def test_reads_of_the_store_as_a_whole_are_typed_too(tmp_path: Path) -> None:
    with MemoryService.open(tmp_path, database=tmp_path / "memory.db") as memory:
        first = memory.remember("Release notes go in CHANGES.md", kind="fact")
        memory.remember("Release notes go in CHANGES.md", kind="knowledge")
        memory.remember("Release notes go in CHANGES.md!", kind="fact", key="notes")

        entry = memory.get(first.id)
        assert isinstance(entry, EntryResult) and entry.entry.id == first.id
        assert entry["title"] == entry.entry.title

        browsed = memory.browse(by="day")
        assert isinstance(browsed, BrowseResult) and browsed.total_entries == 3
        (group,) = browsed.groups
        assert isinstance(group, BrowseGroup) and group.count == 3 and group.level == "day"

        stats = memory.stats()
        assert isinstance(stats, StatsResult) and stats.active == 3
        assert all(isinstance(each, ScopeStats) for each in stats.scopes)
        (scope,) = [each for each in stats.scopes if each.active]
        assert scope.by_kind["fact"] == 2 and scope.room == scope.max_entries - 3
        assert sum(scope.by_day.values()) == sum(scope.by_week.values()) == 3

        checked = memory.check()
        assert isinstance(checked, CheckResult)
        assert checked.ok == (not checked.findings)
        assert all(isinstance(finding, CheckFinding) for finding in checked.findings)
        for result in (entry, browsed, stats, checked):
            assert json.loads(json.dumps(result.to_json())) == result.to_json()


def test_a_hit_reads_its_fields_from_its_entry(tmp_path: Path) -> None:
    """A hit keeps its entry and reads each field from it: attributes and JSON agree."""
    with MemoryService.open(tmp_path, database=tmp_path / "memory.db") as memory:
        memory.remember(
            "Ship on Friday\nThe release train leaves at noon",
            kind="knowledge",
            tags=["release"],
            source={"session": "s1", "run": "r1"},
        )
        (hit,) = memory.recall("release train", body_chars=12).hits
    assert hit.entry.id == hit.id and hit.entry.tags == ("release",)
    data = hit.to_json()
    attributes = {name: getattr(hit, name) for name in data}
    assert attributes == data
    assert data["body"] == "Ship on Frid…" and data["body_truncated"]
    assert data["source"] == {"session": "s1", "run": "r1"} and data["tags"] == ["release"]
    assert hit.score == round(hit.score, 6) and 0.0 < (hit.relevance or 0.0) <= 1.0
