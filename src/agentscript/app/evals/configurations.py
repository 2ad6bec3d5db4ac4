"""Configurations: every `--model` × every `--variant` choice; each case runs in each one.

A variant is named by the label of a `use one of` site and the candidate to pick
(`tone=formal`); a label used at several sites picks the candidate at all of them. A full site
id (`main.as#Writer.draft[tone]=formal`) names one site.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from agentscript.app.evals.metrics import MetricError
from agentscript.lang import ast


@dataclass(frozen=True, slots=True)
class Variant:
    """A pick at `use one of` sites: `label=choice` (one label, all its sites), or a joint
    pick of several labels (`joint`), whose label already reads `a=x b=y` and choice is ""."""

    label: str
    choice: str
    # The runtime's variant hints: site id → candidate.
    sites: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def joint(cls, picks: dict[str, str], sites: dict[str, str]) -> Variant:
        """One pick per label (`picks`, label → candidate) at the `sites` they name."""
        return cls(" ".join(f"{label}={choice}" for label, choice in picks.items()), "", sites)

    @property
    def text(self) -> str:
        return f"{self.label}={self.choice}" if self.choice else self.label


@dataclass(frozen=True, slots=True)
class Configuration:
    """One way to run the program: a model URI (None: the program's own) and a variant."""

    model: str | None = None
    variant: Variant | None = None
    # With `--learn`: "off" or "on", the runtime's learning during this configuration's runs.
    learning: str | None = None

    @property
    def label(self) -> str:
        parts = [
            self.model or "",
            self.variant.text if self.variant else "",
            f"learning={self.learning}" if self.learning else "",
        ]
        return " ".join(part for part in parts if part) or "program"

    @property
    def slug(self) -> str:
        """A file-name-safe form of the label (cassette folders)."""
        return re.sub(r"[^A-Za-z0-9._=-]+", "_", self.label).strip("_") or "program"


def configurations(
    program: ast.Program, models: Sequence[str], variants: Sequence[str]
) -> list[Configuration]:
    """The product of `models` (or the program's own) and `variants` (or the default pick).
    A model is `URI`, `NAME=URI` (agentscript.app.model_choice) or `mock`."""
    from agentscript.app.model_choice import MOCK, with_models

    for text in models:
        if text != MOCK:
            with_models(program, [text])  # refuses a bad URI or an unknown NAME now
    resolved = [resolve_variant(program, text) for text in variants]
    chosen: list[Configuration] = []
    model_choices: list[str | None] = [*models] or [None]
    variant_choices: list[Variant | None] = [*resolved] or [None]
    for model in model_choices:
        for variant in variant_choices:
            configuration = Configuration(model, variant)
            if configuration in chosen:
                raise MetricError(f"Configuration given twice: {configuration.label}")
            chosen.append(configuration)
    return chosen


def resolve_variant(program: ast.Program, text: str) -> Variant:
    """`LABEL=CHOICE` (or `SITE=CHOICE`) checked against the program's `use one of` sites."""
    name, equals, choice = text.rpartition("=")
    if not equals or not name or not choice:
        raise MetricError(f"Invalid --variant {text!r}: write LABEL=CHOICE, e.g. tone=formal")
    sites = list(use_one_of_sites(program))
    if not sites:
        raise MetricError(f"--variant {text}: the program has no `use one of` site")
    matching = [(site, stmt) for site, stmt in sites if name in (site, stmt.label)]
    if not matching:
        labels = sorted({stmt.label for _, stmt in sites})
        raise MetricError(
            f"--variant {text}: no `use one of` labelled {name!r} (labels: {', '.join(labels)})"
        )
    for site, stmt in matching:
        names = [candidate.name for candidate in stmt.candidates]
        if choice not in names:
            raise MetricError(
                f"--variant {text}: {site} has no candidate {choice!r} "
                f"(candidates: {', '.join(names)})"
            )
    return Variant(name, choice, {site: choice for site, _ in matching})


def use_one_of_sites(program: ast.Program) -> Iterator[tuple[str, ast.UseOneOfStmt]]:
    """Every `use one of` of the program with its site id, as the interpreter names it."""
    from agentscript.runtime.interpreter import use_site_id

    entry = program.source_path
    for agent in program.agents:
        for stmt in agent.uses or ():
            if isinstance(stmt, ast.UseOneOfStmt):
                yield use_site_id(entry, agent, None, stmt.label), stmt
        for function in agent.functions:
            for stmt in use_one_of_statements(function.body):
                yield use_site_id(entry, agent, function.name, stmt.label), stmt


def use_one_of_statements(body: list[ast.Stmt]) -> Iterator[ast.UseOneOfStmt]:
    """The `use one of` statements of a function body, nested ones included, in order."""
    for stmt in body:
        if isinstance(stmt, ast.UseOneOfStmt):
            yield stmt
        for name in ("then_body", "else_body", "body"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list):
                yield from use_one_of_statements(inner)
