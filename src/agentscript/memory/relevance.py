"""How much of a query a recalled entry answers: a relevance from 0 to 1 that means the same in
every call.

A BM25 score only orders the hits of one call: it grows with the query's length and the
scope's size, and a term that half the entries hold weighs almost nothing (its IDF is floored
at BM25_MIN_IDF), so a hit matching only such words scores about 2e-06 whether it is the one
right answer or padding. A host reading scores across calls cannot tell the two apart.

Relevance is the share of the query's information the entry holds: each distinct query term
weighs its BM25 IDF (floored as ranking floors it), and an entry earns the weight of every
term found in its own fields (tags, title, key, body, context). 1.0: every word of the query
is there; 0.5: words worth half the query's weight; near 0: only words that most entries hold,
or a match found through the entry's session neighbours alone (its linked context). When
every query term is common, each weighs the same and relevance is the share of the words found.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from agentscript.memory.entries import Entry
from agentscript.memory.store import BM25_MIN_IDF, TermStatistics, indexed_fields
from agentscript.memory.text import Analyzer


def term_weights(terms: Sequence[str], statistics: TermStatistics) -> dict[str, float]:
    """Each query term's BM25 IDF over the whole index, floored as ranking floors it."""
    weights = {}
    for term in terms:
        holding = statistics.holding.get(term, 0)
        idf = math.log((statistics.documents - holding + 0.5) / (holding + 0.5))
        weights[term] = idf if idf > 0.0 else BM25_MIN_IDF
    return weights


def relevance(entry: Entry, weights: dict[str, float], analyzer: Analyzer) -> float:
    """The share of the query's weight (`term_weights`) that `entry`'s own fields hold."""
    total = sum(weights.values())
    if total <= 0.0:
        return 0.0
    missing = set(weights)
    for _, text in indexed_fields(entry):
        analyzer.discard_terms(missing, text)
        if not missing:
            break  # the fields left cannot add a term: a recall's best hits often stop here
    found = sum(weight for term, weight in weights.items() if term not in missing)
    return round(found / total, 3)
