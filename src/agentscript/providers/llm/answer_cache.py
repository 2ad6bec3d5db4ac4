"""A model's answers, kept by the prompt they answered: the same rendered prompt to the same
model is answered from the file instead of being sent again.

An optimizer's trials differ in one choice at a time, so most of a program's prompts (every
generate before the changed site, every case whose prompt the change does not reach) repeat
from trial to trial; a killed optimization run again repeats them all. The key is what decides
the answer and nothing else (`request_material`: model, system and user messages, schema,
output limit, temperature, thinking, strictness), the value what the model said (the answer's
value, text and token usage). Answers that were not usable JSON are not kept: the repair that
follows is its own prompt.

Thread-safe; the file is SQLite, written once per answer.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

from agentscript.providers.llm.recording import request_material
from agentscript.providers.storage.cassette_file import material_digest
from agentscript.runtime.context import PromptLayout
from agentscript.runtime.generate import prompt_layout_of
from agentscript.runtime.ports import GenerateRequest, GenerateResponse, LlmProvider
from agentscript.runtime.usage import Usage
from agentscript.runtime.values import LlmBinding, sanitize


class AnswerCache:
    """The file, and how many asks it answered (`hits`) or passed on (`misses`)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._connection = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=30
        )
        self._connection.execute("PRAGMA journal_mode = WAL")
        self._connection.execute(
            "CREATE TABLE IF NOT EXISTS answers (digest TEXT PRIMARY KEY, answer TEXT NOT NULL)"
        )
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def hit_rate(self) -> float | None:
        asked = self.hits + self.misses
        return self.hits / asked if asked else None

    def around(self, inner: LlmProvider) -> LlmProvider:
        """`inner`, answering from this cache first."""
        return _Cached(self, inner)

    def lookup(self, digest: str) -> GenerateResponse | None:
        with self._lock:
            row = self._connection.execute(
                "SELECT answer FROM answers WHERE digest = ?", (digest,)
            ).fetchone()
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        data = json.loads(row[0])
        return GenerateResponse(
            value=data["value"],
            raw_text=data.get("raw_text"),
            usage=Usage.from_json(data.get("usage")),
            provider=data.get("provider"),
        )

    def keep(self, digest: str, response: GenerateResponse) -> None:
        answer = {
            "value": sanitize(response.value),
            "raw_text": response.raw_text,
            "usage": response.usage.to_json() if response.usage else None,
            "provider": response.provider,
        }
        with self._lock:
            self._connection.execute(
                "INSERT OR IGNORE INTO answers (digest, answer) VALUES (?, ?)",
                (digest, json.dumps(answer)),
            )

    def close(self) -> None:
        with self._lock:
            self._connection.close()


class _Cached:
    def __init__(self, cache: AnswerCache, inner: LlmProvider) -> None:
        self._cache = cache
        self._inner = inner

    def prompt_layout(self, model: LlmBinding | None) -> PromptLayout:
        return prompt_layout_of(self._inner, model)

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        digest = material_digest(request_material(request))
        kept = self._cache.lookup(digest)
        if kept is not None:
            return kept
        response = self._inner.generate(request)
        self._cache.keep(digest, response)
        return response
