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

The work per posting is done by numpy over the postings' arrays: a term's scores are one
gather and one multiplication (IEEE double operations, the same floats as Python's), the
partial sums one scatter-add per term into an array indexed by seq, and the look-ups of the
terms left one `searchsorted` over the entries still in the running.

How many entries match (a recall's `total`) is the size of the union of the terms' postings.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from agentscript.memory import sqlite_postings
from agentscript.memory.sqlite_postings import (
    PostingsReader,
    SeqArray,
    TermPostings,
    damaged_postings,
)
from agentscript.memory.store import BM25_MIN_IDF, scope_hash

# Partial sums add the same contributions in another order than the final ones, so they may
# differ from them in the last bits: every comparison with the bound leaves this much room.
_SLACK = 1e-9
# Arrays indexed by seq (less the lowest) serve a query while its seqs span at most this many
# times as many seqs as it has postings: one byte of flags and 8 of sums per seq spanned.
_DENSE_SPAN = 64

Scores = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class _Term:
    """One query term as ranking uses it: its postings and its score of each shape."""

    name: str
    postings: TermPostings
    weight: float  # the term's IDF, floored as FTS5 floors it
    parts: Scores  # by shape id: the shape's term-frequency part
    bound: float  # no entry's score for this term exceeds it

    def scores(self) -> Scores:
        """The term's score of every entry holding it, in the order of its seqs (IDF × part,
        as FTS5 multiplies)."""
        return self.scores_at(None)

    def scores_at(self, positions: NDArray[np.intp] | None) -> Scores:
        """The term's score of the postings at `positions` (None: all)."""
        shape_ids = self.postings.shape_ids
        try:
            parts = self.parts[shape_ids if positions is None else shape_ids[positions]]
        except IndexError as error:
            raise damaged_postings(self.name) from error
        return parts * self.weight

    def found(self, seqs: SeqArray) -> tuple[NDArray[np.bool_], Scores]:
        """Which of `seqs` (ascending or not) hold the term, and the term's score of those."""
        held = self.postings.seqs
        positions = np.searchsorted(held, seqs)
        inside = positions < len(held)
        holds = inside.copy()
        holds[inside] = held[positions[inside]] == seqs[inside]
        return holds, self.scores_at(positions[holds])


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
    shapes with another's postings. Begins the reader's query: `matched` with the same terms
    and scopes then takes the postings read here."""
    reader.begin_query()
    with sqlite_postings.read_snapshot(connection) as committed:
        taken = _terms(connection, list(dict.fromkeys(terms)), scopes, weights, reader, committed)
    if wanted is None or sum(len(term.postings) for term in taken) <= wanted:
        every = _union([term.postings.seqs for term in taken])
        return Best(_summed(every, taken), every=True)
    return Best(_summed(_candidates(taken, wanted), taken), every=False)


def matched(
    connection: sqlite3.Connection,
    terms: Sequence[str],
    scopes: Sequence[str],
    reader: PostingsReader,
) -> SeqArray:
    """The seqs of the entries of `scopes` holding any of `terms`, ascending."""
    keys = [scope_hash(scope) for scope in dict.fromkeys(scopes)]
    with sqlite_postings.read_snapshot(connection):
        lists = [reader.postings(connection, term, keys).seqs for term in dict.fromkeys(terms)]
    return _union(lists)


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
    top_part = float(parts.max()) if len(parts) else 0.0
    keys = [scope_hash(scope) for scope in dict.fromkeys(scopes)]
    taken = []
    for name in wanted:
        hits = holding[name]
        if not hits:
            continue
        idf = math.log((total.documents - hits + 0.5) / (hits + 0.5))
        weight = idf if idf > 0.0 else BM25_MIN_IDF
        postings = reader.postings(connection, name, keys, hold=True)
        if len(postings):
            taken.append(_Term(name, postings, weight, parts, weight * top_part))
    return taken


@dataclass(frozen=True, slots=True)
class _Slots:
    """Where each seq of a query's postings is counted in arrays indexed by position: at
    `seq - low` when the seqs span little more than there are postings (rowids, as a rule:
    one pass to mark them), else at the seq's rank among all of them (`every`, a sort, for
    a file whose seqs lie far apart)."""

    low: int
    size: int
    every: SeqArray | None

    def of(self, seqs: SeqArray) -> SeqArray:
        return seqs - self.low if self.every is None else np.searchsorted(self.every, seqs)

    def seqs(self, positions: SeqArray) -> SeqArray:
        return positions + self.low if self.every is None else self.every[positions]


def _slots(lists: list[SeqArray]) -> _Slots:
    """The slots of the seqs of `lists` (each ascending, none empty)."""
    low = min(int(seqs[0]) for seqs in lists)
    span = 1 + max(int(seqs[-1]) for seqs in lists) - low
    if span <= _DENSE_SPAN * sum(map(len, lists)):
        return _Slots(low, span, None)
    every = np.unique(np.concatenate(lists))
    return _Slots(0, len(every), every)


def _union(lists: list[SeqArray]) -> SeqArray:
    """The distinct seqs of `lists`, ascending: flags marked per list, then read once (a
    sort or hash of every posting costs several times more)."""
    lists = [seqs for seqs in lists if len(seqs)]
    if not lists:
        return np.empty(0, dtype=np.int64)
    slots = _slots(lists)
    held = np.zeros(slots.size, dtype=np.bool_)
    for seqs in lists:
        held[slots.of(seqs)] = True
    return slots.seqs(np.flatnonzero(held))


def _candidates(taken: list[_Term], wanted: int) -> SeqArray:
    """The entries that may be among the best `wanted` (see the module's docstring),
    ascending. The partial sums live in an array indexed by slot; `seen` marks the entries
    met so far (a score may be 0.0 when a field weighs nothing)."""
    rarest_first = sorted(taken, key=lambda term: len(term.postings))
    # left[n]: what the terms from the nth (rarest first) on could add at most.
    left = [0.0] * (len(taken) + 1)
    for step in range(len(taken) - 1, -1, -1):
        left[step] = left[step + 1] + rarest_first[step].bound
    slots = _slots([term.postings.seqs for term in taken])
    partial = np.zeros(slots.size)
    seen = np.zeros(slots.size, dtype=np.bool_)
    met: list[SeqArray] = []
    step = 0
    while step < len(taken):
        # No partial sum exceeds what the terms taken could add (left[0] - left[step]): until
        # that passes what the others could, there is no point ranking them.
        if sum(map(len, met)) >= wanted and left[0] - left[step] > left[step]:
            floor = _floor(partial[np.concatenate(met)], wanted)
            if floor > left[step] * (1.0 + _SLACK):
                break
        term = rarest_first[step]
        at = slots.of(term.postings.seqs)
        met.append(at[~seen[at]])
        seen[at] = True
        partial[at] += term.scores()
        step += 1
    candidates = np.concatenate(met)
    while True:
        sums = partial[candidates]
        cut = _floor(sums, wanted) * (1.0 - _SLACK) - left[step]
        candidates = candidates[sums >= cut]
        if step == len(taken):
            return np.sort(slots.seqs(candidates))
        holds, found = rarest_first[step].found(slots.seqs(candidates))
        partial[candidates[holds]] += found
        step += 1


def _floor(sums: Scores, wanted: int) -> float:
    """The `wanted`-th best of the partial sums (the least, when there are fewer)."""
    if len(sums) <= wanted:
        return float(sums.min()) if len(sums) else 0.0
    return float(np.partition(sums, len(sums) - wanted)[len(sums) - wanted])


def _summed(entries: SeqArray, taken: list[_Term]) -> dict[int, float]:
    """Each of `entries`' score (ascending seqs): the terms' scores added in the query's
    order, as FTS5 adds its phrases' (from 0.0, which adds nothing to the first)."""
    sums = np.zeros(len(entries))
    for term in taken:
        holds, found = term.found(entries)
        sums[holds] += found
    return dict(zip(entries.tolist(), sums.tolist(), strict=True))
