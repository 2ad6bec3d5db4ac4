"""Where the run journal is kept: runs, their entries and large payloads, behind one Protocol.

`JournalStore` is the whole surface the journal, the graph and the CLI read and write, so a
PostgreSQL store can sit beside the SQLite one (`.agentscript/runs.db` in the workspace). A store
never interprets, rewrites or drops an entry once written; payloads over `INLINE_LIMIT` are cut
out into content-addressed blobs, stored once however often they recur, and put back on read.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, cast, get_args

from agentscript.providers.storage.sqlite_files import SqliteFile
from agentscript.runtime.errors import AgentScriptError
from agentscript.runtime.jsjson import escape_lone_surrogates

RunStatus = Literal["running", "ok", "error", "interrupted"]
Phase = Literal["start", "end"]
# The journal entry kind of a run's own start and end (trace events keep their trace kind).
RUN_KIND = "run"
# JSON payloads up to this many characters stay inline in their entry; larger values are cut
# out into blobs. Large enough that an ordinary generate event stays in one row.
INLINE_LIMIT = 8 * 1024
SCHEMA_VERSION = 1

PathPart = str | int


# What a run id may look like where it names a file (a page, a lock): the ids the journal
# makes (`YYYYMMDD-HHMMSS-xxxxxx`) and other plain names, never a path.
_FILE_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def file_safe_run_id(run_id: object) -> str:
    """`run_id` when it can name a file inside a folder, or a JournalError: a journal is
    untrusted input, and a forged id such as `../../x` must never become a path."""
    if isinstance(run_id, str) and _FILE_SAFE_ID.fullmatch(run_id) and ".." not in run_id:
        return run_id
    raise JournalError(f"The journal holds a run id that is not a plain name: {run_id!r}")


class JournalError(AgentScriptError):
    """The journal cannot be read or written, or a run reference does not name one run."""


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run as the runs table keeps it. `status` is as stored: a run whose process died
    still says "running" here; `journal.effective_status` tells the truth."""

    run_id: str
    status: RunStatus
    started_at: float
    heartbeat_at: float
    pid: int
    host: str
    program: str | None = None
    entry: str | None = None
    workspace: str | None = None
    ended_at: float | None = None
    error: str | None = None
    usage: dict[str, Any] | None = None
    events: int = 0


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One line of a run's journal. `seq` orders a run's entries as the journal received them;
    trace events keep their `event_id`, `parent` and `depth`. An agent call has a `start`
    entry (agent, function, args) and an `end` entry (its finished event without the nested
    trace, which is rebuilt from the children's `parent`)."""

    run_id: str
    seq: int
    phase: Phase
    kind: str
    event_id: int | None
    parent: int | None
    depth: int
    at: float
    data: Any


@dataclass(frozen=True, slots=True)
class PackedPayload:
    """A value as stored: JSON text with large parts replaced by null, the holes (path from the
    root, blob digest) in the order they were cut, and the blobs' texts by digest."""

    text: str
    holes: list[tuple[list[PathPart], str]]
    blobs: dict[str, str]


class JournalStore(Protocol):
    """A journal backend. The one writer of a run calls `save` with each batch of entries, the
    first time with `new`; every call is one transaction, so a process killed between calls
    leaves whole entries."""

    @property
    def location(self) -> str:
        """Where the journal lives, for messages."""
        ...

    def save(
        self,
        run: RunRecord,
        entries: Sequence[JournalEntry],
        new: bool,
        learning: Mapping[str, Any] | None = None,
    ) -> None:
        """Add `entries` to the run and bring its row up to `run` (status, heartbeat, end,
        error, usage; `events` grows by the finished trace events among the entries), creating
        the row when `new`; with `learning`, queue the run in the learning backlog with that
        request. One transaction, so an ended run is never missing from the backlog."""
        ...

    def backlog(self) -> list[tuple[str, dict[str, Any]]]:
        """The runs waiting to be learned from, oldest first, with their learning requests."""
        ...

    def learned(self, run_id: str) -> None:
        """Take the run out of the learning backlog."""
        ...

    def run(self, run_id: str) -> RunRecord | None: ...

    def runs(self, limit: int | None = None) -> list[RunRecord]:
        """Newest first."""
        ...

    def run_ids(self, prefix: str) -> list[str]: ...

    def entries(self, run_id: str) -> list[JournalEntry]:
        """In `seq` order, payloads whole again."""
        ...

    def close(self) -> None: ...


# ----------------------------------------------------------------------------- payloads

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


def dumps(value: Any) -> str:
    """Compact JSON that reads back as the same Python value (ints stay ints, NaN stays NaN,
    a lone surrogate, which UTF-8 cannot hold, stays one: it is written escaped)."""
    return escape_lone_surrogates(_encode(value))


def pack(value: Any, limit: int = INLINE_LIMIT) -> PackedPayload:
    """Cut every part of `value` whose JSON is over `limit` characters out into a blob.

    Containers are cut below first; a container still too large after that becomes a blob
    itself (with its cut children as holes inside it), so a list of many small items is one
    blob, and the same large string in two events is one blob.
    """
    text = dumps(value)
    if len(text) <= limit:
        return PackedPayload(text, [], {})
    holes: list[tuple[list[PathPart], str]] = []
    blobs: dict[str, str] = {}

    def cut(part: Any, path: list[PathPart], part_text: str) -> Any:
        kept = part
        if isinstance(part, dict):
            kept = {key: _cut_child(item, [*path, key]) for key, item in part.items()}
        elif isinstance(part, list):
            kept = [_cut_child(item, [*path, index]) for index, item in enumerate(part)]
        if kept is not part:
            part_text = dumps(kept)
            if len(part_text) <= limit:
                return kept
        digest = hashlib.sha256(part_text.encode("utf-8")).hexdigest()
        blobs[digest] = part_text
        holes.append((path, digest))
        return None

    def _cut_child(item: Any, path: list[PathPart]) -> Any:
        if item is None or isinstance(item, bool | int | float):
            return item
        if isinstance(item, str) and len(item) < limit // 2:
            return item
        item_text = dumps(item)
        return item if len(item_text) <= limit else cut(item, path, item_text)

    root = cut(value, [], text)
    return PackedPayload(dumps(root), holes, blobs)


def unpack(text: str, holes: list[tuple[list[PathPart], str]], blobs: dict[str, str]) -> Any:
    """The value `pack` cut up. Holes are filled outermost first (the reverse of cutting), so a
    blob's own holes are filled after it is in place."""
    value = json.loads(text)
    for path, digest in reversed(holes):
        part = json.loads(blobs[digest])
        if not path:
            value = part
            continue
        owner = value
        for step in path[:-1]:
            owner = owner[step]
        owner[path[-1]] = part
    return value


# ----------------------------------------------------------------------------- SQLite

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS runs (
        run_id TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        started_at REAL NOT NULL,
        heartbeat_at REAL NOT NULL,
        ended_at REAL,
        pid INTEGER NOT NULL,
        host TEXT NOT NULL,
        program TEXT,
        entry TEXT,
        workspace TEXT,
        error TEXT,
        usage_json TEXT,
        events INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX IF NOT EXISTS runs_started ON runs (started_at)",
    """CREATE TABLE IF NOT EXISTS entries (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        phase TEXT NOT NULL,
        kind TEXT NOT NULL,
        event_id INTEGER,
        parent INTEGER,
        depth INTEGER NOT NULL,
        at REAL NOT NULL,
        data_json TEXT NOT NULL,
        holes_json TEXT,
        PRIMARY KEY (run_id, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS blobs (
        digest TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        body TEXT NOT NULL
    )""",
    # Runs that ended and are not learned from yet (agentscript.learn.backlog).
    """CREATE TABLE IF NOT EXISTS learning_backlog (
        run_id TEXT PRIMARY KEY,
        queued_at REAL NOT NULL,
        request_json TEXT NOT NULL
    )""",
)

_RUN_COLUMNS = (
    "run_id, status, started_at, heartbeat_at, ended_at, pid, host, program, entry, workspace, "
    "error, usage_json, events"
)


class SqliteJournalStore:
    """A JournalStore in one SQLite file, with one connection shared by the threads of a run.

    WAL mode with `synchronous=NORMAL`: a commit survives the process being killed (the
    journal's promise), not a power loss, which would cost an fsync per flush. Writers take
    the write lock up front and wait for it, so runs in several processes queue instead of
    failing. A store that only reads never creates the file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file = SqliteFile(
            self.path,
            prepare_schema(_SCHEMA),
            lambda error: JournalError(f"Run journal {self.path}: {error}"),
            synchronous="NORMAL",
        )

    @property
    def location(self) -> str:
        return str(self.path)

    def save(
        self,
        run: RunRecord,
        entries: Sequence[JournalEntry],
        new: bool,
        learning: Mapping[str, Any] | None = None,
    ) -> None:
        with self._file.writing() as connection:
            _insert_entries(connection, entries)
            if learning is not None:
                connection.execute(
                    "INSERT OR REPLACE INTO learning_backlog (run_id, queued_at, request_json) "
                    "VALUES (?, ?, ?)",
                    (run.run_id, run.ended_at or run.heartbeat_at, dumps(dict(learning))),
                )
            added = _finished_events(entries)
            if new:
                connection.execute(
                    f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (*_run_row(run)[:-1], added),
                )
                return
            connection.execute(
                "UPDATE runs SET status = ?, heartbeat_at = ?, ended_at = ?, error = ?, "
                "usage_json = ?, events = events + ? WHERE run_id = ?",
                (
                    run.status,
                    run.heartbeat_at,
                    run.ended_at,
                    _text(run.error),
                    dumps(run.usage) if run.usage is not None else None,
                    added,
                    run.run_id,
                ),
            )

    def run(self, run_id: str) -> RunRecord | None:
        with self._file.reading() as connection:
            if connection is None:
                return None
            row = connection.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
        return _run_record(row) if row is not None else None

    def runs(self, limit: int | None = None) -> list[RunRecord]:
        with self._file.reading() as connection:
            if connection is None:
                return []
            rows = connection.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY started_at DESC, run_id DESC LIMIT ?",
                (limit if limit is not None else -1,),
            ).fetchall()
        return [_run_record(row) for row in rows]

    def run_ids(self, prefix: str) -> list[str]:
        with self._file.reading() as connection:
            if connection is None:
                return []
            # A range instead of LIKE: run ids may contain `_` and `%`, and the range uses the key.
            rows = connection.execute(
                "SELECT run_id FROM runs WHERE run_id >= ? AND run_id < ? ORDER BY run_id",
                (prefix, prefix + "\U0010ffff"),
            ).fetchall()
        return [str(row[0]) for row in rows]

    def entries(self, run_id: str) -> list[JournalEntry]:
        with self._file.reading() as connection:
            if connection is None:
                return []
            rows = connection.execute(
                "SELECT seq, phase, kind, event_id, parent, depth, at, data_json, holes_json "
                "FROM entries WHERE run_id = ? ORDER BY seq",
                (run_id,),
            ).fetchall()
            wanted: set[str] = set()
            for row in rows:
                if row[8] is not None:
                    holes = _RowCheck(f"Entry {row[0]!r} of run {run_id!r}").json_value(
                        "holes_json", row[8]
                    )
                    try:
                        wanted.update(str(digest) for _, digest in holes)
                    except (TypeError, ValueError):
                        raise JournalError(
                            f"Entry {row[0]!r} of run {run_id!r} in the journal is damaged: "
                            "holes_json is not a list of holes"
                        ) from None
            blobs = _read_blobs(connection, wanted)
        entries: list[JournalEntry] = []
        for seq, phase, kind, event_id, parent, depth, at, data_json, holes_json in rows:
            check = _RowCheck(f"Entry {seq!r} of run {run_id!r}")
            holes = check.json_value("holes_json", holes_json) if holes_json is not None else []
            try:
                data = unpack(check.text("data_json", data_json), holes, blobs)
            except (ValueError, RecursionError, KeyError, IndexError, TypeError):
                raise check._damaged("data_json", data_json, "the data it packed") from None
            entries.append(
                JournalEntry(
                    run_id,
                    int(check.number("seq", seq)),
                    cast(Phase, check.choice("phase", phase, get_args(Phase))),
                    check.text("kind", kind),
                    None if event_id is None else int(check.number("event_id", event_id)),
                    None if parent is None else int(check.number("parent", parent)),
                    int(check.number("depth", depth)),
                    check.number("at", at),
                    data,
                )
            )
        return entries

    def backlog(self) -> list[tuple[str, dict[str, Any]]]:
        with self._file.reading() as connection:
            if connection is None:
                return []
            rows = connection.execute(
                "SELECT run_id, request_json FROM learning_backlog ORDER BY queued_at, run_id"
            ).fetchall()
        return [(str(run_id), json.loads(request)) for run_id, request in rows]

    def learned(self, run_id: str) -> None:
        with self._file.writing() as connection:
            connection.execute("DELETE FROM learning_backlog WHERE run_id = ?", (run_id,))

    def blob_count(self) -> int:
        """How many distinct large payloads are stored (for tests and benchmarks)."""
        with self._file.reading() as connection:
            if connection is None:
                return 0
            return int(connection.execute("SELECT COUNT(*) FROM blobs").fetchone()[0])

    def close(self) -> None:
        self._file.close()


def prepare_schema(schema: Sequence[str]) -> Callable[[sqlite3.Connection], None]:
    """Create `schema` if missing. The journal and the task graph share the file; each brings
    its own tables, and the first to open it stamps the schema version."""

    def prepare(connection: sqlite3.Connection) -> None:
        for statement in schema:
            connection.execute(statement)
        if connection.execute("PRAGMA user_version").fetchone()[0] == 0:
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    return prepare


def _insert_entries(connection: sqlite3.Connection, entries: Sequence[JournalEntry]) -> None:
    rows = []
    for entry in entries:
        packed = pack(entry.data)
        if packed.blobs:
            connection.executemany(
                "INSERT OR IGNORE INTO blobs (digest, size, body) VALUES (?, ?, ?)",
                [(digest, len(body), body) for digest, body in packed.blobs.items()],
            )
        rows.append(
            (
                entry.run_id,
                entry.seq,
                entry.phase,
                entry.kind,
                entry.event_id,
                entry.parent,
                entry.depth,
                entry.at,
                packed.text,
                dumps(packed.holes) if packed.holes else None,
            )
        )
    connection.executemany(
        "INSERT INTO entries (run_id, seq, phase, kind, event_id, parent, depth, at, data_json, "
        "holes_json) VALUES (?,?,?,?,?,?,?,?,?,?)",
        rows,
    )


def _read_blobs(connection: sqlite3.Connection, digests: set[str]) -> dict[str, str]:
    blobs: dict[str, str] = {}
    wanted = sorted(digests)
    # SQLite limits the number of parameters in one statement; ask in slices.
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for digest, body in connection.execute(
            f"SELECT digest, body FROM blobs WHERE digest IN ({marks})", chunk
        ):
            blobs[digest] = body
    return blobs


def _finished_events(entries: Sequence[JournalEntry]) -> int:
    """Finished trace events: not the run's own start and end, nor the model, tool and memory
    exchanges kept beside the trace (none of them has an event id)."""
    return sum(1 for entry in entries if entry.phase == "end" and entry.event_id is not None)


def _run_row(run: RunRecord) -> tuple[Any, ...]:
    return (
        run.run_id,
        run.status,
        run.started_at,
        run.heartbeat_at,
        run.ended_at,
        run.pid,
        run.host,
        _text(run.program),
        _text(run.entry),
        _text(run.workspace),
        _text(run.error),
        dumps(run.usage) if run.usage is not None else None,
        run.events,
    )


def _text(value: str | None) -> str | None:
    """A text column as SQLite can store it: a lone surrogate (from a program's data, or a file
    name that is not UTF-8) is kept as its escape instead of failing the whole write."""
    return None if value is None else escape_lone_surrogates(value)


def _run_record(row: tuple[Any, ...]) -> RunRecord:
    """A runs row as a RunRecord, each column checked: a journal can be shipped or edited by
    someone else, and a damaged row is a clear error, never a traceback further on."""
    (
        run_id,
        status,
        started_at,
        heartbeat_at,
        ended_at,
        pid,
        host,
        program,
        entry,
        workspace,
        error,
        usage_json,
        events,
    ) = row
    check = _RowCheck(f"Run {run_id!r}")
    usage = check.json_object("usage_json", usage_json)
    return RunRecord(
        run_id=check.text("run_id", run_id),
        status=cast(RunStatus, check.choice("status", status, get_args(RunStatus))),
        started_at=check.number("started_at", started_at),
        heartbeat_at=check.number("heartbeat_at", heartbeat_at),
        ended_at=None if ended_at is None else check.number("ended_at", ended_at),
        pid=int(check.number("pid", pid)),
        host=check.text("host", host),
        program=check.optional_text("program", program),
        entry=check.optional_text("entry", entry),
        workspace=check.optional_text("workspace", workspace),
        error=check.optional_text("error", error),
        usage=usage,
        events=int(check.number("events", events)),
    )


class _RowCheck:
    """Checks of one journal row's columns, each failure a JournalError naming the row, the
    column and what it holds."""

    def __init__(self, row: str) -> None:
        self.row = row

    def _damaged(self, column: str, value: Any, wanted: str) -> JournalError:
        shown = repr(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        return JournalError(
            f"{self.row} in the journal is damaged: {column} is {shown}, not {wanted}"
        )

    def number(self, column: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._damaged(column, value, "a number")
        return float(value) if isinstance(value, float) else value

    def text(self, column: str, value: Any) -> str:
        if not isinstance(value, str):
            raise self._damaged(column, value, "text")
        return value

    def choice(self, column: str, value: Any, allowed: tuple[str, ...]) -> str:
        if value not in allowed:
            raise self._damaged(column, value, "one of " + ", ".join(allowed))
        return str(value)

    def optional_text(self, column: str, value: Any) -> str | None:
        return None if value is None else self.text(column, value)

    def json_value(self, column: str, value: Any) -> Any:
        try:
            return json.loads(self.text(column, value))
        except (ValueError, RecursionError):
            raise self._damaged(column, value, "JSON") from None

    def json_object(self, column: str, value: Any) -> dict[str, Any] | None:
        if value is None:
            return None
        parsed = self.json_value(column, value)
        if not isinstance(parsed, dict):
            raise self._damaged(column, value, "a JSON object")
        return parsed
