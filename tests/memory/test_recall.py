"""Recall: ranking, filters, scopes, tokenisation, and what recall records."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentscript.memory import FixedClock, MemoryService, MemoryServiceError
from agentscript.memory.recall import RecallTuning, _session_support
from agentscript.memory.store import Match

pytest_plugins = ["memsvc_support"]


@pytest.fixture
def memory_backend(each_memory_backend: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL (memsvc_support.memory_database)."""
    return each_memory_backend


def ids(found: dict) -> list[str]:
    return [hit["id"] for hit in found["results"]]


def test_a_tag_outranks_a_title_which_outranks_a_body(memory: MemoryService) -> None:
    in_body = memory.remember("Notes\nThe staging server is slow today")["id"]
    in_title = memory.remember("Staging checklist\nrun smoke tests")["id"]
    in_tag = memory.remember("Release checklist\nrun smoke tests", tags=["staging"])["id"]
    assert ids(memory.recall("staging")) == [in_tag, in_title, in_body]


def test_results_carry_score_level_scope_and_a_cut_body(memory: MemoryService) -> None:
    memory.remember("Deploy notes\n" + "deploy " * 200)
    (hit,) = memory.recall("deploy", body_chars=20)["results"]
    assert hit["score"] > 0
    assert hit["level"] is None
    assert hit["scope"] == memory.workspace
    assert hit["body"] == "Deploy notes\ndeploy …" and hit["body_truncated"]


def test_recency_breaks_ties_without_overriding_relevance(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    old = memory.remember("Coffee order\nflat white", kind="episodic", event_time="2026-01-01")
    new = memory.remember("Coffee choice\nflat white", kind="episodic", event_time="2026-05-05")
    assert ids(memory.recall("flat white")) == [new["id"], old["id"]]
    strong = memory.remember("Flat white flat white", kind="episodic", event_time="2025-01-01")
    assert ids(memory.recall("flat white"))[0] == strong["id"]


def test_knowledge_is_as_recent_as_its_last_update(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    first = memory.remember("Lint rule one\nuse ruff")["id"]
    memory_clock.advance(timedelta(days=20))
    second = memory.remember("Lint rule two\nuse ruff")["id"]
    assert ids(memory.recall("ruff")) == [second, first]
    memory_clock.advance(timedelta(days=20))
    memory.remember("Lint rule one\nuse ruff format too")
    assert ids(memory.recall("ruff"))[0] == first


def test_inflections_and_stopwords_do_not_stop_a_match(memory: MemoryService) -> None:
    target = memory.remember("Melanie painted a sunrise at the lake", kind="episodic")["id"]
    assert ids(memory.recall("What did Melanie paint?")) == [target]
    assert ids(memory.recall("Where did she go?")) == []
    kids = memory.remember("She took the children swimming", kind="episodic")["id"]
    assert ids(memory.recall("Who goes swimming with the child?")) == [kids]


def test_chinese_text_is_found_by_a_phrase_inside_it(memory: MemoryService) -> None:
    target = memory.remember("部署流程：先运行测试再发布版本", tags=["运维"])["id"]
    memory.remember("团队午餐在周五")
    assert ids(memory.recall("运行测试")) == [target]
    assert ids(memory.recall("发布")) == [target]
    assert ids(memory.recall("运维")) == [target]


def test_a_query_of_stopwords_finds_nothing_and_says_why(memory: MemoryService) -> None:
    memory.remember("Something to find")
    found = memory.recall("what is it?")
    assert found["results"] == []
    assert "no searchable words" in found["note"]


def test_an_empty_query_lists_the_most_recent_first(
    memory: MemoryService, memory_clock: FixedClock
) -> None:
    first = memory.remember("First")["id"]
    memory_clock.advance(timedelta(minutes=1))
    second = memory.remember("Second")["id"]
    found = memory.recall()
    assert ids(found) == [second, first]
    assert {hit["score"] for hit in found["results"]} == {0.0}


def test_filters_narrow_before_ranking(memory: MemoryService) -> None:
    fact = memory.remember("Budget fact", kind="fact", tags=["money"])["id"]
    lesson = memory.remember("Budget lesson", tags=["money", "team"])["id"]
    episode = memory.remember("Budget meeting", kind="episodic", tags=["team"])["id"]
    assert ids(memory.recall("budget", kind="fact")) == [fact]
    assert set(ids(memory.recall("budget", kind=["fact", "episodic"]))) == {fact, episode}
    assert ids(memory.recall("budget", tags=["money", "team"])) == [lesson]
    assert ids(memory.recall("budget", tags=["TEAM"], kind="episodic")) == [episode]
    assert ids(memory.recall("budget", level="week")) == []
    assert len(ids(memory.recall("budget", limit=2))) == 2


def test_since_and_until_use_event_time_in_local_days(
    open_memory: Callable[..., MemoryService], memory_clock: FixedClock
) -> None:
    memory = open_memory(clock=FixedClock(memory_clock.now(), ZoneInfo("America/New_York")))
    late = memory.remember("Standup notes", kind="episodic", event_time="2026-05-02T03:00:00Z")
    early = memory.remember("Standup recap", kind="episodic", event_time="2026-05-02T05:00:00Z")
    # 03:00Z is still 1 May in New York; 05:00Z is 2 May.
    assert ids(memory.recall("standup", since="2026-05-02")) == [early["id"]]
    assert ids(memory.recall("standup", until="2026-05-01")) == [late["id"]]
    assert set(ids(memory.recall("standup", since="2026-W18", until="2026-05"))) == {
        late["id"],
        early["id"],
    }
    assert ids(memory.recall("standup", since="2026-06")) == []


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 201}, "limit"),
        ({"limit": True}, "limit"),
        ({"kind": "memo"}, "kind"),
        ({"kind": 3}, "kind"),
        ({"level": "hour"}, "level"),
        ({"since": "yesterday"}, "since"),
        ({"include_archived": "yes"}, "include_archived"),
        ({"tags": "x"}, "tags"),
        ({"body_chars": -1}, "body_chars"),
        ({"query": None}, "query"),
    ],
)
def test_invalid_recall_arguments_name_the_field(
    memory: MemoryService, arguments: dict, field: str
) -> None:
    with pytest.raises(MemoryServiceError) as error:
        memory.recall(**{"query": "x", **arguments})
    assert error.value.field == field


def test_recall_reads_the_workspace_and_global_and_says_which(memory: MemoryService) -> None:
    local = memory.remember("Tabs in this repo")["id"]
    shared = memory.remember("Tabs everywhere", scope="global")["id"]
    found = memory.recall("tabs")["results"]
    assert {hit["id"]: hit["scope"] for hit in found} == {
        local: memory.workspace,
        shared: "global",
    }
    assert ids(memory.recall("tabs", scope="global")) == [shared]


def test_recall_sets_accessed_at(memory: MemoryService, memory_clock: FixedClock) -> None:
    found = memory.remember("Remember the milk")["id"]
    other = memory.remember("Unrelated")["id"]
    memory_clock.advance(timedelta(days=2))
    memory.recall("milk")
    assert memory.get(found)["accessed_at"] == "2026-05-08T09:30:00.000Z"
    assert memory.get(other)["accessed_at"] == "2026-05-06T09:30:00.000Z"


def test_session_support_lifts_an_entry_whose_session_also_matched(
    open_memory: Callable[..., MemoryService],
) -> None:
    memory = open_memory(tuning=RecallTuning(session_weight=0.5, recency_weight=0.0))
    lonely = memory.remember("Picnic basket", kind="episodic", source={"session": "a"})["id"]
    backed = memory.remember("Picnic blanket", kind="episodic", source={"session": "b"})["id"]
    memory.remember("Park picnic plans", kind="episodic", source={"session": "b"})
    assert ids(memory.recall("picnic")).index(backed) < ids(memory.recall("picnic")).index(lonely)


def test_time_hints_favour_entries_of_the_named_period(
    open_memory: Callable[..., MemoryService],
) -> None:
    memory = open_memory(tuning=RecallTuning(recency_weight=0.0, session_weight=0.0))
    march = memory.remember("Trip to the coast", kind="episodic", event_time="2026-03-10")["id"]
    april = memory.remember("Trip to the hills", kind="episodic", event_time="2026-04-10")["id"]
    assert ids(memory.recall("trip in March 2026"))[0] == march
    assert ids(memory.recall("trip in April"))[0] == april


def test_feedback_expansion_finds_entries_sharing_the_top_hits_vocabulary(
    open_memory: Callable[..., MemoryService],
) -> None:
    tuning = RecallTuning(feedback_docs=2, feedback_terms=3, feedback_weight=0.5)
    memory = open_memory(tuning=tuning)
    memory.remember("Kubernetes rollout\nhelm chart canary", tags=["deploy"])
    memory.remember("Kubernetes upgrade\nhelm chart canary")
    related = memory.remember("Canary checks\nhelm chart values")["id"]
    assert related in ids(memory.recall("kubernetes"))


def _support_by_sorting(
    matches: dict[str, Match], scores: dict[str, float], weight: float
) -> dict[str, float]:
    """Session support as it was first written: each session's scores sorted, the best other
    one added (the reference the one-pass version must equal bit for bit)."""
    by_session: dict[str, list[float]] = {}
    for identifier, score in scores.items():
        session = matches[identifier].session
        if session is not None:
            by_session.setdefault(session, []).append(score)
    supported = {}
    for identifier, score in scores.items():
        session = matches[identifier].session
        others = sorted(by_session[session], reverse=True)[:2] if session is not None else []
        if others and others[0] == score:
            others = others[1:]
        supported[identifier] = score + weight * (others[0] if others else 0.0)
    return supported


@given(
    st.lists(
        st.tuples(st.sampled_from([None, "a", "b", "c"]), st.sampled_from([0.0, 0.5, 1.0, 2.5])),
        max_size=12,
    )
)
def test_session_support_in_one_pass_equals_sorting_each_session(
    hits: list[tuple[str | None, float]],
) -> None:
    matches = {
        str(index): Match(str(index), score, session, 0, "2026-05-04", "", index)
        for index, (session, score) in enumerate(hits)
    }
    scores = {identifier: match.score for identifier, match in matches.items()}
    assert _session_support(matches, scores, 0.3) == _support_by_sorting(matches, scores, 0.3)
