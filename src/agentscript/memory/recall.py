"""Ranking for recall: BM25 candidates from the store, then a few bounded, explainable steps.

1. The store returns the best `pool` entries by weighted BM25 (tags > title > key > body >
   context) over analysed terms. Terms that more than `common_share` of all entries hold are
   left out of that search as long as a rarer term remains: they weigh little in BM25 (their
   IDF is low) and cost the most (every entry holding one is scored), so leaving them out is
   what keeps a recall in a large scope from scoring most of it. An episodic entry written
   without a context is indexed with the turns before it in its source session as context
   (store.py, LINKED_CONTEXT_TURNS), so plain turns as a host writes them match through their
   neighbours as the benchmark's explicit context does. Everything after re-orders that
   pool; nothing adds entries the text does not match, except the feedback step's second
   search, run with the same filter.
2. Pseudo-relevance feedback (optional): the terms that characterise the top few entries, and
   are rare in the pool, become a second query whose scores are added at a fraction.
3. Session support: an entry whose source session also produced other strong matches gains a
   share of the best of them, because a memory is rarely relevant alone.
4. Time hints: when the query names absolute dates (timehints.py), entries whose event day
   falls in one of those windows are multiplied by `1 + time_weight`.
5. Recency breaks ties: a bounded multiplier (at most `1 + recency_weight`) decaying with age,
   so it can reorder near-equal scores and never lift an irrelevant entry over a relevant one,
   nor overturn field precedence: of entries matching the same words alike, one holding them
   in a tag ranks above one holding them in its title, above one holding them in its body
   (`precedence_margin`; RecallTuning refuses a recency_weight that could). Scores still
   equal are ordered by accessed_at, the most recently recalled first, then by id.
6. Semantic re-ranking (optional, semantic.py): an embedding model re-orders the best few by
   reciprocal-rank fusion; without a model, or when it fails, the order above stands.
Recency counts from event_time for what happened (episodic entries, summaries) and from
updated_at for what is known (facts, knowledge), never from accessed_at: ranking by accessed_at
would let what was recalled once be recalled forever.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from agentscript.memory.entries import Entry
from agentscript.memory.semantic import SemanticRanker
from agentscript.memory.store import (
    BM25_B,
    BM25_K1,
    EntryFilter,
    FieldWeights,
    Match,
    MemoryStore,
    TextQuery,
)
from agentscript.memory.timehints import TimeWindow
from agentscript.memory.timeline import bucket_days, moment_microseconds

_SECONDS_PER_DAY = 86_400.0
_MICROSECONDS_PER_SECOND = 1_000_000


@dataclass(frozen=True, slots=True)
class RecallTuning:
    """The knobs of ranking. The defaults are the configuration measured in
    docs/memory-service.md; the benchmark switches each step off to show what it gains."""

    weights: FieldWeights = field(default_factory=FieldWeights)
    pool: int = 100
    recency_weight: float = 0.05
    recency_half_life_days: float = 30.0
    session_weight: float = 0.3
    feedback_docs: int = 0
    feedback_terms: int = 0
    feedback_weight: float = 0.0
    time_weight: float = 0.5
    common_share: float = 1.0

    def __post_init__(self) -> None:
        margin = precedence_margin(self.weights)
        if 1.0 + self.recency_weight >= margin:
            raise ValueError(
                f"recency_weight {self.recency_weight} could overturn field precedence: the "
                f"weights put a tag, title or body hit at most {margin:.3f}x above the next "
                "field's, and recency may multiply a score by at most that"
            )


@dataclass(frozen=True, slots=True)
class Ranked:
    entry: Entry
    score: float


@dataclass(frozen=True, slots=True)
class Ranking:
    """The results, best first; `total`, how many entries matched before the limit; and a note
    for the caller (why semantic re-ranking was skipped)."""

    results: list[Ranked]
    total: int
    note: str | None = None


def precedence_margin(weights: FieldWeights) -> float:
    """The least factor by which one hit in a higher field (tags > title > body) outscores the
    same hit in the next one, for entries of equal length: BM25's term frequency saturates as
    tf·(k1+1)/(tf+K), whose ratio between two weights is smallest for the shortest entries,
    where K is k1·(1-b)."""
    floor = BM25_K1 * (1.0 - BM25_B)
    pairs = ((weights.tags, weights.title), (weights.title, weights.body))
    return min((high / low) * (low + floor) / (high + floor) for high, low in pairs)


def rank(
    store: MemoryStore,
    terms: list[str],
    where: EntryFilter,
    limit: int,
    tuning: RecallTuning,
    now: datetime,
    windows: list[TimeWindow] | None = None,
    *,
    query: str = "",
    semantic: SemanticRanker | None = None,
) -> Ranking:
    """The best `limit` entries for `terms` under `where`, best first, ties by id; `windows`
    are the time hints of the query, `query` its text for `semantic`. Only the winners (and
    the candidates `semantic` re-ranks) are loaded from the store."""
    pool = max(tuning.pool, limit, semantic.pool if semantic is not None else 0)
    searched = _searched_terms(store, terms, tuning.common_share)
    matches = {
        match.id: match
        for match in store.search(TextQuery(tuple(searched), tuning.weights), where, pool)
    }
    # Fewer matches than asked for are all there are; otherwise count them.
    total = (
        len(matches)
        if len(matches) < pool and searched == terms
        else store.count_matches(TextQuery(tuple(terms)), where)
    )
    scores = {identifier: match.score for identifier, match in matches.items()}
    if tuning.feedback_terms and tuning.feedback_weight and matches:
        expansion = _feedback_terms(store, list(matches.values()), terms, where, tuning)
        if expansion:
            for match in store.search(TextQuery(tuple(expansion), tuning.weights), where, pool):
                matches.setdefault(match.id, match)
                scores[match.id] = scores.get(match.id, 0.0) + tuning.feedback_weight * match.score
    if tuning.session_weight:
        scores = _session_support(matches, scores, tuning.session_weight)
    moment, hints = moment_microseconds(now), windows or []
    final = {
        identifier: score
        * _recency(matches[identifier], moment, tuning)
        * _timeliness(matches[identifier], hints, tuning)
        for identifier, score in scores.items()
    }
    ordered = _best_first(final, matches)
    if semantic is not None:
        window = [matches[identifier] for identifier in ordered[: max(limit, semantic.pool)]]
        entries = {entry.id: entry for entry in store.entries_at(where, window)}
    else:
        entries = _load_remembered_first(store, where, [matches[key] for key in ordered], limit)
    scored = [(identifier, final[identifier]) for identifier in ordered]
    note = None
    if semantic is not None:
        reranked = semantic.rerank(store, where.scopes, query, ordered, entries)
        scored, note = reranked.order or scored, reranked.problem
    loaded = [(identifier, score) for identifier, score in scored if identifier in entries]
    # What users and programs remembered comes before what runs learned on their own.
    loaded.sort(key=lambda pair: entries[pair[0]].learned)
    return Ranking(
        [Ranked(entries[identifier], score) for identifier, score in loaded[:limit]], total, note
    )


def _best_first(scores: dict[str, float], matches: dict[str, Match]) -> list[str]:
    """The ids by score, equal scores by accessed_at (the most recently recalled first), then
    by id: an order that never depends on how the store happened to return them."""
    by_id = sorted(scores)
    by_access = sorted(by_id, key=lambda identifier: matches[identifier].accessed, reverse=True)
    return sorted(by_access, key=lambda identifier: -scores[identifier])


def _load_remembered_first(
    store: MemoryStore, where: EntryFilter, ordered: list[Match], limit: int
) -> dict[str, Entry]:
    """The entries of the best `limit` matches, and further ones while learned entries (run
    memories, experiences) take places that remembered ones further down can fill."""
    entries: dict[str, Entry] = {}
    step = max(limit, 1)
    for start in range(0, len(ordered), step):
        chunk = ordered[start : start + step]
        entries.update((entry.id, entry) for entry in store.entries_at(where, chunk))
        if sum(not entry.learned for entry in entries.values()) >= limit:
            break
    return entries


def _searched_terms(store: MemoryStore, terms: list[str], share: float) -> list[str]:
    """The query's terms without those more than `share` of all entries hold, unless that
    would leave none: then the rarest stays."""
    if share >= 1.0 or len(terms) < 2:
        return terms
    statistics = store.term_documents(terms)
    most = share * statistics.documents
    kept = [term for term in terms if statistics.holding[term] <= most]
    if kept:
        return kept
    return [min(terms, key=lambda term: (statistics.holding[term], term))]


def _recency(match: Match, now: int, tuning: RecallTuning) -> float:
    """The recency multiplier of a match at `now` (microseconds since the epoch). The age in
    seconds is the integer difference over 10**6, the float timedelta.total_seconds() gives."""
    if not tuning.recency_weight:
        return 1.0
    age_days = max((now - match.recency) / _MICROSECONDS_PER_SECOND, 0.0) / _SECONDS_PER_DAY
    return 1.0 + tuning.recency_weight * math.pow(0.5, age_days / tuning.recency_half_life_days)


def _timeliness(match: Match, windows: list[TimeWindow], tuning: RecallTuning) -> float:
    if not windows or not tuning.time_weight:
        return 1.0
    first, stop = bucket_days(match.bucket)
    last = stop - timedelta(days=1)
    return 1.0 + tuning.time_weight if any(w.holds(first, last) for w in windows) else 1.0


def _session_support(
    matches: dict[str, Match], scores: dict[str, float], weight: float
) -> dict[str, float]:
    """Add `weight` × the best score among the other matches of the same source session: the
    session's best score, or its second best for a match scoring the best (the two best of
    each session found in one pass, without a list sorted for every match)."""
    tops: dict[str, tuple[float, float | None]] = {}
    for identifier, score in scores.items():
        session = matches[identifier].session
        if session is None:
            continue
        known = tops.get(session)
        if known is None:
            tops[session] = (score, None)
        elif score > known[0]:
            tops[session] = (score, known[0])
        elif known[1] is None or score > known[1]:
            tops[session] = (known[0], score)
    supported: dict[str, float] = {}
    for identifier, score in scores.items():
        session = matches[identifier].session
        first, second = tops[session] if session is not None else (None, None)
        other = second if first == score else first
        supported[identifier] = score + weight * (other if other is not None else 0.0)
    return supported


def _feedback_terms(
    store: MemoryStore,
    matches: list[Match],
    terms: list[str],
    where: EntryFilter,
    tuning: RecallTuning,
) -> list[str]:
    """Terms frequent in the top `feedback_docs` entries and rare across the pool (a
    Rocchio-style expansion with the pool as background), excluding the query's own terms."""
    analyzer = store.analyzer
    pool = store.entries_at(where, matches)
    order = {match.id: index for index, match in enumerate(matches)}
    pool.sort(key=lambda entry: order[entry.id])
    documents = [set(analyzer.terms(f"{entry.title} {entry.body}")) for entry in pool]
    pool_frequency: Counter[str] = Counter()
    for document in documents:
        pool_frequency.update(document)
    top: Counter[str] = Counter()
    for document in documents[: tuning.feedback_docs]:
        top.update(document)
    known = set(terms)
    size = len(documents)
    weighted = {
        term: count * math.log(1.0 + size / pool_frequency[term])
        for term, count in top.items()
        if term not in known and count >= 2 and not term.isdigit()
    }
    ordered = sorted(weighted.items(), key=lambda item: (-item[1], item[0]))
    return [term for term, _ in ordered[: tuning.feedback_terms]]
