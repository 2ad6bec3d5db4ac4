"""Anthropic Messages API.

The shape is enforced by the API itself: models with structured outputs (Claude Opus 4.1,
Sonnet/Haiku/Opus 4.5 and later) get `output_config.format` json_schema; older models get a
single forced tool whose input schema is the shape, and the tool input is the answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from agentscript.providers.llm.endpoints import ModelEndpoint
from agentscript.providers.llm.http_model import (
    DEFAULT_MAX_TOKENS,
    HttpModel,
    sse_data,
    token_count,
)
from agentscript.providers.llm.json_text import snippet
from agentscript.runtime.jsjson import parse, stringify
from agentscript.runtime.ports import GenerateRequest, GenerateResponse
from agentscript.runtime.usage import Usage
from agentscript.runtime.values import sanitize

API_VERSION = "2023-06-01"
TOOL_NAME = "agentscript_generate"
_CLAUDE_VERSION = re.compile(r"^claude-(opus|sonnet|haiku)-(\d+)(?:-(\d)(?!\d))?")


def supports_structured_outputs(model: str) -> bool:
    """Whether the model takes `output_config.format` (Opus ≥ 4.1, any family ≥ 4.5)."""
    matched = _CLAUDE_VERSION.match(model)
    if matched is None:
        return False
    family, major, minor = matched.group(1), int(matched.group(2)), int(matched.group(3) or 0)
    if major >= 5 or (major == 4 and minor >= 5):
        return True
    return family == "opus" and major == 4 and minor >= 1


class AnthropicModel(HttpModel):
    protocol = "anthropic"
    finish_reason_path = ("stop_reason",)

    def build(
        self, request: GenerateRequest, endpoint: ModelEndpoint
    ) -> tuple[str, dict[str, str], dict[str, Any]]:
        built = request.built
        body: dict[str, Any] = {
            "model": endpoint.model,
            "max_tokens": request.max_output_tokens or DEFAULT_MAX_TOKENS,
            "system": built.system,
            "messages": [{"role": "user", "content": built.final_user_message}],
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.schema is not None:
            if supports_structured_outputs(endpoint.model):
                body["output_config"] = {
                    "format": {"type": "json_schema", "schema": request.schema}
                }
            else:
                # Forced, the tool needs no description: its schema is all the model fills in.
                body["tools"] = [{"name": TOOL_NAME, "input_schema": request.schema}]
                body["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        headers = {"anthropic-version": API_VERSION}
        if endpoint.api_key:
            headers["x-api-key"] = endpoint.api_key
        return f"{endpoint.base_url}/messages", headers, body

    def assemble_stream(self, lines: Iterator[str], request: GenerateRequest) -> dict[str, Any]:
        """Messages API events (SSE): `message_start` (input usage), content blocks opened,
        grown by `text_delta` / `input_json_delta` and closed, `message_delta` (stop reason,
        output usage). A forced tool's input arrives as JSON text and is parsed at its end."""
        message: dict[str, Any] = {}
        blocks: dict[int, dict[str, Any]] = {}
        partial_json: dict[int, list[str]] = {}
        usage: dict[str, Any] = {}
        for event, data in sse_data(lines):
            chunk = self.stream_chunk(data)
            kind = chunk.get("type") or event
            if kind == "message_start" and isinstance(chunk.get("message"), dict):
                message = dict(chunk["message"])
                usage.update(message.get("usage") or {})
            elif kind == "content_block_start" and isinstance(chunk.get("content_block"), dict):
                blocks[int(chunk.get("index", 0))] = dict(chunk["content_block"])
            elif kind == "content_block_delta":
                index = int(chunk.get("index", 0))
                block = blocks.setdefault(index, {"type": "text", "text": ""})
                delta = chunk.get("delta") or {}
                if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
                    block["text"] = str(block.get("text", "")) + delta["text"]
                    request.stream(delta["text"])
                elif delta.get("type") == "input_json_delta":
                    piece = str(delta.get("partial_json", ""))
                    partial_json.setdefault(index, []).append(piece)
                    request.stream(piece)
            elif kind == "message_delta":
                delta = chunk.get("delta") or {}
                if delta.get("stop_reason"):
                    message["stop_reason"] = delta["stop_reason"]
                usage.update(chunk.get("usage") or {})
            elif kind == "message_stop":
                break
        for index, pieces in partial_json.items():
            text = "".join(pieces)
            try:
                blocks[index]["input"] = parse(text) if text.strip() else {}
            except ValueError:
                raise self.failure(f"streamed tool input is not JSON: {snippet(text)}") from None
        message["content"] = [blocks[index] for index in sorted(blocks)]
        message["usage"] = usage
        return message

    def parse(self, payload: dict[str, Any], request: GenerateRequest) -> GenerateResponse:
        raw_usage = payload.get("usage")
        usage = Usage()
        if isinstance(raw_usage, dict):
            usage = Usage(
                token_count(raw_usage.get("input_tokens")),
                token_count(raw_usage.get("output_tokens")),
            )
        if payload.get("stop_reason") == "refusal":
            raise self.failure("refused the request (stop_reason refusal)")
        content = payload.get("content")
        if not isinstance(content, list):
            raise self.failure("response is missing content")
        forced = [
            block
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "tool_use"
            and block.get("name") == TOOL_NAME
        ]
        if forced and request.return_shape is not None:
            answer = forced[0].get("input")
            return GenerateResponse(
                value=answer,
                raw_text=stringify(sanitize(answer)),
                usage=usage,
                provider=self.protocol,
            )
        texts = [
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ]
        if not texts:
            raise self.failure("response is missing content")
        return self.answer(request, "".join(texts), usage)
