"""The compaction use case: summarise the ended days, weeks, months and years of long-term
memory now (agentscript.memory.compaction), with the model memory.yml names or the mock."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agentscript.app.errors import AppError
from agentscript.app.workspace import Workspace

if TYPE_CHECKING:
    from agentscript.memory.compaction import CompactionReport, Progress
    from agentscript.memory.config import MemoryConfig
    from agentscript.memory.summarizer import Summarizer
    from agentscript.runtime.ports import Closeable


def compact_memory(
    workspace: str | Path | None,
    *,
    database: str | Path | None = None,
    scope: str | None = None,
    dry_run: bool = False,
    responses: str | None = None,
    progress: Progress | None = None,
) -> CompactionReport:
    """Compact the memory of `workspace` (default: the current directory). A dry run calls
    no model; `responses` picks the mock model ("" for empty answers, else a scripted answers
    file keyed MemoryCompactor.day, .week, …) instead of memory.yml's timeline.model."""
    from agentscript.memory.compaction import compact

    if dry_run and responses is not None:
        raise AppError("Use either --dry-run or --mock, not both: a dry run calls no model")
    owned: list[Closeable] = []
    with Workspace.current(workspace, database) as place:
        service = place.memory()
        try:
            summarizer = None if dry_run else _summarizer(service.config, responses, owned)
            return compact(service, summarizer, scope=scope, dry_run=dry_run, progress=progress)
        finally:
            for provider in reversed(owned):
                provider.close()


def _summarizer(
    config: MemoryConfig, responses: str | None, owned: list[Closeable]
) -> Summarizer | None:
    """The summarizer over the mock model (`responses`) or the real one memory.yml names;
    None (extractive summaries, no model) when it names none."""
    from agentscript.app.composition import build_llm
    from agentscript.app.configuration import RunConfig
    from agentscript.memory.summarizer import Summarizer

    if responses is not None:
        llm = build_llm(RunConfig(model="mock", responses=responses or None), owned)
        return Summarizer(llm, config.timeline.model, week_template=config.timeline.week_template)
    if config.timeline.model is None:
        return None
    return Summarizer.from_config(config, build_llm(RunConfig(model="real"), owned))
