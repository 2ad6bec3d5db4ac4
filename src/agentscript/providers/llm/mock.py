"""Offline models: the shape-default mock, a scripted mock, and the dry-run model.

The mock answers every shaped generate with the shape's default values (reference §4.2) and
free-form ones with "". The scripted mock answers from a JSON file so examples and tests produce
meaningful output offline. The dry-run model hands each prompt to a callback and answers with
defaults (None for free-form), so a program can be walked without a model.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentscript.providers.llm.json_text import extract_json
from agentscript.runtime.bounded_input import USER_FILE_LIMIT, UnusableInput, read_regular_text
from agentscript.runtime.errors import ExecutionError, LoadError
from agentscript.runtime.jsjson import parse, stringify
from agentscript.runtime.ports import GenerateRequest, GenerateResponse
from agentscript.runtime.shapes import default_object
from agentscript.runtime.values import sanitize


class MockLlm:
    """Answers with the shape's defaults: "" / 0 / true / {} / [] / [default(T)]."""

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        if request.return_shape is None:
            return GenerateResponse(value="", raw_text="", provider="mock")
        value = default_object(request.return_shape)
        return GenerateResponse(value=value, raw_text=stringify(value), provider="mock")


class DryRunLlm:
    """Shows each prompt through `on_request` instead of sending it, then answers with defaults."""

    def __init__(self, on_request: Callable[[GenerateRequest], None]) -> None:
        self._on_request = on_request

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        self._on_request(request)
        if request.return_shape is None:
            return GenerateResponse(value=None, provider="dry-run")
        return GenerateResponse(value=default_object(request.return_shape), provider="dry-run")


class ScriptedLlm:
    """Answers from a script: a JSON list (answers in call order) or an object whose keys are
    `Agent.function`, `Agent` or `*`, each holding a list of answers consumed in order.

    For a generate in Agent.function, the first key among `Agent.function`, `Agent`, `*` with an
    answer left is used. A string answer to a shaped generate is treated as the model's text (so
    a script can exercise JSON extraction and repair); any other JSON value is the parsed answer.
    Running out of answers is an error naming the call, never a silent default.
    """

    def __init__(self, script: Any, source: str = "script") -> None:
        self._source = source
        self._lock = threading.Lock()
        self._queues: dict[str, list[Any]] = {}
        if isinstance(script, list):
            self._queues["*"] = list(script)
        elif isinstance(script, dict):
            for key, answers in script.items():
                self._queues[str(key)] = list(answers) if isinstance(answers, list) else [answers]
        else:
            raise LoadError(f"Scripted responses in {source} must be a JSON list or object")
        self._calls = 0

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedLlm:
        file = Path(path)
        try:
            text = read_regular_text(file, USER_FILE_LIMIT, "Scripted responses")
        except UnusableInput as problem:
            raise LoadError(str(problem)) from None
        try:
            script = parse(text)
        except ValueError as problem:
            raise LoadError(f"Scripted responses {file} are not valid JSON: {problem}") from None
        return cls(script, str(file))

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        with self._lock:
            self._calls += 1
            answer = self._next_answer(request)
        if request.return_shape is None:
            text = answer if isinstance(answer, str) else stringify(sanitize(answer))
            return GenerateResponse(value=text, raw_text=text, provider="scripted")
        if isinstance(answer, str):
            return GenerateResponse(
                value=extract_json(answer), raw_text=answer, provider="scripted"
            )
        return GenerateResponse(value=answer, raw_text=stringify(answer), provider="scripted")

    def _next_answer(self, request: GenerateRequest) -> Any:
        for key in (request.call_key, request.agent_name, "*"):
            queue = self._queues.get(key)
            if queue:
                return queue.pop(0)
        raise ExecutionError(
            f"Scripted responses ({self._source}) have no answer left for {request.call_key} "
            f"(generate call {self._calls})"
        )
