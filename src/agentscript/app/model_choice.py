"""`--model URI` and `--model NAME=URI`: run a program on other models without editing it.

One implementation for `run`, the 0.1.0 flag form and `eval`. The program's `import llm`
declarations are rewritten before it runs, so everything downstream (the trace, the journal,
recordings, prices) names the model that actually answered, while the program keeps its own
names for its models. A bare URI replaces every `import llm`; `NAME=URI` replaces one, and wins
over a bare URI for that name whatever the order of the flags.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from agentscript.lang import ast
from agentscript.runtime.errors import ExecutionError, LoadError

# `NAME=URI`: an identifier, then the URI with its `scheme://` (a bare URI may hold `=` in its
# query, but never before its `://`).
_NAMED = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.+://.*)$")
# `eval --model mock` names the mock model as a configuration beside real ones.
MOCK = "mock"


@dataclass(frozen=True, slots=True)
class ModelOverride:
    """One `--model` value: `name` None replaces every `import llm` of the program."""

    uri: str
    name: str | None = None

    @property
    def text(self) -> str:
        return f"{self.name}={self.uri}" if self.name else self.uri


def parse_model_option(text: str) -> ModelOverride:
    """`URI` or `NAME=URI`, the URI checked as the providers will read it."""
    from agentscript.providers.llm.endpoints import parse_llm_uri

    value = text.strip()
    named = _NAMED.match(value)
    override = ModelOverride(named.group(2), named.group(1)) if named else ModelOverride(value)
    try:
        parse_llm_uri(override.uri)
    except ExecutionError as problem:
        raise LoadError(
            f"--model {text}: {problem} (write URI or NAME=URI, e.g. "
            "openai://gpt-4.1-mini or Model=ollama://llama3.2)"
        ) from None
    return override


def parse_model_options(texts: Sequence[str]) -> list[ModelOverride]:
    """Every `--model` of one run: at most one bare URI and one URI per name."""
    overrides = [parse_model_option(text) for text in texts]
    seen: set[str | None] = set()
    for override in overrides:
        if override.name in seen:
            what = f"for {override.name}" if override.name else "without a NAME="
            raise LoadError(f"--model given twice {what} (last: {override.text})")
        seen.add(override.name)
    return overrides


def llm_names(program: ast.Program) -> list[str]:
    return [decl.name for decl in program.imports if decl.resource_kind == "llm"]


def with_models(program: ast.Program, texts: Sequence[str]) -> ast.Program:
    """The program with its `import llm` URIs replaced as `texts` (the `--model` values) say;
    the program itself is left as it was. Raises LoadError naming the program's llm names when
    a NAME is not one of them, or when the program imports no llm at all."""
    if not texts:
        return program
    overrides = parse_model_options(texts)
    names = llm_names(program)
    where = program.source_path or "the program"
    if not names:
        raise LoadError(f"--model: {where} has no `import llm` to replace")
    for override in overrides:
        if override.name is not None and override.name not in names:
            raise LoadError(
                f"--model {override.text}: {where} has no `import llm` named "
                f"{override.name!r} (its llm names: {', '.join(names)})"
            )
    every = next((o.uri for o in overrides if o.name is None), None)
    by_name = {o.name: o.uri for o in overrides if o.name is not None}
    imports = [
        dataclasses.replace(decl, uri=by_name.get(decl.name, every or decl.uri))
        if decl.resource_kind == "llm"
        else decl
        for decl in program.imports
    ]
    return dataclasses.replace(program, imports=imports)
