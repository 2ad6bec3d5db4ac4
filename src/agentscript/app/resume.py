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
from typing import TYPE_CHECKING

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
    if status not in RESUMABLE:
        hint = "; replay it with `run --replay`" if status == "ok" else ""
        raise AppError(f"Run {old.run.run_id} is {status}, nothing to resume{hint}")
    if old.run.program is None:
        raise AppError(f"Run {old.run.run_id} ran no program file, so it cannot run again")
    agent, _, function = (old.run.entry or "").partition(".")
    config = replace(
        config,
        replay=old.cassette,
        replay_tools="all",
        replay_lenient=True,
        workspace=config.workspace or old.run.workspace,
        journal_path=path,
        agent=config.agent or agent or None,
        function=config.function or function or None,
        # The models it ran with, so its answers match and the live part asks the same ones.
        models=config.models or old.models,
    )
    return run_program(load(old.run.program), old.input, config, resumed_from=old.run.run_id)
