"""What a trial may put into a prompt: instructions a model proposes from the cases the
program got wrong, and worked examples from the cases it got right.

Both are read from the baseline's training runs in the journal: a failing case's rendered
prompt and the answer the model gave, a passing case's input and its answer at the site. The
proposer is itself an AgentScript program (below), run like any other: journaled, budgeted,
its calls counted in the optimization's bound. Its answer must fit the declared shape, and a
proposal stays an instruction: the site's output shape, tools and control flow never change.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentscript.app.evals.results import CellResult
from agentscript.app.optimize.prompt_sites import PromptSite, examples_text
from agentscript.lang import ast

# How many failing cases a proposer is shown, and how much of each prompt.
FAILURES_SHOWN = 5
PROMPT_CHARS = 1500

PROPOSER = """import llm Proposer from "openai://gpt-4.1-mini"

main agent InstructionWriter {
    model Proposer
    role "prompt engineer"
    description "Rewrites the instruction of one step of an agent so that its answers are right."

    main func(input { instruction: string, shape: string, failures: string, count: number }) {
        use input.instruction as "current instruction"
        use input.shape as "answer shape (fixed)"
        use input.failures < 4k as "cases answered wrong"
        use input.count as "instructions to write"
        generate({
            input: "The current instruction led to the wrong answers shown. Write new instructions for the same step, as many as asked, each complete on its own, each a different way to get these cases right. Keep the answer shape: do not ask for other fields.",
            attempts: 2
        }) -> {
            instructions: list[string]
        }
    }
}
"""


@dataclass(frozen=True, slots=True)
class SiteEvidence:
    """What the baseline's training runs show at one site."""

    failures: list[dict[str, Any]]
    passes: list[tuple[Any, Any]]


def proposer_program() -> ast.Program:
    """The proposer; a run gives it its model (`RunConfig.models`)."""
    from agentscript.app.programs import load_source

    return load_source(PROPOSER)


def evidence(
    site: PromptSite,
    rows: Sequence[CellResult],
    inputs: dict[str, Any],
    journal_path: str | Path | None,
) -> SiteEvidence:
    """The site's failing and passing training cases, with the prompt and the answer each run
    journaled at the site (the run's value where the journal has no entry for it)."""
    failures: list[dict[str, Any]] = []
    passes: list[tuple[Any, Any]] = []
    journal = _open(journal_path)
    try:
        for row in sorted(rows, key=lambda r: r.id):
            seen = _at_site(journal, row.run_id, site)
            answer = seen.get("result", row.value) if seen else row.value
            if row.passed:
                passes.append((inputs.get(row.id), answer))
            elif len(failures) < FAILURES_SHOWN:
                prompt = (seen.get("context") or {}).get("finalUserMessage") if seen else None
                failure: dict[str, Any] = {
                    "input": inputs.get(row.id),
                    "answer": answer if row.error is None else None,
                    "expected": row.expected,
                }
                if row.error is not None:
                    failure["error"] = row.error
                if isinstance(prompt, str):
                    failure["prompt"] = prompt[:PROMPT_CHARS]
                failures.append(failure)
    finally:
        if journal is not None:
            journal.close()
    return SiteEvidence(failures, passes)


def proposer_input(site: PromptSite, found: SiteEvidence, count: int) -> dict[str, Any]:
    return {
        "instruction": site.instruction,
        "shape": site.shape,
        "failures": "\n\n".join(json.dumps(f, ensure_ascii=False) for f in found.failures),
        "count": count,
    }


def chosen_instructions(site: PromptSite, proposed: Any, count: int) -> list[str]:
    """The proposer's distinct, non-empty instructions other than the site's own, at most
    `count`, in the order given."""
    chosen: list[str] = []
    texts = proposed.get("instructions") if isinstance(proposed, dict) else None
    for text in texts if isinstance(texts, list) else []:
        if not isinstance(text, str):
            continue
        text = text.strip()
        if text and text != site.instruction and text not in chosen:
            chosen.append(text)
    return chosen[:count]


def examples(found: SiteEvidence, count: int) -> str | None:
    """`count` passing cases as worked examples, answers as varied as the passes allow (a
    small model copies the answer it sees most); None when none passed."""
    if count <= 0 or not found.passes:
        return None
    chosen: list[tuple[Any, Any]] = []
    shown: set[str] = set()
    for given, answer in found.passes:  # one of each answer first, in case order
        key = json.dumps(answer, sort_keys=True, default=str)
        if key not in shown and len(chosen) < count:
            chosen.append((given, answer))
            shown.add(key)
    chosen += [p for p in found.passes if p not in chosen][: count - len(chosen)]
    return examples_text(chosen)


def _open(journal_path: str | Path | None) -> Any:
    if journal_path is None or not Path(journal_path).exists():
        return None
    from agentscript.learn.journal import Journal

    return Journal.open(journal_path)


def _at_site(journal: Any, run_id: str | None, site: PromptSite) -> dict[str, Any] | None:
    """The data of the run's last generate at the site (matched by its instruction)."""
    if journal is None or run_id is None:
        return None
    found = None
    for entry in journal.store.entries(run_id):
        data = entry.data
        generate = entry.kind == "generate" and isinstance(data, dict)
        if generate and data.get("instruction") == site.instruction:
            found = data
    return found
