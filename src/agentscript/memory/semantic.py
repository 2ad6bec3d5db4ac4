"""Semantic re-ranking: an embedding model's second opinion on the best lexical candidates.

With an embedding model configured (memory.yml `recall.embeddings`), recall re-orders the best
`pool` entries of its lexical ranking by reciprocal-rank fusion with their cosine similarity to
the query: fused = 1 / (k + lexical rank) + weight / (k + semantic rank), ranks from 1. Entries
beyond the pool keep their lexical order below it, scored 1 / (k + lexical rank), so every
result's `score` is on the one scale. Only what the text matched is re-ranked: recall still
never returns an entry that shares no term with the query.

Vectors are computed when a recall first needs them, never on the write path (remember makes no
model call), and cached in the store by entry, model and the digest of the text embedded (title,
body and context), so an entry is embedded again only when that text changes. A model that
fails leaves the lexical ranking as it was, and the recall says why in its `note`.

Why re-rank rather than search by vector: the lexical candidates already hold most of what is
relevant (on LoCoMo, 81 % of the evidence turns are among the best 50; fusing all-MiniLM-L6-v2
with BM25 over every turn recalled no more than re-ranking them, docs/memory-service.md), and a
vector search over a whole store would need a vector index this service does not have.
"""

from __future__ import annotations

import hashlib
import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from agentscript.memory.entries import Entry
from agentscript.memory.store import MemoryStore, pack_vector, unpack_vector
from agentscript.runtime.errors import AgentScriptError

# Equal say for the two rankings, the usual choice of hybrid search. A weak model is better
# given less: with static word vectors 0.5 measured best on LoCoMo (docs/memory-service.md).
DEFAULT_WEIGHT = 1.0
DEFAULT_POOL = 50
# The rank offset of the fusion: the smaller, the more the very first places of each ranking
# count. 20 measured better than 60 on LoCoMo.
FUSION_K = 20


class Embedder(Protocol):
    """What re-ranking needs of a model (providers/llm/embeddings.py has the HTTP one)."""

    name: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order, all of one length."""
        ...


@dataclass(frozen=True, slots=True)
class Reranked:
    """The fused order (id, score), best first, or None and why the model was not used."""

    order: list[tuple[str, float]] | None
    problem: str | None = None


class SemanticRanker:
    """Re-ranks lexical candidates with `embedder`; see the module docstring."""

    def __init__(
        self, embedder: Embedder, *, weight: float = DEFAULT_WEIGHT, pool: int = DEFAULT_POOL
    ) -> None:
        self.embedder = embedder
        self.weight = weight
        self.pool = pool

    def rerank(
        self,
        store: MemoryStore,
        scopes: tuple[str, ...],
        query: str,
        lexical: Sequence[str],
        entries: Mapping[str, Entry],
    ) -> Reranked:
        """Fuse the lexical order `lexical` (ids, best first; `entries` holds at least the
        first `pool` of them) with the model's, as the module docstring says."""
        place = {identifier: rank for rank, identifier in enumerate(lexical, 1)}
        window = [identifier for identifier in lexical[: self.pool] if identifier in entries]
        if not window:
            return Reranked(None)
        texts = {identifier: embedded_text(entries[identifier]) for identifier in window}
        digests = {identifier: text_digest(text) for identifier, text in texts.items()}
        model = self.embedder.name
        try:
            vectors = dict(store.vectors(scopes, model, digests))
            missing = [identifier for identifier in window if identifier not in vectors]
            computed = self.embedder.embed([query, *(texts[identifier] for identifier in missing)])
            if len(computed) != len(missing) + 1:
                raise AgentScriptError(f"{model} returned {len(computed)} vectors")
            fresh = dict(zip(missing, computed[1:], strict=True))
            store.save_vectors(
                scopes, model, {key: (digests[key], vector) for key, vector in fresh.items()}
            )
        except AgentScriptError as problem:
            return Reranked(None, f"semantic re-ranking with {model} skipped: {problem}")
        # Through the stored float32 form, so a fresh vector ranks as it will once cached.
        vectors.update((key, unpack_vector(pack_vector(vector))) for key, vector in fresh.items())
        similarity = {key: cosine(computed[0], vectors[key]) for key in window}
        semantic = sorted(window, key=lambda key: (-similarity[key], place[key]))
        fused = {key: _share(place[key]) for key in window}
        for rank, key in enumerate(semantic, 1):
            fused[key] += self.weight * _share(rank)
        top = sorted(window, key=lambda key: (-fused[key], place[key]))
        rest = [(key, _share(place[key])) for key in lexical if key not in fused]
        return Reranked([(key, fused[key]) for key in top] + rest)


def embedded_text(entry: Entry) -> str:
    """What is embedded of an entry: the text recall searches, less tags and key."""
    return "\n".join(part for part in (entry.title, entry.body, entry.context) if part)


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def cosine(left: Sequence[float], right: Sequence[float]) -> float:
    """Cosine similarity; 0 for a zero vector or vectors of different lengths (a model that
    changed its dimensions under the same name)."""
    if len(left) != len(right):
        return 0.0
    norm = math.sqrt(sum(x * x for x in left)) * math.sqrt(sum(x * x for x in right))
    return sum(map(operator.mul, left, right)) / norm if norm else 0.0


def _share(rank: int) -> float:
    return 1.0 / (FUSION_K + rank)
