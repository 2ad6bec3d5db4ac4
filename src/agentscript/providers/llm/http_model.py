"""What every HTTP model provider shares: resolve the endpoint, check the key, post, parse.

A provider module (openai.py, anthropic.py, ollama.py) only says how to build its request body
and how to read its answer; this base does the rest the same way for all of them.
"""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from agentscript.providers.llm.endpoints import ModelEndpoint, resolve_endpoint
from agentscript.providers.llm.json_text import complete_json, extract_json, snippet
from agentscript.providers.llm.transport import HttpTransport
from agentscript.runtime.errors import ExecutionError, ModelOutputError
from agentscript.runtime.jsjson import parse
from agentscript.runtime.ports import GenerateRequest, GenerateResponse
from agentscript.runtime.usage import Usage

# Output tokens requested when a generate sets no `limit`/`max_output` and the API needs one.
DEFAULT_MAX_TOKENS = 1024
# Why a model stopped when it hit the output limit: OpenAI-compatible servers and Ollama say
# `length`, Anthropic `max_tokens`.
CUT_OFF_REASONS = frozenset({"length", "max_tokens"})


class HttpModel(ABC):
    """Base of the HTTP providers; subclasses build the body and parse the answer."""

    protocol: ClassVar[str]
    # Where the answer says why the model stopped (keys and list indexes into the payload).
    finish_reason_path: ClassVar[tuple[str | int, ...]]

    def __init__(
        self,
        environ: Mapping[str, str] | None = None,
        transport: HttpTransport | None = None,
    ) -> None:
        self.environ: Mapping[str, str] = environ if environ is not None else os.environ
        self.transport = transport or HttpTransport(self.protocol)

    def endpoint(self, request: GenerateRequest) -> ModelEndpoint:
        if request.model is None:
            raise ExecutionError("A real LLM provider requires an agent model declaration")
        return resolve_endpoint(request.model.uri, self.environ)

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        endpoint = self.endpoint(request)
        endpoint.require_key()
        if endpoint.api_key and endpoint.api_key not in self.transport.secrets:
            self.transport.secrets.append(endpoint.api_key)
        url, headers, body = self.build(request, endpoint)
        timeout_ms = endpoint.timeout_ms
        deadline = (
            time.monotonic() + request.deadline_seconds
            if request.deadline_seconds is not None
            else None
        )
        report = lambda data: request.report("llm_retry", data)  # noqa: E731
        if request.wants_stream:
            # Streamed, the pieces are shown as they come and then assembled into the payload
            # the provider would have sent at once, so both ways are parsed and checked alike.
            payload = self.transport.post_stream(
                url,
                headers,
                {**body, **self.stream_options()},
                timeout_ms,
                read=lambda lines: self.assemble_stream(lines, request),
                report_retry=report,
                deadline=deadline,
            )
        else:
            payload = self.transport.post_json(
                url, headers, body, timeout_ms, report_retry=report, deadline=deadline
            )
        if not isinstance(payload, dict):
            raise self.failure("response is not a JSON object")
        details = self.describe(payload)
        try:
            response = self.parse(payload, request)
        except ModelOutputError as error:
            raise self.unusable(error, details, request) from None
        if (
            request.return_shape is not None
            and details.get("finish_reason") in CUT_OFF_REASONS
            and not complete_json(response.raw_text or "")
        ):
            # What was found is a fragment of an answer the limit cut off, not the answer.
            fragment = ModelOutputError("", raw_text=response.raw_text, usage=response.usage)
            raise self.unusable(fragment, details, request)
        response.details.update(details)
        return response

    def unusable(
        self, error: ModelOutputError, details: dict[str, Any], request: GenerateRequest
    ) -> ModelOutputError:
        """An answer that is not the JSON asked for, with why the model stopped; one cut off
        by the output limit says so, and that asking again with that limit cannot help."""
        reason = details.get("finish_reason")
        if reason not in CUT_OFF_REASONS:
            error.details.update(details)
            return error
        limit = (
            f"max_output {request.max_output_tokens} tokens"
            if request.max_output_tokens is not None
            else "the server's output limit"
        )
        return ModelOutputError(
            f"LLM provider '{self.protocol}' answer was cut off at the output limit "
            f"({limit}, finish reason {reason}) before its JSON was complete: "
            f"{snippet(error.raw_text or '')}; raise the generate's max_output (another attempt "
            "with the same limit would be cut off too)",
            raw_text=error.raw_text,
            usage=error.usage,
            details=details,
            cut_off=True,
        )

    def describe(self, payload: dict[str, Any]) -> dict[str, Any]:
        """What the trace keeps about an answer besides its text: the model that answered and
        why it stopped, when the provider says so."""
        details: dict[str, Any] = {}
        model = payload.get("model")
        if isinstance(model, str) and model:
            details["response_model"] = model
        reason: Any = payload
        for step in self.finish_reason_path:
            if isinstance(step, int):
                reason = reason[step] if isinstance(reason, list) and len(reason) > step else None
            else:
                reason = reason.get(step) if isinstance(reason, dict) else None
        if isinstance(reason, str) and reason:
            details["finish_reason"] = reason
        return details

    @abstractmethod
    def build(
        self, request: GenerateRequest, endpoint: ModelEndpoint
    ) -> tuple[str, dict[str, str], dict[str, Any]]:
        """(url, headers, JSON body) of the request for one attempt."""

    @abstractmethod
    def parse(self, payload: dict[str, Any], request: GenerateRequest) -> GenerateResponse:
        """The answer of a 2xx response."""

    def stream_options(self) -> dict[str, Any]:
        """What the request body adds to ask for a streamed answer."""
        return {"stream": True}

    @abstractmethod
    def assemble_stream(self, lines: Iterator[str], request: GenerateRequest) -> dict[str, Any]:
        """Read a streamed answer line by line, passing each piece of text to
        `request.stream`, and return the payload a non-streamed answer would have had."""

    def stream_chunk(self, text: str) -> dict[str, Any]:
        """One JSON object of a stream; an error object the server sends mid-stream fails the
        call with the server's message."""
        try:
            chunk = parse(text)
        except ValueError:
            raise self.failure(f"sent a malformed stream chunk: {snippet(text)}") from None
        if not isinstance(chunk, dict):
            raise self.failure(f"sent a malformed stream chunk: {snippet(text)}")
        error = chunk.get("error")
        if error:
            message = error.get("message") if isinstance(error, dict) else error
            raise self.failure(f"stream failed: {self.transport.scrub(str(message))}")
        return chunk

    def failure(self, message: str) -> ExecutionError:
        return ExecutionError(f"LLM provider '{self.protocol}' {message}")

    def missing(self, path: str) -> ExecutionError:
        return self.failure(f"response is missing '{path}'")

    def answer(self, request: GenerateRequest, text: str, usage: Usage) -> GenerateResponse:
        """Free-form generates get the text; shaped ones the JSON found in it."""
        if request.return_shape is None:
            return GenerateResponse(value=text, raw_text=text, usage=usage, provider=self.protocol)
        try:
            value = extract_json(text)
        except ModelOutputError as error:
            raise ModelOutputError(str(error), raw_text=text, usage=usage) from None
        return GenerateResponse(value=value, raw_text=text, usage=usage, provider=self.protocol)

    def close(self) -> None:
        self.transport.close()


def sse_data(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """Server-sent events as (event name, data) pairs; the name is "" when none was sent."""
    name = ""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield name, "\n".join(data)
            name, data = "", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
    if data:
        yield name, "\n".join(data)


def token_count(value: Any) -> int:
    """Providers report counts as integers; anything else counts as zero."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
