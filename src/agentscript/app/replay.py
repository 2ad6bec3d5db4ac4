"""What a replay answers from: a cassette handed in, a recording file, or a journaled run.

Every journaled run keeps what it exchanged with models, tools and memories, so any of them
can be replayed offline (`run --replay RUN`), resumed (agentscript.app.resume) or handed to
tests and CI as a file (`runs export RUN --cassette FILE`, agentscript.app.runs).
"""

from __future__ import annotations

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
