"""The SQLite store's text index with real files and real processes: a reader while another
process commits between its statements, a writer SIGKILLed in the middle of a pack, two
writers packing at once with a third process reading, a reader's ShapeBook kept across another
process's writes, the incremental index against a rebuilt one, damage reported as a store
error, and the text of a forgotten entry gone from every page."""

from __future__ import annotations

import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentscript.memory import MemoryService, MemoryServiceError, sqlite_postings
from agentscript.memory.sqlite_store import SqliteStore
from agentscript.memory.store import EntryFilter, FieldWeights, TextQuery

CHILD = Path(__file__).parents[1] / "support" / "postings_child.py"
PROCESS_TIMEOUT_SECONDS = 300
ALL = 1_000_000
DEFAULT_WEIGHTS = FieldWeights()


def child(*arguments: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHILD), *map(str, arguments)],
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_SECONDS,
    )


def spawn(*arguments: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *map(str, arguments)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def acknowledged(output: str) -> list[str]:
    return [line.split()[1] for line in output.splitlines() if line.startswith("ok ")]


def scores(
    store: SqliteStore, words: str, weights: FieldWeights = DEFAULT_WEIGHTS
) -> dict[str, float]:
    """Every matching entry's score by id (archived ones too), as the store ranks them."""
    terms = tuple(store.analyzer.terms(words))
    found = store.search(TextQuery(terms, weights), EntryFilter(("global",), archived=None), ALL)
    return {match.id: match.score for match in found}


QUERIES = ("pottery", "glaze wheel", "pottery glaze wheel kiln")


def all_scores(store: SqliteStore) -> list[dict[str, float]]:
    odd = FieldWeights(tags=0.5, title=3.25, key=0.0, body=1.75, context=0.1)
    return [scores(store, words) for words in QUERIES] + [scores(store, QUERIES[2], odd)]


def assert_index_equals_rebuilt(store: SqliteStore) -> None:
    """The index as written scores every query float for float as one rebuilt from the
    entries, and verify finds nothing before or after."""
    assert store.verify() == []
    before = all_scores(store)
    assert any(before), "nothing matched: the comparison compares nothing"
    store.rebuild_index()
    assert all_scores(store) == before
    assert store.verify() == []


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def open_memory(database: Path) -> Iterator[Callable[[], MemoryService]]:
    opened: list[MemoryService] = []

    def make() -> MemoryService:
        opened.append(MemoryService.open(None, database=database))
        return opened[-1]

    yield make
    for memory in opened:
        memory.close()


def store_of(memory: MemoryService) -> SqliteStore:
    assert isinstance(memory.store, SqliteStore)
    return memory.store


def connection_of(memory: MemoryService) -> sqlite3.Connection:
    """The store's own connection (opened), to trace the statements it runs."""
    store = store_of(memory)
    store.count(EntryFilter(("global",)))
    assert store._connection is not None
    return store._connection


def commit_from_another_process_at(
    connection: sqlite3.Connection, marker: str, database: Path
) -> list[subprocess.CompletedProcess[str]]:
    """When `connection` next starts a statement containing `marker`, another process
    remembers an entry (of a new shape, with packing small enough to pack the tail)."""
    done: list[subprocess.CompletedProcess[str]] = []

    def trace(statement: str) -> None:
        if marker in statement and not done:
            done.append(child("write", database, 9, 1))

    connection.set_trace_callback(trace)
    return done


# ---------------------------------------------------------------------- one snapshot


@pytest.mark.parametrize(
    "marker",
    [
        "FROM memory_posting_shapes WHERE id >=",  # after the totals and counts
        "FROM memory_postings AS p",  # after the shapes: new shapes and a pack
        "FROM memory_postings_tail WHERE",  # after the blocks: the tail packed away
    ],
)
def test_a_recall_reads_one_state_while_another_process_commits(
    open_memory: Callable[[], MemoryService], database: Path, marker: str
) -> None:
    reader = open_memory()
    for n in range(4):
        reader.remember(f"pottery lesson number {n} with a long wheel session")
    connection = connection_of(reader)
    written = commit_from_another_process_at(connection, marker, database)
    found = reader.recall("pottery wheel")
    connection.set_trace_callback(None)
    assert written and written[0].returncode == 0, written and written[0].stderr
    # The other process committed in the middle: this recall saw the state before it.
    assert found["total"] == 4
    assert reader.recall("pottery")["total"] == 5
    assert_index_equals_rebuilt(store_of(reader))


def test_verify_does_not_flag_a_clean_file_another_process_writes_to(
    open_memory: Callable[[], MemoryService], database: Path
) -> None:
    memory = open_memory()
    memory.remember("pottery lesson")
    connection = connection_of(memory)
    written = commit_from_another_process_at(connection, "FROM memory_index_totals", database)
    problems = store_of(memory).verify()
    connection.set_trace_callback(None)
    assert written and written[0].returncode == 0
    assert problems == []


# --------------------------------------------------------------------------- processes


@pytest.mark.parametrize("batch", [1, 7])  # a remember a call, or remember_many of 7
def test_a_writer_killed_in_the_middle_of_a_pack_leaves_a_sound_index(
    open_memory: Callable[[], MemoryService], database: Path, batch: int
) -> None:
    died = child("kill-in-pack", database, 60, batch)
    assert died.returncode == -signal.SIGKILL, died.stderr
    written = acknowledged(died.stdout)
    assert written, "the writer died before it acknowledged anything"
    memory = open_memory()
    store = store_of(memory)
    with sqlite3.connect(database) as raw:
        assert raw.execute("SELECT COUNT(*) FROM memory_postings").fetchone()[0] > 0
    # The killed write is rolled back whole: exactly the acknowledged entries, all findable.
    assert sorted(entry.id for entry in store.export(("global",))) == sorted(written)
    assert memory.recall("pottery", limit=3)["total"] == len(written)
    assert len(scores(store, "uniq0x0")) == 1
    assert_index_equals_rebuilt(store)


def test_a_writer_killed_as_it_commits_leaves_a_sound_index(
    open_memory: Callable[[], MemoryService], database: Path
) -> None:
    died = child("kill-at-commit", database, 25)
    assert died.returncode == -signal.SIGKILL, died.stderr
    written = acknowledged(died.stdout)
    assert len(written) == 25
    memory = open_memory()
    store = store_of(memory)
    assert sorted(entry.id for entry in store.export(("global",))) == sorted(written)
    assert memory.recall("pottery", limit=3)["total"] == 25
    assert len(scores(store, "uniq0x25")) == 0
    assert_index_equals_rebuilt(store)


def test_writers_killed_at_any_moment_leave_a_sound_index(
    open_memory: Callable[[], MemoryService], database: Path
) -> None:
    """Writers SIGKILLed after a while, wherever they are (in a remember, a pack, a commit,
    the WAL's fsync): the next process finds every acknowledged entry and a sound index."""
    written: list[str] = []
    for worker, seconds in enumerate((0.9, 1.3, 1.7), 1):
        writer = spawn("write", database, worker, 100_000)
        time.sleep(seconds)
        writer.kill()
        out, _ = writer.communicate(timeout=PROCESS_TIMEOUT_SECONDS)
        written += acknowledged(out[: out.rfind("\n") + 1])  # a line cut by the kill is none
    assert written, "no writer acknowledged anything before it was killed"
    memory = open_memory()
    store = store_of(memory)
    stored = {entry.id for entry in store.export(("global",))}
    assert set(written) <= stored and len(stored) <= len(written) + 3
    assert memory.recall("pottery", limit=3)["total"] == len(stored)
    assert_index_equals_rebuilt(store)


def test_a_kept_reader_follows_another_processs_removals_and_packs(
    open_memory: Callable[[], MemoryService], database: Path
) -> None:
    kept = open_memory()
    wrote = child("write", database, 1, 30)
    assert wrote.returncode == 0, wrote.stderr
    before = all_scores(store_of(kept))  # blocks and tail now kept by this reader
    forgot = child("forget", database, 4)  # rewrites blocks, takes entries out of the tail
    assert forgot.returncode == 0, forgot.stderr
    assert len(forgot.stdout.split("\n")) > 4
    after_removal = all_scores(store_of(kept))
    assert after_removal != before
    wrote = child("write", database, 2, 12)  # appends, packs
    assert wrote.returncode == 0, wrote.stderr
    later = all_scores(store_of(kept))
    fresh = SqliteStore(database)
    try:
        assert all_scores(fresh) == later
        assert fresh.term_documents(["potteri", "glaze"]) == (
            store_of(kept).term_documents(["potteri", "glaze"])
        )
    finally:
        fresh.close()
    assert_index_equals_rebuilt(store_of(kept))


@pytest.mark.parametrize("batch", [1, 10])  # a remember a call, or remember_many of 10
def test_two_writers_packing_at_once_and_a_reader_lose_nothing(
    open_memory: Callable[[], MemoryService], database: Path, batch: int
) -> None:
    memory = open_memory()
    memory.remember("pottery seed entry")
    reader = spawn("read", database, 4)
    writers = [spawn("write-many", database, worker, 120, batch) for worker in (1, 2)]
    outputs = [process.communicate(timeout=PROCESS_TIMEOUT_SECONDS) for process in writers]
    read_out, read_err = reader.communicate(timeout=PROCESS_TIMEOUT_SECONDS)
    for process, (_, err) in zip(writers, outputs, strict=True):
        assert process.returncode == 0, err
    assert reader.returncode == 0, read_err
    assert int(read_out.split()[1]) > 0, "the reader never read"
    written = [identifier for out, _ in outputs for identifier in acknowledged(out)]
    assert len(written) == 240
    store = store_of(memory)
    unique = [f"uniq{worker}x{n}" for worker in (1, 2) for n in range(120)]
    statistics = store.term_documents([*unique, "potteri", "glaze"])
    assert statistics.documents == 241
    assert statistics.holding == {**dict.fromkeys(unique, 1), "potteri": 241, "glaze": 80}
    assert memory.recall("pottery", limit=3)["total"] == 241
    assert_index_equals_rebuilt(store)


def test_a_readers_shape_book_follows_another_processs_writes(
    open_memory: Callable[[], MemoryService], database: Path
) -> None:
    kept = open_memory()
    kept.remember("pottery glaze")
    first = all_scores(store_of(kept))  # the book now holds the shapes of one entry
    wrote = child("write", database, 3, 40)
    assert wrote.returncode == 0, wrote.stderr
    later = all_scores(store_of(kept))
    assert later != first
    fresh = SqliteStore(database)
    try:
        assert all_scores(fresh) == later
    finally:
        fresh.close()


# ------------------------------------------------------------------------- in process


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_postings, "PACK_AT", 9)
    monkeypatch.setattr(sqlite_postings, "BLOCK_POSTINGS", 4)


def turn(text: str, session: str, **more: object) -> dict[str, object]:
    return {"text": text, "kind": "episodic", "source": {"session": session}, **more}


@pytest.mark.usefixtures("small_blocks")
def test_the_index_kept_through_every_kind_of_write_equals_a_rebuilt_one(
    open_memory: Callable[[], MemoryService],
) -> None:
    memory = open_memory()
    turns = memory.remember_many(
        [turn(f"turn {n} about pottery{' wheel' * (n % 3)}", f"s{n % 2}") for n in range(12)]
        + [{"text": f"note {n} on glaze and kiln"} for n in range(8)]
    )
    memory.update(turns[4]["id"], text="turn four now about a glaze kiln")  # neighbours too
    memory.forget(turns[6]["id"], purge=True)  # a middle turn: neighbours re-linked
    memory.forget(turns[7]["id"])  # archived, still indexed
    memory.remember("blue wheel", kind="fact", key="colour")
    memory.remember("green pottery wheel", kind="fact", key="colour")  # supersedes
    memory.remember("note 3 on glaze and kiln")  # merges
    assert_index_equals_rebuilt(store_of(memory))


@pytest.mark.parametrize("packed", [True, False], ids=["in a block", "in the tail"])
def test_a_forgotten_entrys_terms_leave_every_page_of_the_files(
    open_memory: Callable[[], MemoryService],
    database: Path,
    monkeypatch: pytest.MonkeyPatch,
    packed: bool,
) -> None:
    monkeypatch.setattr(sqlite_postings, "PACK_AT", 9 if packed else 10_000)
    memory = open_memory()
    for n in range(6):
        memory.remember(f"pottery wheel lesson {n}")
    secret = memory.remember("zyxwvut quorpel pottery")["id"]
    for n in range(6):
        memory.remember(f"glaze kiln lesson {n}")
    store = store_of(memory)
    with sqlite3.connect(database) as raw:
        in_blocks = raw.execute(
            "SELECT COUNT(*) FROM memory_postings WHERE term = 'zyxwvut'"
        ).fetchone()[0]
    assert in_blocks == (1 if packed else 0)
    store.scrub()
    assert b"quorpel" in database.read_bytes()  # the check can see a term
    memory.forget(secret, purge=True)
    for n in range(12):  # packs again (blocks holding the entry's seq are rewritten)
        memory.remember(f"pottery note {n}")
    assert memory.recall("zyxwvut quorpel")["count"] == 0
    assert store.verify() == []
    store.scrub()
    memory.close()
    files = [path for path in database.parent.iterdir() if path.name.startswith(database.name)]
    for path in files:
        content = path.read_bytes()
        assert b"zyxwvut" not in content and b"quorpel" not in content, path.name


def test_a_damaged_block_is_a_store_error_that_rebuild_index_repairs(
    open_memory: Callable[[], MemoryService], database: Path
) -> None:
    memory = open_memory()
    for n in range(5):
        memory.remember(f"pottery lesson {n}")
    store = store_of(memory)
    with store.transaction():
        assert store._connection is not None
        sqlite_postings.pack(store._connection)
    with sqlite3.connect(database) as raw:
        raw.execute("UPDATE memory_postings SET shapes = X'4801' WHERE term = 'potteri'")
    with pytest.raises(MemoryServiceError) as failed:
        memory.recall("pottery")
    assert str(database) in failed.value.message
    assert "rebuild_index" in failed.value.message
    assert store.verify() == ["the text index has 1 damaged blocks of postings"]
    store.rebuild_index()
    assert store.verify() == []
    assert memory.recall("pottery")["count"] == 5


def test_a_corrected_turns_old_text_is_not_the_next_turns_context(
    open_memory: Callable[[], MemoryService],
) -> None:
    memory = open_memory()
    first, second = memory.remember_many([turn("alpha apples", "s"), turn("bravo bananas", "s")])
    memory.update(second["id"], text="bravo blueberries")
    (third,) = memory.remember_many([turn("charlie cherries", "s")])
    hits = scores(store_of(memory), "bananas")
    assert third["id"] not in hits  # only the archived old version holds "bananas"
    assert first["id"] in scores(store_of(memory), "apples")
    assert third["id"] in scores(store_of(memory), "apples")  # two turns back


def nonsense_word(n: int) -> str:
    """A word no analyser changes (no vowel after the prefix, no suffix a stemmer strips)."""
    letters = "bcdfghjkmnpqrtvwxz"
    word = "zqv"
    for _ in range(4):
        word, n = word + letters[n % len(letters)], n // len(letters)
    return word


def test_purged_terms_leave_every_page_of_a_file_with_interior_pages(
    open_memory: Callable[[], MemoryService],
    database: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Thousands of terms, so the index's tables (and the entries' indexes) have interior
    b-tree pages, whose cells hold keys (terms, titles) too: every purged one must go."""
    monkeypatch.setattr(sqlite_postings, "PACK_AT", 500)
    memory = open_memory()
    words = [nonsense_word(n) for n in range(1_800)]
    ids: list[str] = []
    for start in range(0, len(words), 600):
        batch = words[start : start + 600]
        ids += [
            result["id"]
            for result in memory.remember_many([{"text": f"{word} pottery"} for word in batch])
        ]
    purged = set(words[::3])
    for word, identifier in zip(words, ids, strict=True):
        if word in purged:
            memory.forget(identifier, purge=True)
    store = store_of(memory)
    assert store.verify() == []
    with sqlite3.connect(database) as raw:
        interior = {
            name for (name,) in raw.execute("SELECT name FROM dbstat WHERE pagetype = 'internal'")
        }
    assert {"memory_term_documents", "memory_postings", "memory_entries_title"} <= interior
    store.scrub()
    memory.close()
    content = b"".join(
        path.read_bytes()
        for path in database.parent.iterdir()
        if path.name.startswith(database.name)
    )
    assert database.stat().st_size > 40 * 4096  # tables of many pages
    found = set(re.findall(rb"zqv[a-z]{4}", content))
    assert {word.encode() for word in words if word not in purged} <= found
    assert found.isdisjoint(word.encode() for word in purged)
