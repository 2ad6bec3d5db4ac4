"""Semantic re-ranking: an embedding model re-orders the best lexical candidates; vectors are
cached in the store by entry, model and text, and a failing model leaves the lexical order.

The model here is a small deterministic one that counts words of a few topics, so a test can
say which entry means the query; the HTTP embedder it stands for is tested in
test_llm_embeddings.py and end to end at the bottom, through memory.yml and a local server.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from agentscript.app.memory_service import open_memory_service
from agentscript.memory import MemoryService, MemoryServiceError, SqliteStore, parse_config
from agentscript.memory.postgres_store import PostgresMemoryStore
from agentscript.memory.semantic import SemanticRanker, cosine, embedded_text, text_digest
from agentscript.memory.store import EntryFilter
from agentscript.runtime.errors import ExecutionError

pytest_plugins = ["memsvc_support"]

TOPICS = {
    "exercise": {"exercise", "yoga", "workout", "kickboxing", "gym", "running", "fitness"},
    "money": {"invoice", "fee", "membership", "renewal", "paid", "payment", "bill"},
    "pets": {"dog", "puppy", "walk", "leash", "vet"},
}
INVOICE = "Gym invoice: the gym membership renewal fee is paid, gym bill filed"
YOGA = "Yoga and kickboxing at the gym this morning, a great workout"
QUERY = "gym exercise"


def topic_vector(text: str) -> list[float]:
    words = re.findall(r"[a-z]+", text.lower())
    return [0.001 + sum(word in members for word in words) for members in TOPICS.values()]


class TopicModel:
    """An embedder that counts topic words; it records what it was asked to embed."""

    name = "test://topics"

    def __init__(self, failure: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.failure = failure

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if self.failure is not None:
            raise ExecutionError(self.failure)
        return [topic_vector(text) for text in texts]


@pytest.fixture
def memory_backend(each_memory_backend: str) -> str:
    """Every test here runs on SQLite and on PostgreSQL (memsvc_support.memory_database)."""
    return each_memory_backend


@pytest.fixture
def remembered(open_memory: Callable[..., MemoryService]) -> dict[str, str]:
    """The two entries, written by a service without a model; their ids by name."""
    memory = open_memory()
    return {
        "invoice": memory.remember(INVOICE, title="Gym invoice")["id"],
        "yoga": memory.remember(YOGA, title="Morning at the gym")["id"],
    }


def order(memory: MemoryService, query: str = QUERY) -> list[str]:
    return [hit["id"] for hit in memory.recall(query, body_chars=0)["results"]]


def test_the_model_lifts_the_entry_that_means_the_query(
    open_memory: Callable[..., MemoryService], remembered: dict[str, str]
) -> None:
    lexical = open_memory()
    semantic = open_memory()
    semantic.semantic = SemanticRanker(TopicModel(), weight=2.0)

    assert order(lexical) == [remembered["invoice"], remembered["yoga"]]
    assert order(semantic) == [remembered["yoga"], remembered["invoice"]]
    scores = [hit["score"] for hit in semantic.recall(QUERY)["results"]]
    assert scores == sorted(scores, reverse=True)


def test_vectors_are_cached_until_the_text_changes(
    open_memory: Callable[..., MemoryService], remembered: dict[str, str]
) -> None:
    model = TopicModel()
    memory = open_memory()
    memory.semantic = SemanticRanker(model)

    memory.recall(QUERY)
    memory.recall(QUERY)
    memory.update(remembered["invoice"], text=f"{INVOICE}, and the late fee")
    memory.recall(QUERY)

    first, second, third = model.calls
    assert first[0] == second[0] == third[0] == QUERY
    assert sorted(first[1:]) == sorted([f"Gym invoice\n{INVOICE}", f"Morning at the gym\n{YOGA}"])
    assert second == [QUERY]
    assert len(third) == 2 and third[1].endswith(f"{INVOICE}, and the late fee")
    # Another service on the same database finds the vectors too.
    again = TopicModel()
    other = open_memory()
    other.semantic = SemanticRanker(again)
    other.recall(QUERY)
    assert again.calls == [[QUERY]]


def test_only_the_pool_is_embedded_and_the_rest_keeps_its_lexical_order(
    open_memory: Callable[..., MemoryService],
) -> None:
    memory = open_memory()
    for number in range(6):
        memory.remember(
            f"Gym visit number {number} " + "gym " * (6 - number), title=f"Visit {number}"
        )
    lexical = order(memory)
    model = TopicModel()
    memory.semantic = SemanticRanker(model, pool=3)

    reranked = order(memory)

    assert len(model.calls[0]) == 1 + 3
    assert sorted(reranked[:3]) == sorted(lexical[:3])
    assert reranked[3:] == lexical[3:]


def test_a_failing_model_leaves_the_lexical_order_and_says_why(
    open_memory: Callable[..., MemoryService], remembered: dict[str, str]
) -> None:
    memory = open_memory()
    memory.semantic = SemanticRanker(TopicModel(failure="connection refused"), weight=2.0)

    found = memory.recall(QUERY)

    assert [hit["id"] for hit in found["results"]] == [remembered["invoice"], remembered["yoga"]]
    assert found["note"] == ("semantic re-ranking with test://topics skipped: connection refused")


def test_vectors_stay_in_their_scope_and_go_with_a_purge(
    open_memory: Callable[..., MemoryService], remembered: dict[str, str]
) -> None:
    memory = open_memory()
    memory.semantic = SemanticRanker(TopicModel())
    memory.recall(QUERY)
    scope = memory.scopes_for().write
    digests = {identifier: _digest_of(memory, identifier) for identifier in remembered.values()}

    assert set(memory.store.vectors((scope,), "test://topics", digests)) == set(digests)
    assert memory.store.vectors(("/another/workspace",), "test://topics", digests) == {}
    assert memory.store.vectors((scope,), "test://other-model", digests) == {}

    assert vector_rows(memory) == 2
    memory.forget(remembered["invoice"], purge=True)

    left = memory.store.vectors((scope,), "test://topics", digests)
    assert set(left) == {remembered["yoga"]}
    assert vector_rows(memory) == 1


def test_a_database_made_before_the_vector_cache_gains_it(
    open_memory: Callable[..., MemoryService], remembered: dict[str, str]
) -> None:
    older = open_memory()
    past_the_api(older, "DROP TABLE {vectors}")
    older.close()

    memory = open_memory()
    memory.semantic = SemanticRanker(TopicModel())
    memory.recall(QUERY)

    assert vector_rows(memory) == 2


def vector_rows(memory: MemoryService) -> int:
    """How many vectors the store keeps, read past its API (a purged one must be gone)."""
    [(count,)] = past_the_api(memory, "SELECT count(*) FROM {vectors}")
    return int(count)


def past_the_api(memory: MemoryService, statement: str) -> list[tuple[Any, ...]]:
    """Run `statement` on the store's own database; `{vectors}` names the vector table."""
    store = memory.store
    if isinstance(store, SqliteStore):
        with closing(sqlite3.connect(store.path)) as connection, connection:
            return connection.execute(statement.format(vectors="memory_vectors")).fetchall()
    assert isinstance(store, PostgresMemoryStore)
    with store._connection() as connection:
        cursor = connection.execute(
            statement.format(vectors=f"{store._schema}.memory_vectors")  # type: ignore[arg-type]
        )
        return cursor.fetchall() if cursor.description else []


def _digest_of(memory: MemoryService, identifier: str) -> str:
    where = EntryFilter(scopes=(memory.scopes_for().write,), ids=(identifier,))
    [entry] = memory.store.select(where)
    return text_digest(embedded_text(entry))


def test_cosine_of_unequal_or_zero_vectors_is_zero() -> None:
    assert cosine([1.0, 0.0], [1.0, 0.0]) == pytest.approx(1.0)
    assert cosine([1.0, 0.0], [0.0, 1.0]) == 0.0
    assert cosine([1.0, 2.0], [1.0]) == 0.0
    assert cosine([0.0, 0.0], [1.0, 1.0]) == 0.0


# ------------------------------------------------------------------------------ memory.yml


def test_memory_yml_names_the_embedding_model_and_its_weight() -> None:
    config = parse_config(
        "recall:\n  embeddings: ollama://nomic-embed-text\n  semantic_weight: 2\n"
        "  semantic_pool: 30\n"
    )
    assert (config.recall.embeddings, config.recall.semantic_weight) == (
        "ollama://nomic-embed-text",
        2.0,
    )
    assert config.recall.semantic_pool == 30
    assert parse_config("").recall.embeddings is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("recall:\n  embeddings: anthropic://claude\n", "recall.embeddings: anthropic://"),
        ("recall:\n  embeddings: nomic-embed-text\n", "recall.embeddings: LLM URI must"),
        ("recall:\n  semantic_weight: 0\n", "recall.semantic_weight"),
        ("recall:\n  semantic_pool: 500\n", "recall.semantic_pool"),
        ("recall:\n  semantic_weight: true\n", "recall.semantic_weight"),
        ("recall:\n  embedding: openai://x\n", "recall.embedding: unknown setting"),
    ],
)
def test_a_wrong_recall_setting_names_its_field(text: str, message: str) -> None:
    with pytest.raises(MemoryServiceError, match=re.escape(message)):
        parse_config(text)


def test_memory_yml_switches_re_ranking_on_through_a_real_ollama_endpoint(
    httpserver: HTTPServer,
    tmp_path: Path,
    memory_database: str | Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[list[str]] = []

    def embed(request: Request) -> Response:
        texts = request.get_json()["input"]
        asked.append(texts)
        answer = {"model": "nomic-embed-text", "embeddings": [topic_vector(t) for t in texts]}
        return Response(json.dumps(answer), content_type="application/json")

    httpserver.expect_request("/api/embed", method="POST").respond_with_handler(embed)
    workspace = tmp_path / "configured"
    (workspace / ".agentscript").mkdir(parents=True)
    (workspace / ".agentscript" / "memory.yml").write_text(
        "recall:\n  embeddings: ollama://nomic-embed-text\n  semantic_weight: 2\n"
    )
    monkeypatch.setenv("OLLAMA_HOST", httpserver.url_for(""))

    with open_memory_service(workspace, database=memory_database) as memory:
        invoice = memory.remember(INVOICE, title="Gym invoice")["id"]
        assert asked == []  # remember never calls the model
        yoga = memory.remember(YOGA, title="Morning at the gym")["id"]
        found: dict[str, Any] = memory.recall(QUERY)

    assert [hit["id"] for hit in found["results"]] == [yoga, invoice]
    assert "note" not in found
    assert asked[0][0] == QUERY and len(asked[0]) == 3
