"""OpenAI Chat Completions, and every server that speaks it (vLLM, llama.cpp, LM Studio,
gateways, Ollama's /v1). The shape goes out as `response_format` json_schema."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agentscript.providers.llm.endpoints import ModelEndpoint
from agentscript.providers.llm.http_model import HttpModel, sse_data, token_count
from agentscript.runtime.ports import GenerateRequest, GenerateResponse
from agentscript.runtime.usage import Usage

SCHEMA_NAME = "agentscript_generate"
_EFFORTS = {True: "medium", "low": "low", "medium": "medium", "high": "high"}


def strict_schema_allowed(schema: dict[str, Any]) -> bool:
    """OpenAI strict mode needs every object closed and every array typed: a `json` field
    (`{}`) or an untyped `list` cannot be expressed in it."""
    for field_schema in schema.get("properties", {}).values():
        if not _strict_compatible(field_schema):
            return False
    return True


def _strict_compatible(schema: dict[str, Any]) -> bool:
    if "type" not in schema:
        return False
    if schema["type"] == "array":
        items = schema.get("items")
        return isinstance(items, dict) and _strict_compatible(items)
    return True


class OpenAiModel(HttpModel):
    protocol = "openai"
    finish_reason_path = ("choices", 0, "finish_reason")

    def build(
        self, request: GenerateRequest, endpoint: ModelEndpoint
    ) -> tuple[str, dict[str, str], dict[str, Any]]:
        built = request.built
        body: dict[str, Any] = {
            "model": endpoint.model,
            "messages": [
                {"role": "system", "content": built.system},
                {"role": "user", "content": built.final_user_message},
            ],
        }
        if request.schema is not None:
            # strict follows the generate's `strict`; unset, it is on whenever the shape allows.
            strict = (
                request.strict
                if request.strict is not None
                else strict_schema_allowed(request.schema)
            )
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": SCHEMA_NAME, "strict": strict, "schema": request.schema},
            }
        if request.max_output_tokens is not None:
            body["max_completion_tokens"] = request.max_output_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        effort = _EFFORTS.get(request.think) if request.think is not None else None
        if effort is not None:
            body["reasoning_effort"] = effort
        headers = {"authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
        return f"{endpoint.base_url}/chat/completions", headers, body

    def stream_options(self) -> dict[str, Any]:
        return {"stream": True, "stream_options": {"include_usage": True}}

    def assemble_stream(self, lines: Iterator[str], request: GenerateRequest) -> dict[str, Any]:
        """Chat Completions chunks (SSE, ended by `data: [DONE]`): content and refusal deltas,
        the finish reason, and usage in the last chunk."""
        content: list[str] = []
        refusal: list[str] = []
        finish_reason: Any = None
        usage: Any = None
        for _, data in sse_data(lines):
            if data.strip() == "[DONE]":
                break
            chunk = self.stream_chunk(data)
            if isinstance(chunk.get("usage"), dict):
                usage = chunk["usage"]
            for choice in chunk.get("choices") or []:
                if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                    continue
                delta = choice.get("delta") or {}
                if isinstance(delta.get("content"), str):
                    content.append(delta["content"])
                    request.stream(delta["content"])
                if isinstance(delta.get("refusal"), str):
                    refusal.append(delta["refusal"])
                finish_reason = choice.get("finish_reason") or finish_reason
        message: dict[str, Any] = {"role": "assistant", "content": "".join(content)}
        if refusal:
            message["refusal"] = "".join(refusal)
        payload: dict[str, Any] = {
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}]
        }
        if usage is not None:
            payload["usage"] = usage
        return payload

    def parse(self, payload: dict[str, Any], request: GenerateRequest) -> GenerateResponse:
        raw_usage = payload.get("usage")
        usage = Usage()
        if isinstance(raw_usage, dict):
            usage = Usage(
                token_count(raw_usage.get("prompt_tokens")),
                token_count(raw_usage.get("completion_tokens")),
            )
        choices = payload.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self.missing("choices.0.message.content")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise self.missing("choices.0.message.content")
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            raise self.failure(f"refused the request: {refusal}")
        if choice.get("finish_reason") == "content_filter":
            raise self.failure("stopped the answer: content filter (finish_reason content_filter)")
        content = message.get("content")
        if not isinstance(content, str):
            raise self.missing("choices.0.message.content")
        return self.answer(request, content, usage)
