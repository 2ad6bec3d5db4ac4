"""Text embeddings over HTTP: `openai://model` (POST /embeddings, and every server that speaks
it) and `ollama://model` (POST /api/embed). Anthropic has no embedding API.

The endpoint, key and timeout are resolved as for generates (endpoints.py) and the request goes
through the same transport (scrubbed errors), but a busy answer (429/5xx) is not retried:
embeddings are asked for while a recall waits, and a recall would rather go on without them
(semantic.py) than wait out a backoff. Texts go in batches of BATCH_SIZE, each cut at
MAX_TEXT_CHARS; an answer that does not give one vector of finite numbers per text, all of one
length, is an error, never a partial result.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

from agentscript.providers.llm.endpoints import (
    ModelEndpoint,
    check_embedding_uri,
    resolve_endpoint,
)
from agentscript.providers.llm.transport import HttpTransport
from agentscript.runtime.errors import ExecutionError

BATCH_SIZE = 64
# About 2,000 tokens of English: within every common embedding model's input.
MAX_TEXT_CHARS = 8000


class HttpEmbedder:
    """Embeds texts with the model `uri`; `name` (protocol://model) identifies its vectors."""

    def __init__(
        self,
        uri: str,
        environ: Mapping[str, str] | None = None,
        transport: HttpTransport | None = None,
    ) -> None:
        check_embedding_uri(uri)
        self.endpoint: ModelEndpoint = resolve_endpoint(
            uri, environ if environ is not None else os.environ
        )
        self.name = f"{self.endpoint.protocol}://{self.endpoint.model}"
        self.transport = transport or HttpTransport(self.endpoint.protocol, max_retries=0)
        if self.endpoint.api_key:
            self.transport.secrets.append(self.endpoint.api_key)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""
        self.endpoint.require_key()
        vectors: list[list[float]] = []
        for start in range(0, len(texts), BATCH_SIZE):
            batch = [text[:MAX_TEXT_CHARS] for text in texts[start : start + BATCH_SIZE]]
            vectors.extend(self._batch(batch))
        if vectors and any(len(vector) != len(vectors[0]) for vector in vectors):
            raise self._failure("returned vectors of different lengths")
        return vectors

    def close(self) -> None:
        self.transport.close()

    def _batch(self, texts: list[str]) -> list[list[float]]:
        endpoint = self.endpoint
        headers: dict[str, str] = {}
        if endpoint.protocol == "openai":
            url = f"{endpoint.base_url}/embeddings"
            body: dict[str, Any] = {
                "model": endpoint.model,
                "input": texts,
                "encoding_format": "float",
            }
            if endpoint.api_key:
                headers["authorization"] = f"Bearer {endpoint.api_key}"
        else:
            url = f"{endpoint.base_url}/api/embed"
            body = {"model": endpoint.model, "input": texts}
        payload = self.transport.post_json(url, headers, body, endpoint.timeout_ms)
        vectors = self._openai(payload) if endpoint.protocol == "openai" else self._ollama(payload)
        if len(vectors) != len(texts):
            raise self._failure(f"returned {len(vectors)} vectors for {len(texts)} texts")
        return [self._vector(vector) for vector in vectors]

    def _openai(self, payload: Any) -> list[Any]:
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            raise self._failure("response is missing 'data'")
        # The API gives an index per item; the order of the list is not promised.
        ordered = sorted(data, key=lambda item: item.get("index", 0))
        return [item.get("embedding") for item in ordered]

    def _ollama(self, payload: Any) -> list[Any]:
        vectors = payload.get("embeddings") if isinstance(payload, dict) else None
        if not isinstance(vectors, list):
            raise self._failure("response is missing 'embeddings'")
        return vectors

    def _vector(self, value: Any) -> list[float]:
        if (
            not isinstance(value, list)
            or not value
            or not all(
                isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
                for x in value
            )
        ):
            raise self._failure("returned an embedding that is not a list of finite numbers")
        return [float(x) for x in value]

    def _failure(self, message: str) -> ExecutionError:
        return ExecutionError(f"Embedding provider '{self.endpoint.protocol}' {message}")
