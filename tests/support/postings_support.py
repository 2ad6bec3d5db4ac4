"""The SQLite store's text index (sqlite_postings.py) side by side with a real FTS5 table built
the way the store's schema 2 built it (a scope term, then the indexed fields, `ascii`
tokenizer), so a test can hold the index's scores to FTS5's bm25() float for float."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from agentscript.memory import sqlite_postings, sqlite_ranking
from agentscript.memory.sqlite_postings import IndexedEntry
from agentscript.memory.store import INDEXED_FIELDS, FieldWeights

DEFAULT_WEIGHTS = FieldWeights().as_tuple()


class Twins:
    """A postings database and an FTS5 database, written alike."""

    def __init__(self, folder: Path) -> None:
        self.ours = sqlite3.connect(folder / "postings.db", isolation_level=None)
        self.fts5 = sqlite3.connect(folder / "fts5.db", isolation_level=None)
        # Every statement commits on its own here; these files compare layouts and scores,
        # never survive a crash, so no commit waits for the disk (fsync) to say it is written.
        for connection in (self.ours, self.fts5):
            connection.execute("PRAGMA synchronous = OFF")
        for statement in sqlite_postings.SCHEMA:
            self.ours.execute(statement)
        self.fts5.execute(
            f"CREATE VIRTUAL TABLE terms USING fts5(scope_term, {', '.join(INDEXED_FIELDS)}, "
            "tokenize = 'ascii')"
        )
        self.scopes: dict[int, str] = {}

    def add(self, seq: int, scope: str, fields: Sequence[Sequence[str]]) -> IndexedEntry:
        """Index one entry (its words per field) in both."""
        entry = indexed(seq, scope, fields)
        sqlite_postings.add(self.ours, [entry])
        self.fts5.execute(
            f"INSERT INTO terms (rowid, scope_term, {', '.join(INDEXED_FIELDS)}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [seq, scope_term(scope), *(" ".join(words) for words in fields)],
        )
        self.scopes[seq] = scope
        return entry

    def remove(self, entries: Sequence[IndexedEntry]) -> None:
        sqlite_postings.remove(self.ours, entries)
        for entry in entries:
            self.fts5.execute("DELETE FROM terms WHERE rowid = ?", (entry.seq,))

    def scores(
        self,
        terms: Sequence[str],
        scopes: Sequence[str],
        weights: Sequence[float] = DEFAULT_WEIGHTS,
        reader: sqlite_postings.PostingsReader | None = None,
    ) -> dict[int, float]:
        return sqlite_ranking.scores(
            self.ours, terms, scopes, weights, reader or sqlite_postings.PostingsReader()
        )

    def fts5_scores(
        self,
        terms: Sequence[str],
        scopes: Sequence[str],
        weights: Sequence[float] = DEFAULT_WEIGHTS,
    ) -> dict[int, float]:
        return fts5_scores(self.fts5, terms, scopes, weights)

    def close(self) -> None:
        self.ours.close()
        self.fts5.close()


def body(*words: str) -> list[list[str]]:
    """The indexed fields of an entry holding `words` in its body only."""
    fields: list[list[str]] = [[] for _ in INDEXED_FIELDS]
    fields[INDEXED_FIELDS.index("body")] = list(words)
    return fields


def indexed(seq: int, scope: str, fields: Sequence[Sequence[str]]) -> IndexedEntry:
    """The IndexedEntry of an entry whose fields hold `fields` (words already tokens)."""
    counts: dict[str, list[int]] = {}
    for position, words in enumerate(fields):
        for word in words:
            counts.setdefault(word, [0] * len(INDEXED_FIELDS))[position] += 1
    return IndexedEntry.of(seq, scope, counts, 1 + sum(len(words) for words in fields))


def fts5_scores(
    fts5: sqlite3.Connection,
    terms: Sequence[str],
    scopes: Sequence[str],
    weights: Sequence[float] = DEFAULT_WEIGHTS,
) -> dict[int, float]:
    """FTS5's bm25() (negated, as the index scores) of every row of `scopes` holding a term."""
    expression = f"{{{' '.join(INDEXED_FIELDS)}}} : ({' OR '.join(terms)})"
    listed = ", ".join(repr(float(weight)) for weight in (0.0, *weights))
    rows = fts5.execute(
        f"SELECT rowid, scope_term, bm25(terms, {listed}) FROM terms WHERE terms MATCH ?",
        (expression,),
    ).fetchall()
    return {rowid: -score for rowid, scope, score in rows if scope_of(scope) in scopes}


def scope_term(scope: str) -> str:
    return "s" + scope.strip("/")


def scope_of(term: str) -> str:
    return "/" + term[1:]
