"""What an optimizer may change, read from the program: the pick at each `use one of` label,
the instruction of each generate written as a literal (proposals), worked examples before it,
and the model, among the `--model`s. Never the shapes, the tools or the control flow.

A trial is one full choice (a candidate for every choice, one model). The search space is
declared in the source, so its size is known before anything runs (an instruction choice holds
the number of proposals asked for; fewer may come back): `grid` tries every combination;
`search` changes one choice (or the model) at a time from the baseline, keeps the best pick of
each in turn, and so tries 1 + Σ(candidates − 1) + (models − 1) combinations.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agentscript.app.evals.configurations import Configuration, Variant, use_one_of_sites
from agentscript.app.optimize.prompt_sites import PromptChange, PromptSite
from agentscript.lang import ast

# `auto` searches the grid when it has at most this many trials, else one label at a time.
GRID_LIMIT = 32

ChoiceKind = Literal["use", "instruction", "examples"]

# The candidates of prompt choices: the instruction as written and proposals; no worked
# examples or some.
WRITTEN = "written"
NO_EXAMPLES = "none"
EXAMPLES = "examples"


@dataclass(frozen=True, slots=True)
class Choice:
    """One `use one of` label: its sites (ids, as the trace names them), its candidates in
    source order, and the one the program picks today (`selected`, else the first).

    A prompt choice (`instruction SITE`, `examples SITE`) has no `use one of` site but the
    generate it changes (`prompt`), and the text of each candidate but the current one."""

    label: str
    sites: tuple[str, ...]
    candidates: tuple[str, ...]
    current: str
    kind: ChoiceKind = "use"
    prompt: PromptSite | None = None
    texts: tuple[tuple[str, str], ...] = ()

    def text(self, candidate: str) -> str | None:
        """A prompt choice's text for `candidate`; None for the program as written."""
        return dict(self.texts).get(candidate)


@dataclass(frozen=True, slots=True)
class Trial:
    """A candidate for every label, and a model (None: the program's own)."""

    picks: tuple[tuple[str, str], ...]
    model: str | None

    def configuration(self, space: SearchSpace) -> Configuration:
        """How the eval runs this trial. Its label names every `use one of` pick and the
        prompt picks that change the program (so the baseline reads as before)."""
        named = {
            label: pick
            for label, pick in self.picks
            if space.choice(label).kind == "use" or pick != space.choice(label).current
        }
        if not named:
            return Configuration(self.model)
        sites = {site: pick for label, pick in self.picks for site in space.sites_of(label)}
        return Configuration(self.model, Variant.joint(named, sites))

    def pick(self, label: str) -> str:
        return dict(self.picks)[label]

    def with_pick(self, label: str, pick: str) -> Trial:
        return Trial(tuple((lb, pick if lb == label else p) for lb, p in self.picks), self.model)

    def prompt_changes(self, space: SearchSpace) -> list[PromptChange]:
        """The prompt edits this trial makes, one per changed generate, in source order."""
        changes: dict[PromptSite, PromptChange] = {}
        for choice in space.choices:
            text = choice.text(self.pick(choice.label)) if choice.prompt else None
            if choice.prompt is None or text is None:
                continue
            before = changes.get(choice.prompt, PromptChange(choice.prompt))
            changes[choice.prompt] = (
                PromptChange(before.site, text, before.examples)
                if choice.kind == "instruction"
                else PromptChange(before.site, before.instruction, text)
            )
        return list(changes.values())


@dataclass(frozen=True, slots=True)
class SearchSpace:
    choices: tuple[Choice, ...]
    models: tuple[str | None, ...]

    @classmethod
    def of(
        cls,
        program: ast.Program,
        models: Sequence[str],
        prompts: Sequence[PromptSite] = (),
        instructions: int = 0,
        examples: bool = False,
    ) -> SearchSpace:
        """The program's `use one of` labels, then for each prompt site an instruction
        choice of `instructions` proposals (their texts come later: `with_texts`) and a
        choice of worked examples, then the models."""
        by_label: dict[str, list[tuple[str, ast.UseOneOfStmt]]] = {}
        for site, stmt in use_one_of_sites(program):
            by_label.setdefault(stmt.label, []).append((site, stmt))
        choices = []
        for label, found in by_label.items():
            names = [candidate.name for candidate in found[0][1].candidates]
            # A label used at several sites is one choice: its candidates are those all share.
            shared = [n for n in names if all(n in _names(stmt) for _, stmt in found)]
            choices.append(
                Choice(label, tuple(site for site, _ in found), tuple(shared), _current(found))
            )
        for prompt in prompts:
            if instructions > 0:
                proposed = tuple(f"proposed-{n}" for n in range(1, instructions + 1))
                choices.append(
                    Choice(
                        f"instruction {prompt.id}",
                        (),
                        (WRITTEN, *proposed),
                        WRITTEN,
                        "instruction",
                        prompt,
                    )
                )
            if examples:
                choices.append(
                    Choice(
                        f"examples {prompt.id}",
                        (),
                        (NO_EXAMPLES, EXAMPLES),
                        NO_EXAMPLES,
                        "examples",
                        prompt,
                    )
                )
        return cls(tuple(choices), tuple(models) or (None,))

    def with_texts(self, label: str, texts: Sequence[tuple[str, str]]) -> SearchSpace:
        """The space with prompt choice `label` down to the current candidate and `texts`
        (candidate, text): the proposals that came back."""
        choices = tuple(
            Choice(
                c.label,
                c.sites,
                (c.current, *(name for name, _ in texts)),
                c.current,
                c.kind,
                c.prompt,
                tuple(texts),
            )
            if c.label == label
            else c
            for c in self.choices
        )
        return SearchSpace(choices, self.models)

    def prompt_choices(self) -> list[Choice]:
        return [choice for choice in self.choices if choice.prompt is not None]

    def choice(self, label: str) -> Choice:
        return next(choice for choice in self.choices if choice.label == label)

    def sites_of(self, label: str) -> tuple[str, ...]:
        return self.choice(label).sites

    @property
    def baseline(self) -> Trial:
        return Trial(tuple((c.label, c.current) for c in self.choices), self.models[0])

    @property
    def grid_size(self) -> int:
        size = len(self.models)
        for choice in self.choices:
            size *= len(choice.candidates)
        return size

    @property
    def search_size(self) -> int:
        return (
            1 + sum(len(choice.candidates) - 1 for choice in self.choices) + (len(self.models) - 1)
        )

    def strategy(self, asked: str) -> str:
        if asked == "auto":
            return "grid" if self.grid_size <= GRID_LIMIT else "search"
        return asked

    def trial_count(self, strategy: str) -> int:
        return self.grid_size if strategy == "grid" else self.search_size

    def grid(self) -> list[Trial]:
        """Every combination, the baseline first."""
        labels = [choice.label for choice in self.choices]
        trials = [self.baseline]
        for model in self.models:
            for picks in itertools.product(*(choice.candidates for choice in self.choices)):
                trial = Trial(tuple(zip(labels, picks, strict=True)), model)
                if trial != self.baseline:
                    trials.append(trial)
        return trials

    def neighbours(self, of: Trial, dimension: int) -> list[Trial]:
        """The trials that differ from `of` in one dimension: label number `dimension`, or the
        model for the last one."""
        if dimension < len(self.choices):
            choice = self.choices[dimension]
            here = of.pick(choice.label)
            return [of.with_pick(choice.label, c) for c in choice.candidates if c != here]
        return [Trial(of.picks, model) for model in self.models if model != of.model]

    @property
    def dimensions(self) -> int:
        return len(self.choices) + 1


def _names(stmt: ast.UseOneOfStmt) -> list[str]:
    return [candidate.name for candidate in stmt.candidates]


def _current(found: list[tuple[str, ast.UseOneOfStmt]]) -> str:
    """What the program picks today at the label's first site: `selected`, else the first."""
    candidates = found[0][1].candidates
    marked = [candidate.name for candidate in candidates if candidate.selected]
    return marked[0] if marked else candidates[0].name
