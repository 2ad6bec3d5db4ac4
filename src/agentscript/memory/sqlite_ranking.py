"""The SqliteStore's ranking: the best entries of a query by BM25, exactly as FTS5's bm25()
scores them, without scoring every entry that matches.

Why: in one scope of 100k entries a question's terms are held by tens of thousands of entries
(a speaker's name, "make", "like"), and scoring each of them in Python cost most of a recall.
A recall wants the best hundred. So terms are taken rarest first, each scored for every entry
holding it, until the best `wanted` partial sums exceed what the terms not taken yet could add
at most (their IDF times the largest term-frequency part any shape has): no entry unseen by
then can reach the best. The common terms left are then looked up only for the entries that
can still make it, and dropped ones fall away as the bound shrinks (MaxScore, term at a time).
Every score returned is then summed again term by term in the query's order, as FTS5 adds its
phrases, so it is the same float FTS5 (and the PostgreSQL store) computes.

How many entries match (a recall's `total`) is the size of the union of the terms' postings:
sets, no scores.
"""

from __future__ import annotations

import heapq
import math
import operator
import sqlite3
from bisect import bisect_left
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from itertools import compress

from agentscript.memory import sqlite_postings
from agentscript.memory.sqlite_postings import PostingsReader, TermPostings, damaged_postings
from agentscript.memory.store import BM25_MIN_IDF, scope_hash

# Looking one entry up in a term's postings (a bisection) costs about as much as scoring this
# many postings: above it, the term's postings are all scored instead.
_LOOKUPS_PER_POSTING = 8
# Partial sums add the same contributions in another order than the final ones, so they may
# differ from them in the last bits: every comparison with the bound leaves this much room.
_SLACK = 1e-9


@dataclass(frozen=True, slots=True)
class _Term:
    """One query term as ranking uses it: its postings and its score of each shape."""

    name: str
    postings: TermPostings
    weight: float  # the term's IDF, floored as FTS5 floors it
    parts: list[float]  # by shape id: the shape's term-frequency part
    bound: float  # no entry's score for this term exceeds it

    def scores(self) -> dict[int, float]:
        """The term's score of every entry holding it (IDF × part, as FTS5 multiplies)."""
        postings, weight, part = self.postings, self.weight, self.parts.__getitem__
        try:
            found = dict(
                zip(postings.seqs, map(weight.__mul__, map(part, postings.shape_ids)), strict=True)
            )
            found.update(
                zip(
                    postings.tail,
                    map(weight.__mul__, map(part, postings.tail.values())),
                    strict=True,
                )
            )
        except IndexError as error:
            raise damaged_postings(self.name) from error
        return found

    def scores_of(self, seqs: Collection[int]) -> dict[int, float]:
        """The term's score of those of `seqs` holding it."""
        postings = self.postings
        held = postings.seqs
        if len(seqs) * _LOOKUPS_PER_POSTING > len(held):
            every = self.scores()
            return {seq: every[seq] for seq in seqs if seq in every}
        shape_ids, tail, parts, weight = postings.shape_ids, postings.tail, self.parts, self.weight
        found: dict[int, float] = {}
        end = len(held)
        try:
            for seq in seqs:
                shape = tail.get(seq)
                if shape is None:
                    at = bisect_left(held, seq)
                    if at == end or held[at] != seq:
                        continue
                    shape = shape_ids[at]
                found[seq] = weight * parts[shape]
        except IndexError as error:
            raise damaged_postings(self.name) from error
        return found


@dataclass(frozen=True, slots=True)
class Best:
    """The scores (by seq) of the entries that may be among the best asked for; `every`: of
    every entry matching (nothing was left out)."""

    scores: dict[int, float]
    every: bool


def scores(
    connection: sqlite3.Connection,
    terms: Sequence[str],
    scopes: Sequence[str],
    weights: Sequence[float],
    reader: PostingsReader,
) -> dict[int, float]:
    """The BM25 score of every entry of `scopes` holding any of `terms` (by seq)."""
    return best(connection, terms, scopes, weights, reader, wanted=None).scores


def best(
    connection: sqlite3.Connection,
    terms: Sequence[str],
    scopes: Sequence[str],
    weights: Sequence[float],
    reader: PostingsReader,
    *,
    wanted: int | None,
) -> Best:
    """The BM25 scores (by seq), as FTS5's bm25() with these column weights computes them, of
    the entries of `scopes` holding any of `terms` that may be among the best `wanted`: every
    entry scoring at least the `wanted`-th best score is there (so every tie with it), and
    maybe a few more. `wanted=None`: every entry. `reader` is the store's. Read in one snapshot
    of the file: another process committing meanwhile must not pair one state's totals or
    shapes with another's postings."""
    with sqlite_postings.read_snapshot(connection) as committed:
        taken = _terms(connection, list(dict.fromkeys(terms)), scopes, weights, reader, committed)
    if wanted is None or sum(len(term.postings) for term in taken) <= wanted:
        return Best(_every_score(taken), every=True)
    return Best(_summed(*_candidates(taken, wanted)), every=False)


def matched(
    connection: sqlite3.Connection,
    terms: Sequence[str],
    scopes: Sequence[str],
    reader: PostingsReader,
) -> set[int]:
    """The seqs of the entries of `scopes` holding any of `terms`."""
    keys = [scope_hash(scope) for scope in dict.fromkeys(scopes)]
    with sqlite_postings.read_snapshot(connection):
        lists = [reader.postings(connection, term, keys) for term in dict.fromkeys(terms)]
    found: set[int] = set()
    for postings in lists:
        found.update(postings.seqs)
        found.update(postings.tail)
    return found


def _terms(
    connection: sqlite3.Connection,
    wanted: list[str],
    scopes: Sequence[str],
    weights: Sequence[float],
    reader: PostingsReader,
    committed: bool,
) -> list[_Term]:
    """The query's terms some entry holds, in the query's order, with what scoring needs."""
    total = sqlite_postings.totals(connection)
    if not wanted or not total.documents:
        return []
    holding = sqlite_postings.documents_holding(connection, wanted, reader)
    average = float(total.tokens) / float(total.documents)
    parts = reader.shapes.parts(connection, weights, average, committed=committed)
    top_part = max(parts, default=0.0)
    keys = [scope_hash(scope) for scope in dict.fromkeys(scopes)]
    taken = []
    for name in wanted:
        hits = holding[name]
        if not hits:
            continue
        idf = math.log((total.documents - hits + 0.5) / (hits + 0.5))
        weight = idf if idf > 0.0 else BM25_MIN_IDF
        postings = reader.postings(connection, name, keys)
        if len(postings):
            taken.append(_Term(name, postings, weight, parts, weight * top_part))
    return taken


def _every_score(taken: list[_Term]) -> dict[int, float]:
    """Every entry's score: each term's scores added in the query's order, as FTS5 adds its
    phrases'."""
    summed: dict[int, float] = {}
    for term in taken:
        _add(summed, term.scores())
    return summed


def _candidates(taken: list[_Term], wanted: int) -> tuple[list[int], list[dict[int, float]]]:
    """The entries that may be among the best `wanted`, and each term's scores known of them,
    in the query's order (see the module's docstring)."""
    rarest_first = sorted(range(len(taken)), key=lambda at: len(taken[at].postings))
    # left[n]: what the terms from the nth (rarest first) on could add at most.
    left = [0.0] * (len(taken) + 1)
    for step in range(len(taken) - 1, -1, -1):
        left[step] = left[step + 1] + taken[rarest_first[step]].bound
    known: list[dict[int, float]] = [{} for _ in taken]
    partial: dict[int, float] = {}
    floor = 0.0
    step = 0
    while step < len(taken):
        # No partial sum exceeds what the terms taken could add (left[0] - left[step]): until
        # that passes what the others could, there is no point ranking them.
        if len(partial) >= wanted and left[0] - left[step] > left[step]:
            floor = _floor(partial, wanted, floor)
            if floor > left[step] * (1.0 + _SLACK):
                break
        known[rarest_first[step]] = taken[rarest_first[step]].scores()
        _add(partial, known[rarest_first[step]])
        step += 1
    while True:
        floor = _floor(partial, wanted, floor)
        cut = floor * (1.0 - _SLACK) - left[step]
        kept = list(map(cut.__le__, partial.values()))
        partial = dict(
            zip(compress(partial.keys(), kept), compress(partial.values(), kept), strict=True)
        )
        if step == len(taken):
            return list(partial), known
        known[rarest_first[step]] = taken[rarest_first[step]].scores_of(partial)
        for seq, score in known[rarest_first[step]].items():
            partial[seq] += score
        step += 1


def _add(summed: dict[int, float], found: dict[int, float]) -> None:
    """Add `found` into `summed`, entry by entry, with dict and map operations (so in C)."""
    both = list(summed.keys() & found.keys())
    sums = list(map(operator.add, map(summed.__getitem__, both), map(found.__getitem__, both)))
    summed.update(found)
    summed.update(zip(both, sums, strict=True))


def _floor(partial: dict[int, float], wanted: int, known_floor: float) -> float:
    """The `wanted`-th best of the partial sums, given one no higher (partial sums only grow,
    so the last one found is): only the sums above it are ranked."""
    values = partial.values()
    if known_floor > 0.0:
        high = list(compress(values, map(known_floor.__le__, values)))
        if len(high) >= wanted:
            return heapq.nlargest(wanted, high)[-1]
    return heapq.nlargest(wanted, values)[-1]


def _summed(entries: Iterable[int], known: list[dict[int, float]]) -> dict[int, float]:
    """Each of `entries`' score: the scores `known` of each term (in the query's order) added
    in that order, as FTS5 adds its phrases'."""
    summed: dict[int, float] = {}
    for seq in entries:
        total: float | None = None
        for found in known:
            score = found.get(seq)
            if score is not None:
                total = score if total is None else total + score
        if total is not None:
            summed[seq] = total
    return summed
