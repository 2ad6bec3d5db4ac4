"""Ollama's native /api/chat: the shape goes out as `format`, `think` and `options` as given."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agentscript.providers.llm.endpoints import ModelEndpoint
from agentscript.providers.llm.http_model import HttpModel, token_count
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import GenerateRequest, GenerateResponse
from agentscript.runtime.usage import Usage

THINKING_ONLY = (
    "Ollama returned thinking output but no final content. "
    "Increase generate max_output or disable think."
)


class OllamaModel(HttpModel):
    protocol = "ollama"
    finish_reason_path = ("done_reason",)

    def build(
        self, request: GenerateRequest, endpoint: ModelEndpoint
    ) -> tuple[str, dict[str, str], dict[str, Any]]:
        built = request.built
        body: dict[str, Any] = {
            "model": endpoint.model,
            "stream": False,
            # 0.1.0 always sent think:false; a generate's `think` option is passed through
            # ("auto" leaves the choice to the model, so nothing is sent).
            "think": False if request.think is None else request.think,
            "messages": [
                {"role": "system", "content": built.system},
                {"role": "user", "content": built.final_user_message},
            ],
        }
        if request.think == "auto":
            del body["think"]
        if request.schema is not None:
            body["format"] = request.schema
        options: dict[str, Any] = {}
        if request.max_output_tokens is not None:
            options["num_predict"] = request.max_output_tokens
        if request.temperature is not None:
            options["temperature"] = request.temperature
        if options:
            body["options"] = options
        return f"{endpoint.base_url}/api/chat", {}, body

    def assemble_stream(self, lines: Iterator[str], request: GenerateRequest) -> dict[str, Any]:
        """/api/chat streams NDJSON: one object per line with a piece of `message.content`
        (and `thinking`); the last one has `done: true` and the token counts."""
        content: list[str] = []
        thinking: list[str] = []
        final: dict[str, Any] = {}
        for line in lines:
            if not line.strip():
                continue
            chunk = self.stream_chunk(line)
            message = chunk.get("message") or {}
            if isinstance(message.get("content"), str):
                content.append(message["content"])
                request.stream(message["content"])
            if isinstance(message.get("thinking"), str):
                thinking.append(message["thinking"])
            if chunk.get("done"):
                final = chunk
                break
        assembled: dict[str, Any] = {"role": "assistant", "content": "".join(content)}
        if thinking:
            assembled["thinking"] = "".join(thinking)
        return {**final, "message": assembled}

    def parse(self, payload: dict[str, Any], request: GenerateRequest) -> GenerateResponse:
        usage = Usage(
            token_count(payload.get("prompt_eval_count")), token_count(payload.get("eval_count"))
        )
        message = payload.get("message")
        if not isinstance(message, dict):
            raise self.missing("message.content")
        content = message.get("content")
        if not isinstance(content, str):
            raise self.missing("message.content")
        if not content.strip() and isinstance(message.get("thinking"), str) and message["thinking"]:
            raise ExecutionError(THINKING_ONLY)
        return self.answer(request, content, usage)
