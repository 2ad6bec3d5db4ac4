"""The reflection use cases: a run's agent reflects on it (agentscript.learn.reflection), and an
agent's profile card.

The model is the mock (`responses`: "" answers OFFLINE_ANSWER, a path answers from that
script), a model URI, else the model the run itself used.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from agentscript.app.errors import AppError
from agentscript.app.workspace import Workspace

if TYPE_CHECKING:
    from agentscript.app.configuration import RunConfig
    from agentscript.learn.journal_store import JournalEntry
    from agentscript.learn.reflection import ReflectionReport
    from agentscript.runtime.ports import Closeable, LlmProvider

# What `--mock` without a file answers: a reflection that changes nothing, to try the command.
OFFLINE_ANSWER = '{"summary": "Reflected offline with the mock model.", "operations": []}'


def reflect_on_run(
    workspace: str | Path,
    reference: str,
    *,
    model: str | None = None,
    responses: str | None = None,
    agent: str | None = None,
    database: str | Path | None = None,
) -> ReflectionReport:
    """Open the journal of `workspace` and the memory of the run's workspace, choose the
    model, reflect."""
    from agentscript.learn.reflection import reflect

    if model is not None and responses is not None:
        raise AppError("Use either --model or --mock, not both")
    owned: list[Closeable] = []
    with Workspace(workspace, database=database) as place:
        try:
            found = place.journal.resolve(reference)
            entries = place.journal.store.entries(found.run_id)
            llm, uri = reflection_model(model, responses, entries, owned)
            root = Path(found.workspace) if found.workspace else place.root
            return reflect(
                place.journal,
                found.run_id,
                llm,
                service=place.memory(root),
                model=uri,
                agent=agent,
                workspace=root,
            )
        finally:
            for provider in reversed(owned):
                provider.close()


def reflection_model(
    model: str | None,
    responses: str | None,
    entries: list[JournalEntry],
    owned: list[Closeable],
) -> tuple[LlmProvider, str | None]:
    """The provider and model URI a reflection uses: the mock (`responses` "" answers
    OFFLINE_ANSWER, a path answers from that script), `model`, else the run's own model."""
    from agentscript.app.composition import build_llm
    from agentscript.app.configuration import RunConfig
    from agentscript.learn.run_memory import program_model
    from agentscript.providers.llm.endpoints import parse_llm_uri
    from agentscript.providers.llm.mock import ScriptedLlm
    from agentscript.runtime.errors import ExecutionError

    if responses == "":
        return ScriptedLlm({"Reflection": [OFFLINE_ANSWER]}, "--mock"), None
    if responses is not None:
        return build_llm(RunConfig(model="mock", responses=responses), owned), None
    uri = model or program_model(entries)
    if uri is None:
        raise AppError("The run used no model: name one with --model URI, or use --mock")
    try:
        parse_llm_uri(uri)
    except ExecutionError as problem:
        raise AppError(f"--model {uri}: {problem}") from None
    return build_llm(RunConfig(model="real"), owned), uri


class ReflectionSkipped(AppError):
    """Why a run that asked to be reflected on was not (the run itself is fine)."""


def reflect_after_run(config: RunConfig, program_path: str | None, run_id: str) -> ReflectionReport:
    """`run --reflect`: reflect on the run that just ended with the model it used (the mock
    with the same answers file, whose `Reflection` answers are the reflection's). Raises
    ReflectionSkipped when the run cannot be reflected on (a replay has no model to reflect
    with)."""
    from agentscript.app.composition import workspace_root

    if config.replay is not None:
        raise ReflectionSkipped(
            "a replayed run has no model to reflect with "
            f"(use agentscript reflect {run_id} --model URI)"
        )
    responses = str(config.responses or "") if config.model == "mock" else None
    return reflect_on_run(
        workspace_root(config, program_path),
        run_id,
        responses=responses,
        database=config.memory_db,
    )


def profile_card(workspace: str | Path, agent: str) -> list[str]:
    """AGENT's profile on one screen (its first line is the title); AppError when the agent
    has no profile in `workspace`."""
    from agentscript.learn.profile import summary_card

    place = Workspace(workspace)
    store = place.profiles
    if not store.path(agent).is_file():
        known = ", ".join(store.agents()) or "none"
        raise AppError(f"No profile for {agent} in {workspace} (profiles here: {known})")
    return summary_card(store.load(agent), store.history(agent), time.time())
