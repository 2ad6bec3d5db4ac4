"""The resume use case: finish a run that did not get to its end, without doing twice what it
did.

The program runs again from the start with the same input and entry. Everything the old run
got done is answered from its journal: no model is asked again, no tool with effects runs
again, and the effect records those calls reported come back in the new trace, so `undo` of
the new run puts back what both did. At the first call the journal cannot answer, the run
goes on live under fresh budgets. A call the old run started but never finished is asked
about, or refused (see agentscript.providers.tools.replay). The new run's journal start names
the old one (`resumed_from`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscript.app.errors import AppError

if TYPE_CHECKING:
    from agentscript.app.configuration import RunConfig
    from agentscript.runtime.interpreter import RunResult

# The statuses a run can be resumed from: it did not get to its end. A run over budget or
# failed ended in "error".
RESUMABLE = ("interrupted", "error")


def resume(run: str, config: RunConfig | None = None) -> RunResult:
    """Resume the journaled `run` (an id, an id prefix or `last`) of `config.workspace`'s
    journal (default: the workspace root around the current folder) under `config`, whose
    model, tools and budgets serve the live part. Raises AppError when the run cannot be
    resumed (it finished, or ran no program file), and what `agentscript.run` raises."""
    from agentscript.app.configuration import RunConfig
    from agentscript.app.programs import load
    from agentscript.app.run import run_program
    from agentscript.app.workspace import Workspace
    from agentscript.learn.cassettes import journaled_run

    config = config or RunConfig()
    with Workspace(config.workspace) as place:
        old = journaled_run(place.journal, run)
        status = place.journal.status(old.run)
        path = config.journal_path or place.journal.store.location
        root = place.root.resolve()
        successor = resumed_by(place.journal, old.run.run_id)
    if status not in RESUMABLE:
        hint = "; replay it with `run --replay`" if status == "ok" else ""
        raise AppError(f"Run {old.run.run_id} is {status}, nothing to resume{hint}")
    if successor is not None:
        raise AppError(
            f"Run {old.run.run_id} was resumed already, by run {successor}: resume that one "
            "(resuming this one again would do its live part twice)"
        )
    program = program_inside(root, old.run.program, old.run.workspace, old.run.run_id)
    agent, _, function = (old.run.entry or "").partition(".")
    config = replace(
        config,
        replay=old.cassette,
        replay_tools="all",
        replay_lenient=True,
        # The workspace whose journal this is, never one the journal names: a journal is
        # untrusted input (docs/security.md), and a copied workspace stays a copy.
        workspace=str(root),
        journal_path=path,
        agent=config.agent or agent or None,
        function=config.function or function or None,
        # The models it ran with, so its answers match and the live part asks the same ones.
        models=config.models or trusted_models(old.models, old.run.run_id),
    )
    return run_program(load(program), old.input, config, resumed_from=old.run.run_id)


def program_inside(root: Path, program: str | None, recorded_root: str | None, run: str) -> Path:
    """The journaled run's program as a file of the workspace at `root`: the journal's path
    taken relative to the workspace it recorded (so a copied workspace runs its own copy), and
    refused unless it lies inside `root`, symlinks resolved."""
    if not program:
        raise AppError(f"Run {run} ran no program file, so it cannot run again")
    recorded = Path(program)
    relative: Path | None = None
    if recorded_root and recorded.is_absolute():
        try:
            relative = recorded.relative_to(recorded_root)
        except ValueError:
            relative = None
    elif not recorded.is_absolute():
        relative = recorded
    candidate = (root / relative).resolve() if relative is not None else recorded.resolve()
    if not candidate.is_relative_to(root) or not candidate.is_file():
        raise AppError(
            f"Run {run}'s program {program} is not a file inside this workspace ({root}): a "
            "resume runs only the workspace's own programs"
        )
    return candidate


def trusted_models(models: list[str], run: str) -> list[str]:
    """The journal's `--model` values, unless one names a host of its own (`ollama://HOST/…`):
    a journal could otherwise send this run's prompts to a server the user never chose."""
    from agentscript.app.model_choice import parse_model_option
    from agentscript.providers.llm.endpoints import parse_llm_uri

    for text in models:
        if text != "mock" and parse_llm_uri(parse_model_option(text).uri)[2] is not None:
            raise AppError(
                f"Run {run} was started with --model {text}, which names a server: give the "
                "models again with --model to resume it"
            )
    return models


def resumed_by(journal: Any, run_id: str) -> str | None:
    """The run that resumed `run_id` already, if any (its journal start names it)."""
    from agentscript.learn.journal_store import RUN_KIND

    for record in journal.store.runs():
        if record.run_id == run_id:
            continue
        for entry in journal.store.entries(record.run_id)[:1]:
            data = entry.data if isinstance(entry.data, dict) else {}
            if entry.kind == RUN_KIND and data.get("resumed_from") == run_id:
                return str(record.run_id)
    return None
