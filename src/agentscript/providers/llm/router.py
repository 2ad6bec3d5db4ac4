"""The real model provider: routes each generate to OpenAI, Anthropic or Ollama by the model's
URI scheme, with one provider (and one pooled HTTP client) per protocol for the whole run."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping

from agentscript.providers.llm.anthropic import AnthropicModel
from agentscript.providers.llm.endpoints import parse_llm_uri
from agentscript.providers.llm.http_model import HttpModel
from agentscript.providers.llm.ollama import OllamaModel
from agentscript.providers.llm.openai import OpenAiModel
from agentscript.providers.llm.transport import HttpTransport
from agentscript.runtime.context import PromptLayout
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import GenerateRequest, GenerateResponse
from agentscript.runtime.values import LlmBinding

_MODELS: dict[str, type[HttpModel]] = {
    "openai": OpenAiModel,
    "anthropic": AnthropicModel,
    "ollama": OllamaModel,
}


class ModelRouter:
    """An LlmProvider over all real protocols. Close it when the run ends."""

    def __init__(
        self,
        environ: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._environ = environ if environ is not None else os.environ
        self._sleep = sleep
        self._providers: dict[str, HttpModel] = {}
        self._lock = threading.Lock()

    def prompt_layout(self, model: LlmBinding | None) -> PromptLayout:
        """Every protocol here enforces the shape itself (OpenAI `json_schema`, Anthropic output
        format or forced tool, Ollama `format`), so none needs the schema printed as well."""
        return PromptLayout.COMPACT

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        if request.model is None:
            raise ExecutionError("A real LLM provider requires an agent model declaration")
        protocol, _, _ = parse_llm_uri(request.model.uri)
        with self._lock:
            provider = self._providers.get(protocol)
            if provider is None:
                model_class = _MODELS[protocol]
                transport = HttpTransport(model_class.protocol, sleep=self._sleep)
                provider = model_class(self._environ, transport)
                self._providers[protocol] = provider
        return provider.generate(request)

    def close(self) -> None:
        for provider in self._providers.values():
            provider.close()
        self._providers.clear()
