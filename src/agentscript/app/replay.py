"""The replay use cases: what a replay answers from, and a journaled run exported as a
standalone cassette.

Every journaled run keeps what it exchanged with models, tools and memories, so any of them
can be replayed offline (`run --replay RUN`) or handed to tests and CI as a file
(`runs export RUN --cassette FILE`, the format `--record` writes).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentscript.runtime.ports import Cassette


def cassette_for(replay: str | Path | Cassette, journal: Path) -> Cassette:
    """What a replay answers from: a cassette handed in, a recording file, or a run (an id, an
    id prefix or `last`) in the journal at `journal`."""
    if isinstance(replay, Cassette):
        return replay
    if names_a_file(replay):
        from agentscript.providers.storage.cassette_file import read_cassette

        return read_cassette(Path(replay))
    from agentscript.learn.cassettes import journaled_run
    from agentscript.learn.journal import shared_journal

    return journaled_run(shared_journal(journal), str(replay)).cassette


def names_a_file(replay: str | Path) -> bool:
    """A replay names a recording file when it is a Path, when such a file is there, or when
    it looks like a path; otherwise it names a run (an id, an id prefix or `last`)."""
    if isinstance(replay, Path):
        return True
    return Path(replay).exists() or "/" in replay or replay.endswith((".jsonl", ".json"))


@dataclass(frozen=True, slots=True)
class ExportedCassette:
    """What `runs export --cassette` wrote."""

    run_id: str
    path: Path
    model: int
    tools: int
    memory: int
    lines: int


def export_cassette(workspace: str | Path | None, run: str, path: str | Path) -> ExportedCassette:
    """Write the journaled `run` of `workspace` (default: the workspace root here) as a
    recording for `run --replay FILE`, scrubbed with the provider keys of this process (what
    the journal keeps was scrubbed with the run's whole redaction set already)."""
    import os

    from agentscript.app.workspace import Workspace
    from agentscript.learn.cassettes import journaled_run
    from agentscript.providers.llm.endpoints import endpoint_secrets
    from agentscript.providers.storage.cassette_file import write_cassette
    from agentscript.runtime.secrets import SecretSet

    with Workspace(workspace) as place:
        found = journaled_run(place.journal, run)
    cassette = found.cassette
    target = Path(path)
    lines = write_cassette(cassette, target, SecretSet(endpoint_secrets(os.environ)))
    return ExportedCassette(
        found.run.run_id,
        target,
        len(cassette.model),
        len(cassette.tools),
        len(cassette.memory),
        lines,
    )
