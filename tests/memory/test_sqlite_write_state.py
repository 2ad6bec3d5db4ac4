"""What a SqliteStore's write transactions keep from one to the next (sqlite_write_state.py):
scope and session numbers, active counts, session tails, shape ids. Kept only while no other
connection has committed, dropped by a rollback, a scrub and a rebuild; so two writers taking
turns on one file, a failed transaction and a purge followed by a scrub still leave exact
counts, true session links and an index equal to a rebuilt one."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agentscript.memory import MemoryConfig, MemoryService, MemoryServiceError, sqlite_postings
from agentscript.memory.sqlite_store import SqliteStore
from agentscript.memory.store import EntryFilter, FieldWeights, TextQuery

SCOPE = "/work/app"
OTHER = "/work/other"
THIRD = "/work/third"
FRUITS = ("apples", "bananas", "cherries", "dates", "elderberries", "figs")
ALL = 1_000_000


def turn(text: str, session: str = "chat-1") -> dict[str, Any]:
    return {"text": text, "kind": "episodic", "scope": SCOPE, "source": {"session": session}}


def scores(store: SqliteStore, words: str) -> dict[str, float]:
    terms = tuple(store.analyzer.terms(words))
    where = EntryFilter((SCOPE,), archived=None)
    return {
        match.id: match.score
        for match in store.search(TextQuery(terms, FieldWeights()), where, ALL)
    }


def links(path: Path) -> list[tuple[int, int | None, int | None]]:
    with sqlite3.connect(path) as connection:
        return connection.execute(
            "SELECT seq, previous_seq, next_seq FROM memory_entries ORDER BY seq"
        ).fetchall()


def assert_sound(memory: MemoryService, words: str) -> None:
    """Counts, names and postings as the entries say, and the index the one a rebuild makes
    (the linked context of every turn included)."""
    assert memory.store.verify() == []
    store = memory.store
    assert isinstance(store, SqliteStore)
    kept = scores(store, words)
    store.rebuild_index()
    assert scores(store, words) == kept


def test_two_writers_taking_turns_see_each_others_writes(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    config = MemoryConfig(max_entries=6)
    with (
        MemoryService.open(None, database=path, config=config) as first,
        MemoryService.open(None, database=path, config=config) as second,
    ):
        writers = [first, second]
        for number, fruit in enumerate(FRUITS):
            writers[number % 2].remember(**turn(f"turn {number} about {fruit}"))
        # The cap counts the other writer's entries, whichever wrote last.
        for memory in writers:
            with pytest.raises(MemoryServiceError, match="holds 6 active entries"):
                memory.remember(**turn("one too many"))
        seqs = [seq for seq, _, _ in links(path)]
        assert links(path) == [
            (seq, seqs[at - 1] if at else None, seqs[at + 1] if at + 1 < len(seqs) else None)
            for at, seq in enumerate(seqs)
        ]
        # Each turn is indexed with the two before it, whoever wrote them.
        found = first.recall("bananas", scope=SCOPE, limit=10).hits
        assert sorted(hit.title for hit in found) == [
            "turn 1 about bananas",
            "turn 2 about cherries",
            "turn 3 about dates",
        ]
        assert_sound(first, " ".join(FRUITS))


def test_a_rolled_back_write_leaves_no_number_behind(tmp_path: Path) -> None:
    """A transaction that created a scope and a session, then failed: the numbers it drew
    are gone from the file, and the next names drawn take them."""
    path = tmp_path / "memory.db"
    with MemoryService.open(None, database=path, config=MemoryConfig(max_entries=1)) as memory:
        memory.remember(**turn("before"))
        with pytest.raises(MemoryServiceError, match="holds 1 active entries"):
            memory.remember_many(
                [turn("lost", session="chat-2") | {"scope": OTHER}, turn("full", session="chat-2")]
            )
        memory.remember(**turn("taken", session="chat-3") | {"scope": THIRD})
        memory.remember(**turn("kept", session="chat-2") | {"scope": OTHER})
        stored = {
            entry.body: (entry.scope, entry.source.session)
            for entry in memory.store.export((SCOPE, OTHER, THIRD))
        }
        assert stored == {
            "before": (SCOPE, "chat-1"),
            "taken": (THIRD, "chat-3"),
            "kept": (OTHER, "chat-2"),
        }
        assert memory.store.verify() == []


def test_a_session_named_again_after_a_scrub_is_stored_again(tmp_path: Path) -> None:
    """A purge and a scrub drop the name of a session no entry holds any more; the writer
    that kept its number must not write that number again."""
    path = tmp_path / "memory.db"
    with MemoryService.open(None, database=path) as memory:
        gone = memory.remember(**turn("only turn", session="chat-9"))["id"]
        memory.forget(gone, purge=True, scope=SCOPE)
        assert isinstance(memory.store, SqliteStore)
        memory.store.scrub()
        memory.remember(**turn("new turn", session="chat-9"))
        assert [entry.source.session for entry in memory.store.export((SCOPE,))] == ["chat-9"]
        assert_sound(memory, "turn")


def test_a_store_opened_again_forgets_what_it_knew(tmp_path: Path) -> None:
    """data_version is one connection's count: after a close, another process's writes are
    not hidden by a number the new connection happens to start at."""
    path = tmp_path / "memory.db"
    config = MemoryConfig(max_entries=2)
    with MemoryService.open(None, database=path, config=config) as first:
        first.remember(**turn("one"))
        first.store.close()  # the next call opens a new connection
        with MemoryService.open(None, database=path, config=config) as second:
            second.remember(**turn("two"))
        with pytest.raises(MemoryServiceError, match="holds 2 active entries"):
            first.remember(**turn("three"))
        assert first.store.verify() == []


def waiting_postings(path: Path) -> int:
    with sqlite3.connect(path) as connection:
        return int(connection.execute("SELECT tail FROM memory_index_totals").fetchone()[0])


def test_a_writer_packs_the_tail_another_writer_filled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The count of postings waiting in the tail is kept between one writer's adds; a pack
    is due when the FILE's tail is full, so the other writer's postings count."""
    monkeypatch.setattr(sqlite_postings, "PACK_AT", 40)
    path = tmp_path / "memory.db"
    with (
        MemoryService.open(None, database=path) as first,
        MemoryService.open(None, database=path) as second,
    ):
        for number in range(60):
            writer = first if number % 7 == 0 else second  # `first` knows an old count
            writer.remember(**turn(f"turn {number} about {FRUITS[number % 6]}"))
            assert waiting_postings(path) < sqlite_postings.PACK_AT
        assert first.store.verify() == []


def test_a_rolled_back_write_is_not_counted_in_the_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch indexed some of its items (a merge flushes the index) and then failed: the
    postings it added are gone, so the next pack comes when the file's tail is full, not
    before."""
    monkeypatch.setattr(sqlite_postings, "PACK_AT", 30)
    path = tmp_path / "memory.db"
    with MemoryService.open(None, database=path, config=MemoryConfig(max_entries=3)) as memory:
        memory.remember(text="a fact", kind="fact", key="k", scope=SCOPE)
        with pytest.raises(MemoryServiceError, match="holds 3 active entries"):
            memory.remember_many(
                [
                    {"text": "many words about " + " ".join(FRUITS), "scope": SCOPE},
                    {"text": "a fact", "kind": "fact", "key": "k", "scope": SCOPE},
                    {"text": "fills the scope", "scope": SCOPE},
                    {"text": "one too many", "scope": SCOPE},
                ]
            )
        before = waiting_postings(path)
        for number in range(30):  # three postings each: note, its number, plain
            memory.remember(text=f"note {number} plain", scope=f"/work/notes/{number}")
            after = waiting_postings(path)
            if after < before:  # a pack: due only once the file's tail was full
                assert before + 3 >= sqlite_postings.PACK_AT
                break
            assert after == before + 3
            before = after
        else:
            pytest.fail("no pack")
        assert memory.store.verify() == []
