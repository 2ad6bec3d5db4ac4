"""Run a program on other models without editing it: `run --model URI` (every `import llm`)
or `--model NAME=URI` (one of them), and each `eval --model`.

The override rewrites the URI of the model a generate asks for and keeps the program's name
for it (traces still say `Model`). It answers `prompt_layout` for the replaced model, so the
prompt is the one that model gets in a plain run: an eval scores the prompt production sends.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from agentscript.runtime.context import PromptLayout
from agentscript.runtime.errors import LoadError
from agentscript.runtime.generate import prompt_layout_of
from agentscript.runtime.ports import GenerateRequest, GenerateResponse, LlmProvider
from agentscript.runtime.values import LlmBinding

# The key of an override that replaces every model of the program.
EVERY_MODEL = "*"


def parse_model_overrides(texts: Sequence[str]) -> dict[str, str]:
    """`URI` (every model) or `NAME=URI` (the `import llm NAME`) for each `--model`."""
    overrides: dict[str, str] = {}
    for text in texts:
        scheme = text.find("://")
        equals = text.find("=")
        named = equals > 0 and (scheme < 0 or equals < scheme)
        name, uri = (text[:equals], text[equals + 1 :]) if named else (EVERY_MODEL, text)
        if not uri:
            raise LoadError(f"--model {text!r}: give a URI, or NAME=URI for one llm import")
        if name in overrides:
            which = "every model" if name == EVERY_MODEL else f"model {name}"
            raise LoadError(f"--model given twice for {which}")
        overrides[name] = uri
    return overrides


def check_model_names(overrides: Mapping[str, str], names: Sequence[str]) -> None:
    """Refuse a `NAME=URI` whose NAME is not one of the program's `import llm` names."""
    for name in overrides:
        if name != EVERY_MODEL and name not in names:
            known = ", ".join(names) or "none"
            raise LoadError(
                f"--model {name}=…: the program has no `import llm {name}` (its models: {known})"
            )


class ModelOverride:
    """Delegates every generate with the model's URI replaced as `overrides` says (a name's own
    entry first, then EVERY_MODEL). It does not own `inner`: whoever made that closes it."""

    def __init__(self, inner: LlmProvider, overrides: Mapping[str, str]) -> None:
        self._inner = inner
        self._overrides = dict(overrides)

    def replaced(self, model: LlmBinding | None) -> LlmBinding | None:
        name = model.name if model is not None else "model"
        uri = self._overrides.get(name, self._overrides.get(EVERY_MODEL))
        if uri is None:
            return model
        return LlmBinding(name, uri)

    def prompt_layout(self, model: LlmBinding | None) -> PromptLayout:
        return prompt_layout_of(self._inner, self.replaced(model))

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        model = self.replaced(request.model)
        if model is not request.model:
            request = dataclasses.replace(request, model=model)
        return self._inner.generate(request)
