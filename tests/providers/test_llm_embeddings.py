"""Embeddings over HTTP against local servers speaking OpenAI's /embeddings and Ollama's
/api/embed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from agentscript.providers.llm.embeddings import BATCH_SIZE, MAX_TEXT_CHARS, HttpEmbedder
from agentscript.runtime.errors import ExecutionError
from llm_support import SECRET_KEY, request_bodies


def openai_answer(vectors: list[list[float]], *, reverse: bool = False) -> dict[str, Any]:
    data = [
        {"object": "embedding", "index": index, "embedding": vector}
        for index, vector in enumerate(vectors)
    ]
    return {
        "object": "list",
        "data": list(reversed(data)) if reverse else data,
        "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 8, "total_tokens": 8},
    }


def openai_environ(server: HTTPServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.url_for("/v1"), "OPENAI_API_KEY": SECRET_KEY}


def test_openai_embeddings_follow_the_wire_protocol_and_the_index_order(
    httpserver: HTTPServer,
) -> None:
    httpserver.expect_request("/v1/embeddings", method="POST").respond_with_json(
        openai_answer([[1.0, 0.0], [0.0, 1.0]], reverse=True)
    )
    embedder = HttpEmbedder("openai://text-embedding-3-small", openai_environ(httpserver))

    vectors = embedder.embed(["first", "second"])

    assert vectors == [[1.0, 0.0], [0.0, 1.0]]
    assert embedder.name == "openai://text-embedding-3-small"
    assert request_bodies(httpserver) == [
        {
            "model": "text-embedding-3-small",
            "input": ["first", "second"],
            "encoding_format": "float",
        }
    ]
    request, _ = httpserver.log[0]
    assert request.headers["authorization"] == f"Bearer {SECRET_KEY}"


def test_ollama_embeddings_use_api_embed(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/embed", method="POST").respond_with_json(
        {"model": "nomic-embed-text", "embeddings": [[0.5, 0.5, 0.0]]}
    )
    embedder = HttpEmbedder("ollama://nomic-embed-text", {"OLLAMA_HOST": httpserver.url_for("")})

    assert embedder.embed(["a note"]) == [[0.5, 0.5, 0.0]]
    assert request_bodies(httpserver) == [{"model": "nomic-embed-text", "input": ["a note"]}]
    request, _ = httpserver.log[0]
    assert "authorization" not in request.headers


def test_texts_go_in_batches_and_long_texts_are_cut(httpserver: HTTPServer) -> None:
    def answer(request: Request) -> Response:
        texts = request.get_json()["input"]
        return Response(
            json.dumps({"embeddings": [[float(len(text))] for text in texts]}),
            content_type="application/json",
        )

    httpserver.expect_request("/api/embed").respond_with_handler(answer)
    embedder = HttpEmbedder("ollama://nomic-embed-text", {"OLLAMA_HOST": httpserver.url_for("")})
    texts = ["x" * (MAX_TEXT_CHARS + 10)] + ["y"] * BATCH_SIZE

    vectors = embedder.embed(texts)

    assert [len(body["input"]) for body in request_bodies(httpserver)] == [BATCH_SIZE, 1]
    assert vectors[0] == [float(MAX_TEXT_CHARS)]
    assert len(vectors) == BATCH_SIZE + 1


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"embeddings": [[1.0]]}, "returned 1 vectors for 2 texts"),
        ({"embeddings": [[1.0], [1.0, 2.0]]}, "returned vectors of different lengths"),
        ({"embeddings": [[1.0], ["one"]]}, "not a list of finite numbers"),
        ({"embeddings": [[1.0], []]}, "not a list of finite numbers"),
        ({"vectors": []}, "response is missing 'embeddings'"),
    ],
)
def test_an_answer_that_is_not_one_vector_per_text_is_an_error(
    httpserver: HTTPServer, answer: dict[str, Any], message: str
) -> None:
    httpserver.expect_request("/api/embed").respond_with_json(answer)
    embedder = HttpEmbedder("ollama://nomic-embed-text", {"OLLAMA_HOST": httpserver.url_for("")})
    with pytest.raises(ExecutionError, match=message):
        embedder.embed(["one", "two"])


def test_an_overflowing_number_is_not_a_vector(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/embed").respond_with_data(
        '{"embeddings": [[1.0, 1e999]]}', content_type="application/json"
    )
    embedder = HttpEmbedder("ollama://nomic-embed-text", {"OLLAMA_HOST": httpserver.url_for("")})
    with pytest.raises(ExecutionError, match="not a list of finite numbers"):
        embedder.embed(["one"])


def test_a_refusal_names_the_status_and_never_the_key(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/v1/embeddings").respond_with_json(
        {"error": {"message": f"Incorrect API key provided: {SECRET_KEY}"}}, status=401
    )
    embedder = HttpEmbedder("openai://text-embedding-3-small", openai_environ(httpserver))
    with pytest.raises(ExecutionError) as caught:
        embedder.embed(["text"])
    assert "(401)" in str(caught.value)
    assert SECRET_KEY not in str(caught.value)


def test_a_busy_server_fails_at_once_instead_of_being_waited_for(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/api/embed").respond_with_json(
        {"error": "overloaded"}, status=503, headers={"retry-after": "30"}
    )
    embedder = HttpEmbedder("ollama://nomic-embed-text", {"OLLAMA_HOST": httpserver.url_for("")})
    with pytest.raises(ExecutionError, match=r"\(503\): overloaded"):
        embedder.embed(["text"])
    assert len(httpserver.log) == 1


def test_hosted_openai_needs_a_key_and_anthropic_has_no_embeddings() -> None:
    embedder = HttpEmbedder("openai://text-embedding-3-small", {})
    with pytest.raises(ExecutionError, match="OPENAI_API_KEY is required"):
        embedder.embed(["text"])
    with pytest.raises(ExecutionError, match="anthropic:// has no embedding models"):
        HttpEmbedder("anthropic://claude-sonnet-4-5", {})
