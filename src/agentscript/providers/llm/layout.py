"""A provider wrapper that fixes the prompt layout, whatever the wrapped provider would choose.

Use it to preview the compact prompt a real provider would get under the mock or the dry run, or
to send the 0.1.0 layout (schema printed in the prompt) to an OpenAI-compatible server that
ignores `response_format`.
"""

from __future__ import annotations

from agentscript.runtime.context import PromptLayout
from agentscript.runtime.ports import GenerateRequest, GenerateResponse, LlmProvider
from agentscript.runtime.values import LlmBinding


class FixedLayout:
    """Delegates every generate; answers `prompt_layout` with the one it was given."""

    def __init__(self, inner: LlmProvider, layout: PromptLayout) -> None:
        self._inner = inner
        self._layout = layout

    def prompt_layout(self, model: LlmBinding | None) -> PromptLayout:
        return self._layout

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        return self._inner.generate(request)
