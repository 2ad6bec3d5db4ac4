"""The run journal: every run's events appended as they happen, and the reading side of it.

`JournalSink` is a TraceSink. It numbers what it receives and keeps it in memory; the
journal's background thread writes it every `FLUSH_SECONDS` (the sink itself when much is
waiting) with a heartbeat, so a run killed mid-way leaves what it had done and is shown as
interrupted. After `finish_run` the same thread writes the end and then either queues the run
in the journal's learning backlog, in the same transaction (`learning_request`: the run is
learned from later, by whoever next reads what it teaches; see agentscript.learn.backlog), or
adds it to the task graph with its execution trace and hands both to the sink's learner (run
memory and experiences). A process waits for that at exit, so queueing keeps the exit short
and loses nothing. Journaling never changes a run and never delays it: a journal, or a
learner, that fails is reported in `problems`, never raised.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscript.learn.failure_class import environment_cause, operator_note
from agentscript.learn.journal_store import (
    RUN_KIND,
    JournalEntry,
    JournalError,
    JournalStore,
    Phase,
    RunRecord,
    RunStatus,
    SqliteJournalStore,
    dumps,
)
from agentscript.learn.locks import host_name, process_alive
from agentscript.runtime.secrets import SecretSet
from agentscript.runtime.trace import (
    TraceEvent,
    TraceSink,
    format_trace,
    is_audit_only,
    without_audit,
)

if TYPE_CHECKING:
    from agentscript.learn.execution_trace import TaskExecutionTrace
    from agentscript.learn.graph import TaskGraph

# Where a workspace keeps its journal.
JOURNAL_FILE = Path(".agentscript") / "runs.db"
# How long an event may wait in memory before the background thread writes it.
FLUSH_SECONDS = 0.05
# The runs learned from: one that was interrupted teaches nothing reliable.
LEARNED_STATUSES = frozenset({"ok", "error"})
# How long a process that ends waits for the journal to write and learn its last runs.
EXIT_WAIT_SECONDS = 30.0
# Entries waiting that make the next event write them at once (bounds memory and loss).
FLUSH_AT = 512
# How often a live run says so while nothing else is written, and after how long without a
# sign of life a run on another host (or a reused pid) counts as interrupted.
HEARTBEAT_SECONDS = 15.0
STALE_SECONDS = 120.0

Clock = Callable[[], float]
# The step after a finished run is in the task graph: the journal, the run, its entries and its
# execution trace in, problems out (agentscript.learn.run_memory.RunLearner).
Learner = Callable[["Journal", RunRecord, list[JournalEntry], "TaskExecutionTrace"], list[str]]
# A journal entry without its run id: seq, phase, kind, event id, parent, depth, at, data.
_Record = tuple[int, Phase, str, int | None, int | None, int, float, Any]


def journal_path(workspace: str | Path) -> Path:
    return Path(workspace) / JOURNAL_FILE


def find_workspace_root(start: str | Path) -> Path:
    """Where the journal of runs started in `start` lives, by one rule that `run` (from the
    program's folder) and `runs` (from the current folder) share: the nearest folder from
    `start` upward that already holds a journal or is a version-control root (`.git`), else
    `start` itself. The home folder is never chosen by the search (it holds the user's own
    memory database, not a workspace), and an explicit `--workspace` skips the search."""
    folder = Path(start).resolve()
    home = Path.home().resolve()
    for candidate in (folder, *folder.parents):
        if candidate == home or candidate == candidate.parent:
            break
        if (candidate / JOURNAL_FILE).is_file() or (candidate / ".git").exists():
            return candidate
    return folder


def run_journal_path(workspace: str | Path | None, start: str | Path) -> Path:
    """Where a run journals: in `workspace` when one was given explicitly, else at the
    workspace root found from `start` (the program's folder)."""
    root = Path(workspace) if workspace is not None else find_workspace_root(start)
    return journal_path(root)


def journal_folder(workspace: str | Path | None) -> Path:
    """The folder whose journal a command opens: `workspace` when given, else the workspace
    root around the current folder."""
    return Path(workspace) if workspace is not None else find_workspace_root(Path.cwd())


def new_run_id(now: float) -> str:
    """`YYYYMMDD-HHMMSS-xxxxxx` (UTC, random suffix): sorts by start time, short to type."""
    stamp = datetime.fromtimestamp(now, UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{os.urandom(3).hex()}"


class Journal:
    """One journal file: the run store and the task graph kept beside it, opened when first
    used (a run that only appends its events never loads the graph's code)."""

    def __init__(
        self, store: JournalStore, open_graph: Callable[[], TaskGraph], clock: Clock = time.time
    ) -> None:
        self.store = store
        self.clock = clock
        self._open_graph = open_graph
        self._graph: TaskGraph | None = None
        self._graph_lock = threading.Lock()

    @classmethod
    def open(cls, path: str | Path, clock: Clock = time.time) -> Journal:
        """The SQLite journal at `path`; the file is created by the first run written."""

        def open_graph() -> TaskGraph:
            from agentscript.learn.graph import TaskGraph
            from agentscript.learn.graph_store import SqliteGraphStore

            return TaskGraph(SqliteGraphStore(path), clock)

        return cls(SqliteJournalStore(path), open_graph, clock)

    @property
    def graph(self) -> TaskGraph:
        with self._graph_lock:
            if self._graph is None:
                self._graph = self._open_graph()
            return self._graph

    @classmethod
    def for_workspace(cls, workspace: str | Path, clock: Clock = time.time) -> Journal:
        return cls.open(journal_path(workspace), clock)

    def sink(self, run_id: str | None = None) -> JournalSink:
        return JournalSink(self, run_id=run_id)

    def resolve(self, reference: str) -> RunRecord:
        """A run by id, unique id prefix, or `last` (the newest run)."""
        if reference == "last":
            newest = self.store.runs(limit=1)
            if not newest:
                raise JournalError(f"No runs in {self.store.location}")
            return newest[0]
        run = self.store.run(reference)
        if run is not None:
            return run
        matches = self.store.run_ids(reference) if reference else []
        if not matches:
            raise JournalError(f"No run '{reference}' in {self.store.location}")
        if len(matches) > 1:
            shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
            raise JournalError(f"Run '{reference}' is ambiguous: {shown}")
        found = self.store.run(matches[0])
        assert found is not None
        return found

    def status(self, run: RunRecord) -> RunStatus:
        return effective_status(run, self.clock())

    def learn(self, run: RunRecord, entries: list[JournalEntry]) -> TaskExecutionTrace:
        """Add a run to the task graph and keep its execution trace on its EPISODE node. Safe to
        repeat; a run still going is summarised but nothing is stored for it."""
        from agentscript.learn.execution_trace import build_execution_trace

        status = self.status(run)
        trace = build_execution_trace(run, entries, status)
        if status != "running":
            graph = self.graph
            with graph.store.transaction():  # one commit for the run, not one per table
                graph.ingest(run, entries, status)
                graph.record_outcome(run.run_id, status, trace.to_json())
        return trace

    def close(self) -> None:
        self.store.close()
        if self._graph is not None:
            self._graph.store.close()


_SHARED: dict[tuple[int, Path], Journal] = {}
_SHARED_LOCK = threading.Lock()


def shared_journal(path: str | Path) -> Journal:
    """The journal at `path`, opened once per process: the runs of a process (the REPL, a
    program run many times from Python) share its connections instead of opening their own."""
    key = (os.getpid(), Path(path).absolute())
    with _SHARED_LOCK:
        journal = _SHARED.get(key)
        if journal is None:
            journal = _SHARED[key] = Journal.open(key[1])
    return journal


def close_shared_journals() -> None:
    """Close every journal `shared_journal` opened in this process (a host, or a test, done
    with its runs); the next `shared_journal` opens afresh."""
    with _SHARED_LOCK:
        journals = list(_SHARED.values())
        _SHARED.clear()
    for journal in journals:
        journal.close()


def effective_status(run: RunRecord, now: float, host: str | None = None) -> RunStatus:
    """The stored status, except that a "running" run whose process is gone is "interrupted":
    its pid is dead on this host, or no heartbeat came for STALE_SECONDS (another host, or a
    pid since reused)."""
    if run.status != "running":
        return run.status
    if now - run.heartbeat_at > STALE_SECONDS:
        return "interrupted"
    if run.host == (host or host_name()) and not process_alive(run.pid):
        return "interrupted"
    return "running"


class JournalSink(TraceSink):
    """Journals one run: call `start_run`, run with the sink attached, call `finish_run`."""

    def __init__(
        self,
        journal: Journal,
        run_id: str | None = None,
        heartbeat_seconds: float = HEARTBEAT_SECONDS,
    ) -> None:
        self.journal = journal
        self.run_id = run_id or new_run_id(journal.clock())
        # What went wrong while journaling, for the caller to report (the run is unaffected).
        self.problems: list[str] = []
        # Learns from the run once it is in the task graph; what goes wrong is a problem.
        self.learner: Learner | None = None
        # Instead: queue the run in the learning backlog with this request (JSON data that
        # says how to learn from it), to be learned from later (agentscript.learn.backlog).
        self.learning_request: dict[str, Any] | None = None
        self._heartbeat_seconds = heartbeat_seconds
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        # Every entry so far as a plain tuple (building JournalEntry objects is left to the
        # background thread), and those not written yet (a durable exchange is written at
        # once, alone, so it never waits among them).
        self._records: list[_Record] = []
        self._pending: list[_Record] = []
        self._seq = 0
        # The time of the latest entry: entries' times never go back in seq order (`_now`).
        self._last_at = 0.0
        # The run's redaction set (build_run shares the run's own): the start's input, the
        # value and the error are scrubbed with it; events arrive scrubbed by the tracer.
        self.secrets = SecretSet()
        self._record: RunRecord | None = None
        self._finished = False
        self._broken = False
        self._saved = False
        self._last_write = 0.0
        self._learned = threading.Event()

    # ------------------------------------------------------------------ the run

    def start_run(
        self,
        program: str | None,
        input: Any,
        entry: str | None = None,
        workspace: str | Path | None = None,
        resumed_from: str | None = None,
        models: list[str] | None = None,
    ) -> str:
        """Record the run's start (program path, entry input, `Agent.function` if not the main
        one, workspace, the run it resumes, the `--model` values it runs with) and start
        flushing; returns the run id."""
        with self._lock:
            now = self._now()
        self._record = RunRecord(
            run_id=self.run_id,
            status="running",
            started_at=now,
            heartbeat_at=now,
            pid=os.getpid(),
            host=host_name(),
            program=program,
            entry=entry,
            workspace=str(workspace) if workspace is not None else None,
        )
        data: dict[str, Any] = {
            "program": program,
            "entry": entry,
            "workspace": self._record.workspace,
        }
        if resumed_from is not None:
            data["resumed_from"] = resumed_from
        if models:
            data["models"] = list(models)
        input = self._scrub(input)
        # Written with the first batch: by the background thread within FLUSH_SECONDS, or
        # after `finish_run` for a shorter run, which then costs one transaction in all.
        start: _Record = (0, "start", RUN_KIND, None, None, 0, now, {**data, "input": input})
        with self._lock:
            self._records.insert(0, start)
            self._pending.insert(0, start)
        _background().watch(self)
        return self.run_id

    def finish_run(
        self,
        status: RunStatus,
        value: Any = None,
        error: BaseException | str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> list[str]:
        """Record how the run ended: ok with its value, error with the error, or interrupted.
        Returns at once: the journal's background thread writes the end with what is still
        waiting, then adds the run to the task graph with its execution trace; `wait` waits
        for both (and the process waits for them at exit). Returns the problems so far."""
        if self._finished:
            return list(self.problems)
        if self._record is None:
            self._finished = True
            self._learned.set()
            self.problems.append("The run journal was never started (finish_run before start_run)")
            return list(self.problems)
        background = _background()
        background.forget(self)
        error_text = self._scrub(_describe(error)) if error is not None else None
        end_data: dict[str, Any] = {"status": status, "value": self._scrub(value)}
        if error is not None:
            end_data["error"] = error_text
            end_data["error_type"] = (
                type(error).__name__ if isinstance(error, BaseException) else None
            )
        if usage is not None:
            end_data["usage"] = usage
        with self._lock:
            now = self._now()
            self._finished = True
            self._seq += 1
            end: _Record = (self._seq, "end", RUN_KIND, None, None, 0, now, end_data)
            self._records.append(end)
            batch, self._pending = [*self._pending, end], []
        ended = replace(
            self._started(),
            status=status,
            ended_at=now,
            heartbeat_at=now,
            error=error_text,
            usage=usage,
            # Trace events: not the run's own start and end, nor the exchanges (no event id).
            events=sum(1 for r in self._records if r[1] == "end" and r[3] is not None),
        )

        request = self.learning_request if status in LEARNED_STATUSES else None

        def write_and_learn() -> None:
            with self._flush_lock:
                entries = self._entries(batch)
                new = not self._saved
                self._write(lambda: self.journal.store.save(ended, entries, new, request))
                self._saved = True
            if request is not None:
                self._learned.set()
                return
            everything = self._entries(self._records)
            traces: list[TaskExecutionTrace] = []
            self._write(lambda: traces.append(self.journal.learn(ended, everything)))
            if traces and self.learner is not None:
                self._learn_from(ended, everything, traces[0])
            self._learned.set()

        background.submit(write_and_learn)
        return list(self.problems)

    def wait(self, timeout: float | None = None) -> list[str]:
        """Wait until the finished run is written, in the task graph and learned from (or
        `timeout` seconds); returns every journaling problem."""
        self._learned.wait(timeout)
        return list(self.problems)

    def redact(self, secret: str) -> None:
        """From now on `secret` is stored as "[REDACTED]" in the run's value and error too (the
        trace events arrive redacted already)."""
        self.secrets.add(secret)

    # ------------------------------------------------------------------ ExchangeLog

    def exchange(self, kind: str, data: dict[str, Any], durable: bool = False) -> None:
        """Keep a model, tool or memory exchange (scrubbed) beside the trace events, as an entry
        without an event id (agentscript.learn.cassettes reads them back). A `durable` one is
        written before this returns, in a small transaction of its own (with the run's start
        the first time), so the run waits for one short write, not for the trace so far;
        any other goes with the next write."""
        with self._lock:
            if self._finished:
                return
            now = self._now()
            self._seq += 1
            record: _Record = (self._seq, "end", kind, None, None, 0, now, self._scrub(data))
            self._records.append(record)
            if not (durable and self._record is not None):
                self._pending.append(record)
                full = len(self._pending) >= FLUSH_AT
        if durable and self._record is not None:
            self._write_now(record)
        elif full and self._record is not None:
            self.flush()

    # ------------------------------------------------------------------ TraceSink

    def agent_started(self, call: TraceEvent) -> None:
        # The call's data gains result and trace when it returns: keep the start as it is now.
        self._add("start", call, {key: call.data[key] for key in ("agent", "function", "args")})

    def event(self, event: TraceEvent) -> None:
        data = event.data
        if event.kind == "agent":
            data = {key: value for key, value in data.items() if key != "trace"}
        self._add("end", event, data)

    def _add(self, phase: Phase, event: TraceEvent, data: dict[str, Any]) -> None:
        with self._lock:
            if self._finished:
                return
            now = self._now()
            self._seq += 1
            record = (self._seq, phase, event.kind, event.id, event.parent, event.depth, now, data)
            self._records.append(record)
            self._pending.append(record)
            full = len(self._pending) >= FLUSH_AT
        if full and self._record is not None:
            self.flush()

    def _now(self) -> float:
        """The time of a new entry, taken under `_lock`: entries get their times in the order
        of their seqs, never earlier than the entry before (a wall clock stepped back by NTP
        does not put an event before its run's start, or after its end: a span exported
        from the journal stays inside its run's)."""
        self._last_at = max(self.journal.clock(), self._last_at)
        return self._last_at

    # ------------------------------------------------------------------ writing

    def flush(self) -> None:
        """Write what is waiting (and the heartbeat, when one is due) now."""
        with self._flush_lock:
            if self._record is None or self._finished:
                return
            with self._lock:
                batch, self._pending = self._pending, []
            now = self.journal.clock()
            if not batch and now - self._last_write < self._heartbeat_seconds:
                return
            run = replace(self._record, heartbeat_at=now)
            entries = self._entries(batch)
            self._write(lambda: self.journal.store.save(run, entries, new=not self._saved))
            self._saved = True
            self._last_write = now

    def _write_now(self, record: _Record) -> None:
        """Write `record` at once: alone, or with the run's start while that is not written
        (a journal must never hold a run's exchanges without the start that says what ran)."""
        with self._flush_lock:
            with self._lock:
                if self._finished:  # the end is written already, or is being written
                    return
                batch = [r for r in self._pending if r[1] == "start" and r[2] == RUN_KIND]
                if batch:
                    self._pending = [r for r in self._pending if r not in batch]
            now = self.journal.clock()
            run = replace(self._started(), heartbeat_at=now)
            entries = self._entries([*batch, record])
            self._write(lambda: self.journal.store.save(run, entries, new=not self._saved))
            self._saved = True
            self._last_write = now

    def _learn_from(
        self, run: RunRecord, entries: list[JournalEntry], trace: TaskExecutionTrace
    ) -> None:
        assert self.learner is not None
        try:
            self.problems.extend(self.learner(self.journal, run, entries, trace))
        except Exception as problem:  # learning must never break the run it learns from
            self.problems.append(f"Learning from the run failed: {problem}")

    def _write(self, action: Callable[[], object]) -> None:
        if self._broken:
            return
        try:
            action()
        except Exception as problem:  # a journal must never break the run it records
            self._broken = True
            self.problems.append(f"The run journal stopped recording: {problem}")

    def _entries(self, records: list[_Record]) -> list[JournalEntry]:
        return [JournalEntry(self.run_id, *record) for record in records]

    def _started(self) -> RunRecord:
        assert self._record is not None, "start_run comes first"
        return self._record

    def _scrub(self, value: Any) -> Any:
        return self.secrets.scrub(value)


class _Background:
    """The journal's one thread in a process. Every FLUSH_SECONDS it flushes the sinks of
    running runs (their heartbeats too); it writes the end of finished runs and adds them to
    the task graph in the order they finished. None of it costs a run any time."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._sinks: set[JournalSink] = set()
        self._tasks: deque[Callable[[], None]] = deque()
        self._busy = False
        thread = threading.Thread(target=self._loop, name="agentscript journal", daemon=True)
        thread.start()

    def watch(self, sink: JournalSink) -> None:
        with self._condition:
            self._sinks.add(sink)

    def forget(self, sink: JournalSink) -> None:
        with self._condition:
            self._sinks.discard(sink)

    def submit(self, task: Callable[[], None]) -> None:
        with self._condition:
            self._tasks.append(task)
            self._condition.notify_all()

    def wait(self, timeout: float | None) -> bool:
        """Until every queued task is done; False if `timeout` came first."""
        with self._condition:
            return self._condition.wait_for(lambda: not self._tasks and not self._busy, timeout)

    def _loop(self) -> None:
        while True:
            with self._condition:
                if not self._tasks:
                    self._condition.wait(FLUSH_SECONDS)
                task = self._tasks.popleft() if self._tasks else None
                self._busy = task is not None
                sinks = list(self._sinks)
            if task is not None:
                try:
                    task()
                finally:
                    with self._condition:
                        self._busy = False
                        self._condition.notify_all()
            for sink in sinks:
                sink.flush()


_BACKGROUND: dict[int, _Background] = {}
_BACKGROUND_LOCK = threading.Lock()


def _background() -> _Background:
    """This process's journal thread (a forked child starts its own: threads do not survive
    a fork)."""
    pid = os.getpid()
    with _BACKGROUND_LOCK:
        worker = _BACKGROUND.get(pid)
        if worker is None:
            _BACKGROUND.clear()
            worker = _BACKGROUND[pid] = _Background()
    return worker


# Processes that journal runs this process started (an eval's worker processes write the
# journal of the cells they ran after the eval has its results): `wait_for_journal` waits for
# them too. Each is a function of the timeout answering whether it is done; by process, as a
# forked child inherits the list but not the processes.
_OTHER_WRITERS: dict[int, list[Callable[[float | None], bool]]] = {}


def wait_also_for(writer: Callable[[float | None], bool]) -> None:
    """Make `wait_for_journal` in this process also wait for `writer` (until it says done)."""
    with _BACKGROUND_LOCK:
        _OTHER_WRITERS.setdefault(os.getpid(), []).append(writer)


def wait_for_journal(timeout: float | None = EXIT_WAIT_SECONDS) -> bool:
    """Wait until every run finished in this process (or in its eval workers) is written and
    in the task graph. Runs at exit, so a command that ends right after its run still leaves
    all of it; a graph that was never built is built when `runs trace` or `runs graph` asks
    for it."""
    deadline = None if timeout is None else time.monotonic() + timeout
    worker = _BACKGROUND.get(os.getpid())
    done = worker.wait(timeout) if worker is not None else True
    with _BACKGROUND_LOCK:
        writers = list(_OTHER_WRITERS.get(os.getpid(), ()))
    for writer in writers:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if writer(left):
            with _BACKGROUND_LOCK:
                _OTHER_WRITERS[os.getpid()].remove(writer)
        else:
            done = False
    return done


atexit.register(wait_for_journal)


def _describe(error: BaseException | str) -> str:
    if isinstance(error, str):
        return error
    located = getattr(error, "located", None)
    if callable(located):
        return str(located())
    return str(error) or type(error).__name__


# ----------------------------------------------------------------------------- reading


@dataclass(frozen=True, slots=True)
class RunView:
    """A run as `runs list` shows it: the stored record with its effective status."""

    run: RunRecord
    status: RunStatus

    @property
    def duration(self) -> float | None:
        if self.run.ended_at is None:
            return None
        return self.run.ended_at - self.run.started_at

    def to_json(self) -> dict[str, Any]:
        run = self.run
        return {
            "id": run.run_id,
            "status": self.status,
            "started_at": _iso(run.started_at),
            "ended_at": _iso(run.ended_at) if run.ended_at is not None else None,
            "duration_seconds": self.duration,
            "program": run.program,
            "entry": run.entry,
            "events": run.events,
            "error": run.error,
            "usage": run.usage,
            "pid": run.pid,
            "host": run.host,
        }


@dataclass(frozen=True, slots=True)
class RunDetail:
    """A run with every journal entry, as `runs show` prints it."""

    view: RunView
    entries: list[JournalEntry]
    # Why the run taught nothing, when it failed for an environment or operator reason
    # (see failure_class).
    operator_note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.view.to_json(),
            "operator_note": self.operator_note,
            "entries": [
                {
                    "seq": entry.seq,
                    "phase": entry.phase,
                    "kind": entry.kind,
                    "id": entry.event_id,
                    "parent": entry.parent,
                    "depth": entry.depth,
                    "at": _iso(entry.at),
                    "data": entry.data,
                }
                for entry in self.entries
            ],
        }


def list_runs(journal: Journal, limit: int | None = 20) -> list[RunView]:
    """The newest runs first, each with its effective status."""
    now = journal.clock()
    return [RunView(run, effective_status(run, now)) for run in journal.store.runs(limit)]


def show_run(journal: Journal, reference: str) -> RunDetail:
    run = journal.resolve(reference)
    status = journal.status(run)
    cause = environment_cause(run.error) if status == "error" and run.error else None
    note = operator_note(cause) if cause is not None else None
    return RunDetail(RunView(run, status), journal.store.entries(run.run_id), note)


def replay_run(journal: Journal, reference: str) -> list[dict[str, Any]]:
    """The run's trace as the run returned it (agent calls nested, in finishing order)."""
    return rebuild_trace(journal.store.entries(journal.resolve(reference).run_id))


def run_trace(journal: Journal, reference: str) -> TaskExecutionTrace:
    """The run's execution trace: as stored when it ended, else built now from its entries
    (a run interrupted before it could finish, or one still going)."""
    from agentscript.learn.execution_trace import TaskExecutionTrace

    run = journal.resolve(reference)
    stored = journal.graph.episode_trace(run.run_id)
    if stored is not None:
        return TaskExecutionTrace.from_json(stored)
    return journal.learn(run, journal.store.entries(run.run_id))


def rebuild_trace(entries: list[JournalEntry], audit: bool = False) -> list[dict[str, Any]]:
    """Nest the finished events as the Tracer does: an agent call's events in its `trace`, in
    finishing order; what only the journal keeps (a call that raised, a call's risk; see
    trace.without_audit) is left out unless `audit` asks for it. Events of `parallel for` iterations sit one level deeper than their
    parent call's own events; the `parallel_for` event that follows carries them, so they are
    not placed again. What a killed run left open is closed here and marked `"unfinished":
    true`: an agent call with the events it had, and iterations whose `parallel_for` never
    came, so an interrupted run can still be read."""
    nested = _Nesting()
    for entry in entries:
        if entry.kind == RUN_KIND or entry.event_id is None:
            continue
        if entry.phase == "start":
            nested.open_calls[entry.event_id] = entry
            nested.depths[entry.event_id] = entry.depth
            continue
        if not audit and is_audit_only(entry.kind, entry.data):
            continue
        data = dict(entry.data) if audit else without_audit(entry.kind, entry.data)
        if entry.kind == "agent":
            nested.open_calls.pop(entry.event_id, None)
            data["trace"] = nested.children.pop(entry.event_id, [])
        if entry.kind == "parallel_for":
            nested.branches.pop((entry.parent, entry.depth + 1), None)
        nested.place(entry.parent, entry.depth, {"kind": entry.kind, "data": data})
    nested.close_unfinished()
    return nested.children.get(None, [])


@dataclass(slots=True)
class _Nesting:
    children: dict[int | None, list[dict[str, Any]]] = field(default_factory=dict)
    depths: dict[int, int] = field(default_factory=dict)
    open_calls: dict[int, JournalEntry] = field(default_factory=dict)
    # Events of parallel iterations waiting for their `parallel_for`, by (parent, depth).
    branches: dict[tuple[int | None, int], list[dict[str, Any]]] = field(default_factory=dict)

    def place(self, parent: int | None, depth: int, event: dict[str, Any]) -> None:
        own_depth = self.depths.get(parent, depth - 1) + 1 if parent is not None else 0
        if depth == own_depth:
            self.children.setdefault(parent, []).append(event)
        else:
            self.branches.setdefault((parent, depth), []).append(event)

    def close_unfinished(self) -> None:
        """Deepest first, so what an open call or iteration holds is in place before it closes
        (an iteration's stand-in `parallel_for` is one level above its events)."""
        while self.open_calls or self.branches:
            call = max(self.open_calls.values(), key=lambda c: (c.depth, c.seq), default=None)
            branch = max(self.branches, key=lambda key: key[1], default=None)
            if branch is not None and (call is None or branch[1] - 1 >= call.depth):
                parent, depth = branch
                iteration = {"index": None, "ok": False, "trace": self.branches.pop(branch)}
                data = {"unfinished": True, "iterations": [iteration]}
                self.place(parent, depth - 1, {"kind": "parallel_for", "data": data})
                continue
            assert call is not None and call.event_id is not None
            del self.open_calls[call.event_id]
            trace = self.children.pop(call.event_id, [])
            data = {**call.data, "trace": trace, "unfinished": True}
            self.place(call.parent, call.depth, {"kind": "agent", "data": data})


def format_runs(views: list[RunView]) -> str:
    """The `runs list` table: id, status, start (UTC), duration, events, program and entry."""
    if not views:
        return "(no runs)"
    rows = [("ID", "STATUS", "STARTED (UTC)", "TIME", "EVENTS", "PROGRAM")]
    for view in views:
        run = view.run
        duration = f"{view.duration:.2f}s" if view.duration is not None else "-"
        program = Path(run.program).name if run.program else "-"
        if run.entry:
            program += f" {run.entry}"
        rows.append(
            (run.run_id, view.status, _iso(run.started_at)[:19], duration, str(run.events), program)
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
        + "  "
        + row[-1]
        for row in rows
    ]
    return "\n".join(line.rstrip() for line in lines)


def format_run(detail: RunDetail) -> str:
    """`runs show --pretty`: the run's header, then its trace one line per event."""
    view = detail.view
    run = view.run
    lines = [
        f"run {run.run_id}  {view.status}",
        f"program   {run.program or '-'}{' ' + run.entry if run.entry else ''}",
        f"started   {_iso(run.started_at)}  (pid {run.pid} on {run.host})",
    ]
    if run.ended_at is not None:
        lines.append(f"ended     {_iso(run.ended_at)}  ({view.duration:.3f}s)")
    lines.append(f"events    {run.events}")
    if run.error:
        lines.append(f"error     {run.error}")
    if detail.operator_note:
        lines.append(f"learning  {detail.operator_note}")
    if run.usage:
        lines.append(f"usage     {dumps(run.usage)}")
    lines += ["", format_trace(rebuild_trace(detail.entries, audit=True))]
    return "\n".join(lines)


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
