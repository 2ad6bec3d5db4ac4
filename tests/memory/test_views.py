"""The read-only views: browse, stats, check and the session-start digest."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from agentscript.memory import (
    DIGEST_MARKER,
    EntryFilter,
    FixedClock,
    MemoryConfig,
    MemoryService,
    MemoryServiceError,
)
from agentscript.memory.compaction_sink import write_checkpoint
from agentscript.memory.config import DigestConfig

pytest_plugins = ["memsvc_support"]


def episode(memory: MemoryService, title: str, day: str, **options: object) -> str:
    return str(memory.remember(title, kind="episodic", event_time=day, **options)["id"])


# ------------------------------------------------------------------------------- browse


def test_browse_groups_by_local_day_newest_first(memory: MemoryService) -> None:
    a = episode(memory, "Sprint planning", "2026-05-04")
    b = episode(memory, "Retro", "2026-05-04T15:00:00")
    c = episode(memory, "Release", "2026-04-30")
    page = memory.browse()
    assert page["total_groups"] == 2 and page["total_entries"] == 3
    assert [g["bucket"] for g in page["groups"]] == ["2026-05-04", "2026-04-30"]
    assert page["groups"][0]["label"] == "Monday 4 May 2026"
    assert [e["id"] for e in page["groups"][0]["entries"]] == [b, a]
    assert [e["id"] for e in page["groups"][1]["entries"]] == [c]


@pytest.mark.parametrize(
    ("by", "buckets"),
    [
        ("week", ["2026-W19", "2026-W18", "2026-W01"]),
        ("month", ["2026-05", "2026-04", "2025-12"]),
        ("year", ["2026", "2025"]),
    ],
)
def test_browse_by_week_month_and_year(memory: MemoryService, by: str, buckets: list) -> None:
    for day in ("2026-05-04", "2026-04-30", "2025-12-31"):
        episode(memory, f"Event of {day}", day)
    assert [g["bucket"] for g in memory.browse(by=by)["groups"]] == buckets


def test_browse_pages_count_groups(memory: MemoryService) -> None:
    for day in range(1, 6):
        for index in range(3):
            episode(memory, f"Day {day} item {index}", f"2026-04-0{day}")
    second = memory.browse(page=2, page_size=2, per_group=1)
    assert [g["bucket"] for g in second["groups"]] == ["2026-04-03", "2026-04-02"]
    assert [(g["count"], len(g["entries"])) for g in second["groups"]] == [(3, 1), (3, 1)]
    assert second["total_groups"] == 5
    assert memory.browse(page=9)["groups"] == []
    with pytest.raises(MemoryServiceError, match="page_size must be an integer from 1 to 200"):
        memory.browse(page_size=0)
    with pytest.raises(MemoryServiceError) as error:
        memory.browse(by="hour")
    assert error.value.field == "by"


def test_browse_filters_like_recall(memory: MemoryService) -> None:
    episode(memory, "Tagged", "2026-05-01", tags=["ops"])
    episode(memory, "Untagged", "2026-05-02")
    forgotten = episode(memory, "Forgotten", "2026-05-03")
    memory.forget(forgotten)
    assert memory.browse(tags=["ops"])["total_entries"] == 1
    assert memory.browse(since="2026-05-02")["total_entries"] == 1
    assert memory.browse(include_archived=True)["total_entries"] == 3
    assert memory.browse(kind="fact")["groups"] == []


# -------------------------------------------------------------------------------- stats


def test_stats_count_by_kind_level_archive_and_month(memory: MemoryService) -> None:
    memory.remember("Name is Ada", kind="fact", key="name", scope="global")
    memory.remember("Name is Ada Lovelace", kind="fact", key="name", scope="global")
    memory.remember("Lesson")
    episode(memory, "Meeting", "2026-04-20")
    episode(memory, "Call", "2026-05-02")
    stats = memory.stats()
    assert (stats["active"], stats["archived"]) == (4, 1)
    local, shared = stats["scopes"]
    assert local["scope"] == memory.workspace
    assert local["by_kind"] == {"fact": 0, "knowledge": 1, "episodic": 2, "summary": 0}
    assert local["by_month"] == {"2026-05": 2, "2026-04": 1}
    assert local["room"] == 2000 - 3
    assert (shared["active"], shared["archived"], shared["superseded"]) == (1, 1, 1)
    assert [s["scope"] for s in memory.stats(scope="global")["scopes"]] == ["global"]


def test_stats_count_per_local_day_and_iso_week(memory: MemoryService) -> None:
    episode(memory, "Planning", "2026-05-04")
    episode(memory, "Retro", "2026-05-04T17:00:00")
    episode(memory, "Release", "2026-05-03")
    episode(memory, "New year", "2026-01-01")
    forgotten = episode(memory, "Dropped", "2026-05-03T08:00:00")
    memory.forget(forgotten)
    (local, _) = memory.stats()["scopes"]
    assert local["by_day"] == {"2026-05-04": 2, "2026-05-03": 1, "2026-01-01": 1}
    # 3 May 2026 is a Sunday: the end of ISO week 18; 1 January 2026 is in week 1.
    assert local["by_week"] == {"2026-W19": 2, "2026-W18": 1, "2026-W01": 1}
    assert list(local["by_week"]) == ["2026-W19", "2026-W18", "2026-W01"]


# -------------------------------------------------------------------------------- check


def test_check_is_clean_on_a_sound_store(memory: MemoryService) -> None:
    memory.remember("Fine")
    assert memory.check() == {
        "ok": True,
        "scopes": [memory.workspace, "global"],
        "findings": [],
        "suggestions": [],
        "notes": [],
    }


def test_check_suggests_what_to_distil(memory: MemoryService) -> None:
    deploys = [
        episode(memory, f"Deploy {day} went out late", f"2026-05-0{day}", tags=["deploy"])
        for day in (1, 2, 3)
    ]
    episode(memory, "Lunch", "2026-05-01", tags=["food"])
    flaky = memory.remember("CI was flaky on main", kind="episodic")["id"]
    for _ in range(2):
        memory.remember("CI was flaky on main", kind="episodic")
    checkpoint = write_checkpoint(memory, session="s-1", summary="We fixed the cache").id
    result = memory.check()
    assert result["ok"] is True and result["findings"] == []
    suggestions = {item["signal"]: item for item in result["suggestions"]}
    assert list(suggestions) == ["recurring_topic", "reinforced_episode", "undistilled_checkpoints"]
    topic = suggestions["recurring_topic"]
    assert topic["ids"] == sorted(deploys) and topic["scope"] == memory.workspace
    assert topic["summary"].startswith("3 episodes are tagged deploy (latest: 'Deploy 3 went")
    assert suggestions["reinforced_episode"]["ids"] == [flaky]
    assert "happened 3 times" in suggestions["reinforced_episode"]["summary"]
    assert suggestions["undistilled_checkpoints"]["ids"] == [checkpoint]


def test_distilled_material_is_no_longer_suggested(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    for day in (1, 2, 3):
        episode(memory, f"Deploy {day}", f"2026-05-0{day}", tags=["deploy"])
    write_checkpoint(memory, session="s-1", summary="We fixed the cache")
    memory_clock.advance(timedelta(minutes=1))
    memory.remember("Deploys need the cache warmed first", tags=["deploy"])
    assert memory.check()["suggestions"] == []


def test_check_finds_duplicate_titles(memory: MemoryService) -> None:
    first = memory.remember("Deploy steps", kind="fact")["id"]
    second = memory.remember("Deploy steps", kind="fact")["id"]
    (finding,) = memory.check()["findings"]
    assert finding["code"] == "duplicate_title"
    assert finding["ids"] == sorted([first, second])


def test_check_finds_scopes_over_and_near_the_limit(
    open_memory: Callable[..., MemoryService],
) -> None:
    writer = open_memory()
    for index in range(5):
        writer.remember(f"Entry {index}")
    over = open_memory(config=MemoryConfig(max_entries=4)).check()["findings"]
    assert [f["code"] for f in over] == ["over_limit"]
    near = open_memory(config=MemoryConfig(max_entries=5)).check()["findings"]
    assert [f["code"] for f in near] == ["near_limit"]


def test_check_finds_stale_summaries_and_orphans(memory: MemoryService) -> None:
    source = episode(memory, "Standup", "2026-05-04")
    summary = memory.write_summary(
        memory.workspace or "",
        "day",
        "2026-05-04",
        title="Day summary",
        body="Standup happened.",
        source_ids=[source],
    )["id"]
    with memory.store.transaction() as tx:
        scope = memory.workspace or ""
        (entry,) = tx.select(EntryFilter(scopes=(scope,), ids=(source,), archived=None))
        tx.replace(entry.evolve(updated_at="2027-01-01T00:00:00.000Z"))
    (stale,) = memory.check()["findings"]
    assert stale["code"] == "stale_summary"
    assert stale["ids"] == sorted([summary, source])
    # A source deleted behind the service's back (purge would remove the summary too).
    with memory.store.transaction() as tx:
        tx.delete(scope, (source,))
    (orphan,) = memory.check()["findings"]
    assert orphan["code"] == "orphan_reference"
    assert orphan["ids"] == sorted([summary, source])


def test_check_finds_a_superseded_entry_whose_successor_is_gone(memory: MemoryService) -> None:
    first = memory.remember("Old wording")["id"]
    kept = memory.update(first, text="New wording")["previous_version"]
    with memory.store.transaction() as tx:  # what a purge never leaves: a half-deleted chain
        tx.delete(memory.workspace, (first,))
    (finding,) = memory.check()["findings"]
    assert (finding["code"], finding["ids"]) == ("orphan_reference", [kept])


def test_check_reports_a_damaged_text_index(memory: MemoryService) -> None:
    memory.remember("Indexed")
    with memory.store.transaction() as tx:
        connection = tx._connection  # type: ignore[attr-defined]
        connection.execute("DELETE FROM memory_postings_tail")
        connection.execute("UPDATE memory_index_totals SET documents = 0, tail = 0")
    problems = [f["message"] for f in memory.check()["findings"] if f["code"] == "store"]
    assert any("the text index holds 0 entries of 1" in problem for problem in problems)
    memory.store.rebuild_index()  # type: ignore[attr-defined]
    assert memory.check()["ok"]


# ------------------------------------------------------------------------------- digest


def test_digest_lists_global_facts_then_summaries_then_recent_entries(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    memory.remember("Prefers short answers", kind="fact", key="style", scope="global")
    memory.remember("Name is Ada", kind="fact", key="name", scope="global")
    old = episode(memory, "Kick-off meeting", "2026-05-01")
    memory.write_summary(
        memory.workspace or "",
        "day",
        "2026-05-01",
        title="1 May: kick-off",
        body="Kick-off.",
        source_ids=[old],
    )
    memory_clock.advance(timedelta(minutes=5))
    memory.remember("Run tests with make check", tags=["testing"])
    digest = memory.digest()
    lines = digest["text"].splitlines()
    assert lines[0] == f'<memory-digest scope="{memory.workspace}">'
    assert lines[2:] == [
        "- name: Name is Ada",
        "- style: Prefers short answers",
        "- [day summary 2026-05-01] 1 May: kick-off",
        "- [knowledge, 2026-05-06] Run tests with make check #testing",
        "</memory-digest>",
    ]
    assert digest["entries"] == 4 and digest["omitted"] == 0
    assert digest["bytes"] == len(digest["text"].encode("utf-8"))
    assert memory.digest() == digest


def thirty_preferences_and_berlin(memory: MemoryService, memory_clock: FixedClock) -> str:
    """The unkeyed "lives in Berlin" fact first, then 30 keyed global preferences, a minute
    apart, then two workspace entries; returns Berlin's id."""
    berlin = memory.remember("The user lives in Berlin", kind="fact", scope="global")["id"]
    for index in range(1, 31):
        memory_clock.advance(timedelta(minutes=1))
        memory.remember(f"Preference {index}", kind="fact", key=f"pref{index}", scope="global")
    memory_clock.advance(timedelta(minutes=5))
    memory.remember("Run tests with make check")
    memory.remember("Deployed 2.3 today", kind="episodic")
    return str(berlin)


def test_global_facts_are_ranked_by_use_not_by_key_spelling_and_the_rest_counted(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    thirty_preferences_and_berlin(memory, memory_clock)

    digest = memory.digest()  # memory.yml defaults: 20 lines, 3000 bytes

    lines = digest["text"].splitlines()[2:-1]
    # Half of the 20 lines for the resident layer: the most recently written facts first,
    # never pref1, pref10, pref11… in the order their keys sort.
    assert lines[:10] == [f"- pref{index}: Preference {index}" for index in range(30, 20, -1)]
    workspace_lines = [line for line in lines if "Run tests" in line or "Deployed 2.3" in line]
    assert len(workspace_lines) == 2
    assert digest["entries"] == 12 and digest["omitted"] == 21
    # What was left out is counted, global facts apart, with the call that lists them all.
    assert lines[-1] == (
        "(21 more not shown, 21 of them global facts: use recall or memory_browse; "
        'memory_browse {"scope": "global", "kind": "fact"} lists every global fact)'
    )


@pytest.mark.parametrize("how", ["pinned", "confirmed", "recalled"])
def test_a_pinned_confirmed_or_recently_used_global_fact_comes_first(
    memory: MemoryService, memory_clock: FixedClock, how: str
) -> None:
    berlin = thirty_preferences_and_berlin(memory, memory_clock)
    memory_clock.advance(timedelta(minutes=1))
    if how == "pinned":
        memory.update(berlin, tags=["pinned"])
    elif how == "confirmed":
        # Unkeyed facts are never merged; a keyed one said again with the same value is.
        memory.remember("Preference 1", kind="fact", key="pref1", scope="global")
    else:
        assert memory.recall("Berlin", scope="global")["results"][0]["id"] == berlin
    # Two more preferences written after it: still behind it for a pin or a confirmation.
    for index in (31, 32):
        memory_clock.advance(timedelta(minutes=1))
        memory.remember(f"Preference {index}", kind="fact", key=f"pref{index}", scope="global")

    lines = memory.digest()["text"].splitlines()[2:-1]

    if how == "recalled":
        # Used a minute before the two newest were written: right after them.
        assert lines[:3] == [
            "- pref32: Preference 32",
            "- pref31: Preference 31",
            "- The user lives in Berlin",
        ]
    elif how == "confirmed":
        assert lines[0] == "- pref1: Preference 1"
    else:
        assert lines[0] == "- The user lives in Berlin"


def test_a_global_fact_without_a_key_is_resident_too(memory: MemoryService) -> None:
    memory.remember("Works in UTC", kind="fact", scope="global")
    memory.remember("Name is Ada", kind="fact", key="name", scope="global")
    memory.remember("Run tests with make check")
    lines = memory.digest()["text"].splitlines()[2:-1]
    assert lines[:2] == ["- name: Name is Ada", "- Works in UTC"]
    assert lines[2].endswith("Run tests with make check")


def test_digest_respects_the_byte_budget_in_utf8(memory: MemoryService) -> None:
    for index in range(30):
        memory.remember(f"记忆条目 {index} 关于中文内容的说明")
    digest = memory.digest(max_bytes=600)
    assert len(digest["text"].encode("utf-8")) <= 600
    assert digest["bytes"] <= 600
    assert digest["entries"] + digest["omitted"] == 30
    assert (
        digest["text"].splitlines()[-2]
        == f"({digest['omitted']} more not shown: use recall or memory_browse)"
    )


def test_digest_respects_the_entry_budget(memory: MemoryService) -> None:
    for index in range(8):
        memory.remember(f"Lesson {index}")
    digest = memory.digest(max_entries=3)
    assert digest["entries"] == 3 and digest["omitted"] == 5


def test_a_digest_is_never_stored_back(memory: MemoryService) -> None:
    memory.remember("Something worth knowing")
    text = memory.digest()["text"]
    assert DIGEST_MARKER in text
    for arguments in (
        {"text": text},
        {"text": "ok", "title": text.splitlines()[0]},
        {"text": "ok", "context": text},
        {"text": "ok", "tags": ["<MEMORY-DIGEST scope>"]},
    ):
        with pytest.raises(MemoryServiceError) as error:
            memory.remember(**arguments)  # type: ignore[arg-type]
        assert error.value.code == "digest_feedback"
    first = memory.recall("worth")["results"][0]["id"]
    with pytest.raises(MemoryServiceError, match="never stored back"):
        memory.update(first, text=text)


def test_digest_is_empty_when_disabled_or_nothing_is_stored(
    open_memory: Callable[..., MemoryService],
) -> None:
    assert open_memory().digest()["text"] == ""
    disabled = open_memory(config=MemoryConfig(digest=DigestConfig(enabled=False)))
    disabled.remember("Stored")
    assert disabled.digest()["text"] == ""
    assert disabled.digest(max_entries=5)["entries"] == 1
