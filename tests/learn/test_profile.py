"""Agent profiles: emotions that decay toward their baselines, desires that fade by horizon,
opinions, the journal ring, the history of every change, the card and the needs-you fact."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentscript.cli.app import cli
from agentscript.learn.profile import (
    EMOTION_BASELINES,
    EMOTION_EVENTS_KEPT,
    EMOTION_RATES,
    FALLBACK_RATE,
    HALF_LIFE_DAYS,
    JOURNAL_KEPT,
    DesireView,
    ProfileError,
    ProfileStore,
    decay_emotion,
    desire_strength,
    emotion_half_life,
    needs_you_key,
    summary_card,
    sync_needs_you,
)
from agentscript.memory.service import MemoryService
from reflection_support import DAY, PROFILE_WORKER, T0, FixedClock, run_together


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def store(tmp_path: Path, clock: FixedClock) -> ProfileStore:
    return ProfileStore(tmp_path / "workspace", clock=clock)


def feel(store: ProfileStore, emotion: str, delta: float, trigger: str = "the run went well"):
    result = store.apply(
        "Lead",
        {"op": "feel", "emotion": emotion, "delta": delta, "trigger": trigger},
        "test",
        "a feeling",
    )
    assert result.ok, result.message
    return result


def add_desire(store: ProfileStore, slug: str, **fields: object) -> None:
    operation = {"op": "desire_add", "slug": slug, "what": f"do {slug}", "why": "it matters"}
    result = store.apply("Lead", {**operation, **fields}, "test", "a wish")
    assert result.ok, result.message


# ----------------------------------------------------------------------------- the maths


def test_half_life_is_ln2_over_the_rate() -> None:
    for rate in (*EMOTION_RATES.values(), FALLBACK_RATE):
        half = emotion_half_life(rate)
        assert half == pytest.approx(math.log(2) / rate)
        assert decay_emotion(0.9, 0.1, rate, half) == pytest.approx(0.1 + 0.8 / 2)
    assert emotion_half_life(EMOTION_RATES["frustration"]) == pytest.approx(1.7329, abs=1e-4)


def test_decay_moves_toward_the_baseline_from_either_side_and_never_past_it() -> None:
    assert decay_emotion(-0.5, 0.2, 0.2, 0) == -0.5
    assert decay_emotion(-0.5, 0.2, 0.2, 1) == pytest.approx(0.2 - 0.7 * math.exp(-0.2))
    assert decay_emotion(0.9, 0.2, 0.2, 1000) == pytest.approx(0.2)
    assert decay_emotion(0.9, 0.2, 0.2, -5) == 0.9


def test_each_emotion_rests_at_its_baseline_and_decays_at_its_rate(
    store: ProfileStore, clock: FixedClock
) -> None:
    assert store.load("Lead").emotions_at(T0) == EMOTION_BASELINES
    for emotion in EMOTION_RATES:
        feel(store, emotion, -0.4)
    clock.advance(3)
    profile = store.load("Lead")
    for emotion, rate in EMOTION_RATES.items():
        expected = EMOTION_BASELINES[emotion] - 0.4 * math.exp(-rate * 3)
        assert profile.emotion(emotion, clock.now) == pytest.approx(expected)


def test_a_feeling_is_added_to_the_decayed_value_never_to_a_stale_one(
    store: ProfileStore, clock: FixedClock
) -> None:
    feel(store, "frustration", 0.4, "the tests failed")
    clock.advance(5)
    result = feel(store, "frustration", 0.1, "they failed again")
    decayed = 0.4 * math.exp(-0.4 * 5)
    assert result.before == f"frustration {decayed:.2f}"
    profile = store.load("Lead")
    state = profile.emotions["frustration"]
    assert state.value == pytest.approx(decayed + 0.1)  # not 0.5: no stacking on stale values
    assert state.at == clock.now  # the value is re-based at the time of the change
    assert profile.emotion("frustration", clock.now) == pytest.approx(decayed + 0.1)
    clock.advance(1)
    assert store.load("Lead").emotion("frustration", clock.now) == pytest.approx(
        (decayed + 0.1) * math.exp(-0.4)
    )


def test_emotions_are_clamped_and_self_named_ones_use_the_fallback_rate(
    store: ProfileStore, clock: FixedClock
) -> None:
    for _ in range(3):
        feel(store, "curiosity", 0.4)
    assert store.load("Lead").emotion("curiosity", clock.now) == 1.0
    feel(store, "Wonder", 0.3)  # names are case-insensitive
    clock.advance(2)
    assert store.load("Lead").emotion("wonder", clock.now) == pytest.approx(
        0.3 * math.exp(-FALLBACK_RATE * 2)
    )


def test_desire_strength_fades_by_horizon_from_the_last_touch(
    store: ProfileStore, clock: FixedClock
) -> None:
    for horizon in HALF_LIFE_DAYS:
        add_desire(store, horizon, horizon=horizon)
    clock.advance(3)
    strengths = {view.slug: view.strength for view in store.load("Lead").open_desires(clock.now)}
    assert strengths == pytest.approx(
        {"spark": 0.3, "season": 0.6 * 0.5 ** (3 / 30), "enduring": 0.6 * 0.5 ** (3 / 365)}
    )
    assert desire_strength(0.8, "spark", 6) == pytest.approx(0.2)
    result = store.apply(
        "Lead", {"op": "desire_update", "slug": "spark", "progress": "tried it"}, "test", "work"
    )
    assert result.ok
    profile = store.load("Lead")
    spark = profile.desire("spark")
    assert spark is not None and spark.updated_at == T0 and spark.active_at == clock.now
    assert profile.open_desires(clock.now)[0] == DesireView(
        "spark", "do spark", 0.6, False, "self", "spark", None
    )


def test_open_desires_are_strongest_first_and_needs_user_lists_those_waiting(
    store: ProfileStore, clock: FixedClock
) -> None:
    add_desire(store, "weak", intensity=0.2)
    add_desire(store, "strong", intensity=0.9, actionable=True, prompt="Run the benchmark")
    add_desire(store, "ask", intensity=0.5, pursuit="needs-user")
    add_desire(store, "done")
    closed = store.apply(
        "Lead",
        {
            "op": "desire_update",
            "slug": "done",
            "close": {"outcome": "fulfilled", "reflection": "it is done"},
        },
        "test",
        "finished",
    )
    assert closed.ok, closed.message
    profile = store.load("Lead")
    assert [view.slug for view in profile.open_desires(clock.now)] == ["strong", "ask", "weak"]
    assert profile.open_desires(clock.now)[0].prompt == "Run the benchmark"
    assert [view.slug for view in profile.needs_user(clock.now)] == ["ask"]


# ----------------------------------------------------------------------------- operations


def test_every_change_is_in_the_history_with_who_why_before_and_after(
    store: ProfileStore, clock: FixedClock
) -> None:
    feel(store, "pride", 0.2, "I shipped it")
    clock.advance(1)
    store.apply(
        "Lead",
        {
            "op": "opinion_form",
            "slug": "grep-is-flaky",
            "stance": "grep misses nested files",
            "confidence": 0.4,
            "evidence": ["run 20270115"],
        },
        "reflection",
        "reflection r1 on run 20270115",
    )
    store.apply(
        "Lead",
        {
            "op": "opinion_form",
            "slug": "grep-is-flaky",
            "stance": "grep is fine",
            "confidence": 0.7,
        },
        "user",
        "corrected",
    )
    store.apply("Lead", {"op": "journal", "text": "A long day."}, "reflection", "r1")
    history = store.history("Lead")
    assert [(c["revision"], c["op"], c["who"]) for c in history] == [
        (1, "feel", "test"),
        (2, "opinion_form", "reflection"),
        (3, "opinion_form", "user"),
        (4, "journal", "reflection"),
    ]
    assert history[0]["before"] == "pride 0.00" and history[0]["after"] == "pride 0.20"
    assert history[1]["why"] == "reflection r1 on run 20270115"
    assert history[1]["before"] is None
    assert (
        history[2]["before"] == "opinion grep-is-flaky: grep misses nested files (confidence 0.40)"
    )
    assert history[2]["after"] == "opinion grep-is-flaky: grep is fine (confidence 0.70)"
    assert history[2]["operation"] == {
        "op": "opinion_form",
        "slug": "grep-is-flaky",
        "stance": "grep is fine",
        "confidence": 0.7,
    }
    assert history[3]["at"] == T0 + DAY
    profile = store.load("Lead")
    assert profile.revision == 4
    opinion = profile.opinion("grep-is-flaky")
    assert opinion is not None
    assert (opinion.formed_at, opinion.updated_at, opinion.evidence) == (T0 + DAY, T0 + DAY, [])
    assert [line.text for line in profile.journal] == ["A long day."]


def test_desires_are_added_updated_and_closed(store: ProfileStore, clock: FixedClock) -> None:
    add_desire(store, "faster-tests", horizon="spark", prompt="Profile the test suite")
    clock.advance(1)
    revised = store.apply(
        "Lead",
        {"op": "desire_update", "slug": "faster-tests", "horizon": "season", "prompt": None},
        "test",
        "it will take longer",
    )
    assert revised.ok
    assert revised.message == (
        "desire faster-tests: do faster-tests (spark, self, intensity 0.60) → "
        "desire faster-tests: do faster-tests (season, self, intensity 0.60)"
    )
    desire = store.load("Lead").desire("faster-tests")
    assert desire is not None
    assert (desire.horizon, desire.prompt, desire.born_at, desire.updated_at) == (
        "season",
        None,
        T0,
        T0 + DAY,
    )
    closed = store.apply(
        "Lead",
        {
            "op": "desire_update",
            "slug": "faster-tests",
            "close": {"outcome": "abandoned", "reflection": "not worth it"},
        },
        "test",
        "gave up",
    )
    assert closed.ok and closed.after is not None and "closed abandoned" in closed.after
    again = store.apply(
        "Lead", {"op": "desire_update", "slug": "faster-tests", "intensity": 0.9}, "test", "x"
    )
    assert not again.ok and again.message == "desire faster-tests is closed (abandoned)"
    reborn = store.apply(
        "Lead",
        {"op": "desire_add", "slug": "faster-tests", "what": "try again", "why": "new idea"},
        "test",
        "x",
    )
    assert reborn.ok and reborn.before is not None and "closed abandoned" in reborn.before
    assert len(store.load("Lead").desires) == 1


@pytest.mark.parametrize(
    ("operation", "message"),
    [
        ({"op": "feel", "emotion": "pride", "delta": 0.5, "trigger": "too much"}, "delta: "),
        ({"op": "feel", "emotion": "pride", "delta": 0.1}, "trigger: Field required"),
        ({"op": "feel", "emotion": "pride", "delta": 0.1, "trigger": "x y", "extra": 1}, "extra"),
        ({"op": "desire_add", "slug": "Not A Slug", "what": "abc", "why": "abc"}, "slug: "),
        (
            {"op": "desire_add", "slug": "a", "what": "abc", "why": "abc", "horizon": "year"},
            "horizon",
        ),
        ({"op": "desire_update", "slug": "a"}, "needs at least one field"),
        ({"op": "desire_update", "slug": "a", "what": None}, "what cannot be null"),
        ({"op": "desire_update", "slug": "missing", "intensity": 0.5}, "no desire missing"),
        ({"op": "desire_add", "slug": "open", "what": "abc", "why": "abc"}, "already open"),
        ({"op": "opinion_form", "slug": "x", "stance": "abc", "confidence": 2}, "confidence"),
        ({"op": "journal", "text": ""}, "text: "),
        ({"op": "remember", "text": "abc"}, "unknown profile operation 'remember'"),
        ({"text": "abc"}, "unknown profile operation '?'"),
    ],
)
def test_a_bad_operation_changes_nothing_and_says_why(
    store: ProfileStore, operation: dict[str, object], message: str
) -> None:
    add_desire(store, "open")
    before = store.path("Lead").read_text(encoding="utf-8")
    result = store.apply("Lead", operation, "test", "bad")
    assert not result.ok
    assert message in result.message
    assert store.path("Lead").read_text(encoding="utf-8") == before
    assert len(store.history("Lead")) == 1


def test_rings_keep_the_latest_journal_lines_and_emotion_events(store: ProfileStore) -> None:
    for index in range(JOURNAL_KEPT + 5):
        store.apply("Lead", {"op": "journal", "text": f"note {index}"}, "test", "ring")
    for index in range(EMOTION_EVENTS_KEPT + 3):
        feel(store, "awe", 0.01, f"sight {index}")
    profile = store.load("Lead")
    assert len(profile.journal) == JOURNAL_KEPT
    assert profile.journal[0].text == "note 5"
    assert len(profile.emotion_events) == EMOTION_EVENTS_KEPT
    assert profile.emotion_events[-1].trigger == f"sight {EMOTION_EVENTS_KEPT + 2}"
    assert len(store.history("Lead")) == JOURNAL_KEPT + 5 + EMOTION_EVENTS_KEPT + 3


def test_secrets_and_outside_paths_never_reach_the_profile_or_its_history(
    store: ProfileStore,
) -> None:
    secret = "sk-" + "a1B2c3D4" * 4
    store.apply("Lead", {"op": "journal", "text": f"the key {secret} from /etc/app/keys"}, "t", "w")
    text = store.path("Lead").read_text() + store.history_path("Lead").read_text()
    assert secret not in text and "/etc/app" not in text
    assert "[secret]" in text and "[outside workspace #" in text


def test_a_broken_profile_or_agent_name_is_an_error(store: ProfileStore) -> None:
    with pytest.raises(ProfileError, match="not an agent name"):
        store.load("../escape")
    with pytest.raises(ProfileError, match="non-empty who"):
        store.apply("Lead", {"op": "journal", "text": "x"}, " ", "why")
    store.directory.mkdir(parents=True)
    store.path("Lead").write_text('{"agent": "Lead", "revision": "many"}')
    with pytest.raises(ProfileError, match=r"Lead\.json is not valid: revision"):
        store.load("Lead")
    store.path("Lead").write_text(json.dumps({"agent": "Other"}))
    with pytest.raises(ProfileError, match="belongs to 'Other'"):
        store.load("Lead")


def test_a_history_line_cut_short_by_a_crash_is_skipped(store: ProfileStore) -> None:
    store.apply("Lead", {"op": "journal", "text": "one"}, "test", "x")
    with store.history_path("Lead").open("a") as history:
        history.write('{"at": 1, "op": "jou')
    assert [change["op"] for change in store.history("Lead")] == ["journal"]


def test_two_processes_writing_one_profile_lose_no_change(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    finished = run_together(
        tmp_path,
        PROFILE_WORKER,
        [[str(workspace), "first", "500"], [str(workspace), "second", "500"]],
    )
    assert [process.returncode for process in finished] == [0, 0], finished
    store = ProfileStore(workspace)
    history = store.history("Lead")
    assert len(history) == 1000
    assert sorted(change["revision"] for change in history) == list(range(1, 1001))
    assert sum(change["who"] == "first" for change in history) == 500
    profile = store.load("Lead")
    assert profile.revision == 1000
    # The profile is the history replayed: its rings hold the latest changes, in order.
    notes = [c["operation"]["text"] for c in history if c["op"] == "journal"]
    triggers = [c["operation"]["trigger"] for c in history if c["op"] == "feel"]
    assert [line.text for line in profile.journal] == notes[-JOURNAL_KEPT:]
    assert [event.trigger for event in profile.emotion_events] == triggers[-EMOTION_EVENTS_KEPT:]
    assert not store.lock_path("Lead").exists()


# ----------------------------------------------------------------------------- the card


def card_profile(store: ProfileStore, clock: FixedClock) -> None:
    feel(store, "frustration", 0.35, "the nightly report failed twice")
    feel(store, "curiosity", 0.2, "why does grep miss nested folders")
    feel(store, "awe", -0.18, "nothing surprising today")
    add_desire(store, "fix-report", actionable=True, intensity=0.8, prompt="Rerun the report")
    add_desire(store, "migrate-db", pursuit="needs-user", prompt="run make migrate")
    store.apply(
        "Lead",
        {
            "op": "opinion_form",
            "slug": "grep-misses",
            "stance": "grep misses nested folders",
            "confidence": 0.4,
        },
        "reflection",
        "r1",
    )
    store.apply("Lead", {"op": "journal", "text": "The report failed\nagain."}, "reflection", "r1")
    clock.advance(1)


def test_the_profile_card(store: ProfileStore, clock: FixedClock) -> None:
    card_profile(store, clock)
    lines = summary_card(store.load("Lead"), store.history("Lead"), clock.now)
    assert "\n".join(lines) == (
        "Lead as of 2027-01-16 08:00 UTC (revision 7)\n"
        "needs you: do migrate-db (ask: run make migrate)\n"
        "mood: curiosity 0.79 · contentment 0.50 · affection 0.30 · frustration 0.23 · "
        "awe 0.05\n"
        '  last felt: awe -0.18 at 2027-01-15 08:00 UTC: "nothing surprising today"\n'
        "wants:\n"
        "  [actionable] do fix-report (0.78)\n"
        "  [needs you] do migrate-db (0.59)\n"
        "believes:\n"
        "  grep-misses: grep misses nested folders (0.40)\n"
        "journal:\n"
        "  2027-01-15 08:00 UTC  The report failed again.\n"
        "history: 7 changes (desire_add 2, feel 3, journal 1, opinion_form 1)"
    )


def test_an_empty_profile_card(store: ProfileStore) -> None:
    lines = summary_card(store.load("Lead"), [], T0)
    assert lines[1] == "mood: curiosity 0.60 · contentment 0.50 · affection 0.30 · awe 0.20"
    assert lines[2:] == [
        "wants: nothing open",
        "believes: nothing yet",
        "journal: empty",
        "history: 0 changes",
    ]


def test_profile_summary_prints_plain_text_when_piped(
    store: ProfileStore, clock: FixedClock
) -> None:
    card_profile(store, clock)
    result = CliRunner().invoke(
        cli, ["profile", "summary", "Lead", "--workspace", str(store.workspace)]
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Lead as of ")
    assert "needs you: do migrate-db (ask: run make migrate)\n" in result.output
    assert "  [needs you] do migrate-db" in result.output
    assert "╭" not in result.output
    missing = CliRunner().invoke(
        cli, ["profile", "summary", "Nobody", "--workspace", str(store.workspace)]
    )
    assert missing.exit_code == 1
    assert "No profile for Nobody" in missing.output and "profiles here: Lead" in missing.output


# ----------------------------------------------------------------------------- needs you


def test_needs_user_desires_are_a_fact_the_digest_shows_first(
    store: ProfileStore, clock: FixedClock, tmp_path: Path
) -> None:
    with MemoryService.open(store.workspace, database=tmp_path / "memory.db") as memory:
        for index in range(3):
            memory.remember(f"Note {index} about the project", kind="knowledge")
        memory.remember("Ada", kind="fact", key="user-name", scope="global")
        add_desire(store, "migrate-db", pursuit="needs-user", prompt="run make migrate")
        add_desire(store, "tidy", pursuit="self")
        assert sync_needs_you(memory, store.load("Lead"), clock.now) == "created"
        assert sync_needs_you(memory, store.load("Lead"), clock.now) == "merged"
        digest = memory.digest()["text"].splitlines()
        assert digest[2] == "- needs you: do migrate-db"
        assert digest[3] == "- user-name: Ada"
        fact = memory.history(needs_you_key("Lead"))["versions"][0]
        assert fact["kind"] == "fact" and fact["scope"] == memory.workspace
        assert (
            fact["body"]
            == "- needs you: do migrate-db (desire migrate-db of Lead; ask: run make migrate)"
        )
        store.apply(
            "Lead",
            {
                "op": "desire_update",
                "slug": "migrate-db",
                "close": {"outcome": "fulfilled", "reflection": "the user ran it"},
            },
            "user",
            "done",
        )
        assert sync_needs_you(memory, store.load("Lead"), clock.now) == "forgotten"
        assert "needs you" not in memory.digest()["text"]
        assert sync_needs_you(memory, store.load("Lead"), clock.now) == "none"
