"""A journaled run as a cassette: what it exchanged with models, tools and memories, ready to
answer a replay or a resume of it, or to be exported as a standalone recording.

A run journaled before exchanges were kept has none: its cassette is empty, and replaying it
stops at its first model call with a mismatch that says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentscript.learn.journal import Journal
from agentscript.learn.journal_store import RUN_KIND, JournalEntry, JournalError, RunRecord
from agentscript.providers.storage.cassette_file import reported_events
from agentscript.runtime.ports import (
    MEMORY_EXCHANGE,
    MODEL_EXCHANGE,
    TOOL_FINISHED,
    TOOL_STARTED,
    Cassette,
    ToolExchange,
)


@dataclass(frozen=True, slots=True)
class JournaledRun:
    """A run with what a re-execution needs: how it was started and its cassette."""

    run: RunRecord
    start: dict[str, Any]
    cassette: Cassette

    @property
    def input(self) -> Any:
        return self.start.get("input")

    @property
    def models(self) -> list[str]:
        """The `--model` values the run was started with (agentscript.app.model_choice)."""
        models = self.start.get("models")
        return [str(text) for text in models] if isinstance(models, list) else []


def journaled_run(journal: Journal, reference: str) -> JournaledRun:
    """The run named by `reference` (id, prefix or `last`) with its cassette."""
    run = journal.resolve(reference)
    entries = journal.store.entries(run.run_id)
    start = next((e.data for e in entries if e.kind == RUN_KIND and e.phase == "start"), None)
    if not isinstance(start, dict):
        raise JournalError(f"Run {run.run_id} has no start in the journal")
    return JournaledRun(run, start, cassette_of(f"run {run.run_id}", entries))


def cassette_of(source: str, entries: list[JournalEntry]) -> Cassette:
    """The exchanges among a run's entries, in the order they started. A tool call without its
    finish (or that a resume refused to run again, not knowing its outcome) is unfinished."""
    cassette = Cassette(source)
    calls: dict[Any, ToolExchange] = {}
    for entry in entries:
        if entry.event_id is not None or not isinstance(entry.data, dict):
            continue
        data = entry.data
        if entry.kind == MODEL_EXCHANGE:
            cassette.model.append(data)
        elif entry.kind == MEMORY_EXCHANGE:
            cassette.memory.append(data)
        elif entry.kind == TOOL_STARTED:
            args = data.get("args")
            exchange = ToolExchange(
                str(data.get("uri")),
                str(data.get("method")),
                args if isinstance(args, list) else [],
            )
            calls[data.get("call")] = exchange
            cassette.tools.append(exchange)
        elif entry.kind == TOOL_FINISHED and data.get("call") in calls and not data.get("unknown"):
            _finish(calls[data.get("call")], data)
    return cassette


def _finish(exchange: ToolExchange, data: dict[str, Any]) -> None:
    exchange.finished = True
    exchange.result = data.get("result")
    error = data.get("error")
    exchange.error = error if isinstance(error, str) else None
    exchange.events = reported_events(data.get("events"))
    exchange.secret = data.get("secret") is True
