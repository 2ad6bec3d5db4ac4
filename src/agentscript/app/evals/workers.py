"""An eval's cells in worker processes (`workers`), for when one process's CPU is the limit.

A Python process runs Python on one core at a time, and a cell costs a few milliseconds of CPU
(its run, its HTTP exchange, its journal record): one process keeps only about (model latency /
CPU per cell) cells busy, however high `concurrency` is. Workers are forked from the eval's
process once everything is loaded, so they start in milliseconds with the program, the cases,
the metric and the configurations in memory; a cell goes out as two indices and comes back as
its result row.

The parent stays the one that decides. It hands out a cell only while the eval's budget remains
and nothing asked it to stop, keeps at most `concurrency` cells in flight over all workers
(each worker runs its share on threads), writes every result row (the --out file has one
writer) and reports progress. The budget is counted in shared memory (EvalMeter `shared`), so
every model call of every worker is checked against it, as every thread's is. Each worker
journals its runs into the same journal (SQLite in WAL mode, one connection per process) and
finishes writing it before it exits; the eval returns once it has every row, and
`wait_for_journal` (run at exit too) waits for the workers as for the journal's own thread. Workers ignore Ctrl-C: the parent stops handing out
cells, keeps the rows of the cells in flight and raises; a worker whose parent died takes no
new cell and exits.
"""

from __future__ import annotations

import atexit
import gc
import multiprocessing
import os
import queue
import signal
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from multiprocessing.context import ForkContext
from typing import TYPE_CHECKING, Any

from agentscript.runtime.errors import AgentScriptError, LoadError

if TYPE_CHECKING:
    from agentscript.app.evals.results import CellResult

# A cell: (case index, configuration index) in the eval's lists.
Cell = tuple[int, int]
# How often an idle worker thread looks whether its parent is still there.
PARENT_CHECK_SECONDS = 0.5
# How often the parent, waiting for a result, looks whether every worker is still there.
WORKER_CHECK_SECONDS = 0.5
# One process keeps about this many cells of a 50 ms model busy before its CPU is the limit
# (benchmarks/evals.py): `auto` starts a worker per this many concurrent cells.
CELLS_PER_WORKER = 8


class EvalWorkerError(AgentScriptError):
    """A worker failed outside any cell's run (a bug, or the process died). The rows kept so
    far are in --out: the same command resumes."""


def worker_context() -> ForkContext:
    """Workers are forked: they start at once with the eval in memory, and nothing of it
    (a provider object, a metric function) has to be picklable."""
    if "fork" not in multiprocessing.get_all_start_methods():
        raise LoadError("Eval workers need os.fork, which this platform lacks: use --workers 1")
    return multiprocessing.get_context("fork")


def worker_count(workers: int | str, concurrency: int, cells: int) -> int:
    """How many processes run `cells` at `concurrency`: `workers`, or for "auto" one per
    CELLS_PER_WORKER concurrent cells up to the machine's cores, and never more processes
    than cells in flight. 1 means no worker: the cells run in the eval's own process."""
    if workers == "auto":
        if "fork" not in multiprocessing.get_all_start_methods():
            return 1
        wanted = min(os.cpu_count() or 1, concurrency // CELLS_PER_WORKER)
    elif isinstance(workers, int) and workers >= 1:
        wanted = workers
    else:
        raise LoadError(f"Workers must be a positive number or auto, got {workers!r}")
    return max(1, min(wanted, concurrency, cells))


class CellWorkers:
    """`processes` forked workers running cells with `run_cell` on `threads` threads each.
    `close_worker` runs in each worker when its cells are done (its providers closed)."""

    def __init__(
        self,
        run_cell: Callable[[int, int], CellResult | None],
        close_worker: Callable[[], None],
        processes: int,
        threads: int,
    ) -> None:
        from agentscript.learn.journal import wait_for_journal

        context = worker_context()
        # A fork copies the locks of every thread as they are at that moment: the journal's
        # thread must not be inside SQLite (a child would wait forever for its mutex).
        wait_for_journal()
        self._tasks: multiprocessing.Queue[Cell | None] = context.Queue()
        self._results: multiprocessing.Queue[_Outcome] = context.Queue()
        self._threads = threads
        parent = os.getpid()
        self._processes = [
            context.Process(
                target=_serve,
                args=(run_cell, close_worker, self._tasks, self._results, threads, parent),
                name=f"agentscript eval worker {number}",
                daemon=True,
            )
            for number in range(1, processes + 1)
        ]
        # What exists now is the workers' to read, not to collect: frozen, the collector of
        # each worker leaves it alone instead of touching (and so copying) every page of it.
        gc.freeze()
        try:
            for process in self._processes:
                process.start()
        finally:
            gc.unfreeze()

    def run(
        self,
        cells: list[Cell],
        concurrency: int,
        may_start: Callable[[], bool],
        keep: Callable[[CellResult], None],
    ) -> None:
        """Run `cells`, at most `concurrency` at once, each handed out only while `may_start()`
        says so; `keep` gets each finished row (None rows: stopped by the budget, not kept).
        On an interruption or a failure nothing more starts, the cells in flight are waited
        for and kept, and the exception is raised. The workers are stopped in every case."""
        waiting = deque(cells)
        in_flight = 0
        try:
            while True:
                while waiting and in_flight < concurrency and may_start():
                    self._tasks.put(waiting.popleft())
                    in_flight += 1
                if in_flight == 0:
                    return
                row = self._next_row()
                in_flight -= 1
                if row is not None:
                    keep(row)
        except BaseException:
            self._drain(in_flight, keep)
            raise
        finally:
            self.close()

    def _drain(self, in_flight: int, keep: Callable[[CellResult], None]) -> None:
        """Wait for the cells in flight and keep their rows; a second Ctrl-C or a dead worker
        gives them up."""
        try:
            while in_flight > 0:
                row = self._next_row()
                in_flight -= 1
                if row is not None:
                    keep(row)
        except (KeyboardInterrupt, EvalWorkerError):
            return

    def _next_row(self) -> CellResult | None:
        while True:
            try:
                outcome = self._results.get(timeout=WORKER_CHECK_SECONDS)
            except queue.Empty:
                dead = [p for p in self._processes if p.exitcode is not None]
                if dead:
                    raise EvalWorkerError(
                        f"{dead[0].name} stopped (exit code {dead[0].exitcode}) with cells in "
                        "flight; run the eval again with the same --out to resume"
                    ) from None
                continue
            row, failure = outcome
            if failure is not None:
                raise EvalWorkerError(failure)
            return row

    def close(self) -> None:
        """Tell every worker thread to stop. The eval has its rows now; each worker still
        finishes writing its journal, which `wait_for_journal` (and the process's exit)
        waits for, as for the journal's own thread."""
        from agentscript.learn.journal import wait_also_for

        for _ in range(len(self._processes) * self._threads):
            self._tasks.put(None)
        self._tasks.close()
        self._results.close()
        wait_also_for(self._finished)
        # Before multiprocessing's own exit handler (registered earlier, so run later), which
        # would terminate the workers mid-write.
        atexit.register(self._finish_at_exit)

    def _finished(self, timeout: float | None) -> bool:
        """Whether every worker has exited, waiting up to `timeout` seconds in all."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for process in self._processes:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            process.join(left)
        finished = all(process.exitcode is not None for process in self._processes)
        if finished:
            atexit.unregister(self._finish_at_exit)
        return finished

    def _finish_at_exit(self) -> None:
        from agentscript.learn.journal import EXIT_WAIT_SECONDS

        if not self._finished(EXIT_WAIT_SECONDS):
            for process in self._processes:
                if process.exitcode is None:
                    process.terminate()


# A finished cell as a worker sends it back: the row (None: stopped by the budget), or why
# the worker failed on it.
_Outcome = tuple["CellResult | None", str | None]


def _serve(
    run_cell: Callable[[int, int], CellResult | None],
    close_worker: Callable[[], None],
    tasks: multiprocessing.Queue[Cell | None],
    results: multiprocessing.Queue[_Outcome],
    threads: int,
    parent: int,
) -> None:
    """A worker's life: take cells on `threads` threads until told to stop (or the parent is
    gone), then close its providers and wait for its journal."""
    from agentscript.learn.journal import wait_for_journal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C stops
    takers = [
        threading.Thread(target=_take_cells, args=(run_cell, tasks, results, parent), daemon=True)
        for _ in range(threads)
    ]
    for taker in takers:
        taker.start()
    for taker in takers:
        taker.join()
    close_worker()
    wait_for_journal()


def _take_cells(
    run_cell: Callable[[int, int], CellResult | None],
    tasks: multiprocessing.Queue[Cell | None],
    results: multiprocessing.Queue[_Outcome],
    parent: int,
) -> None:
    while True:
        try:
            task = tasks.get(timeout=PARENT_CHECK_SECONDS)
        except queue.Empty:
            if os.getppid() != parent:
                return
            continue
        if task is None:
            return
        outcome: Any
        try:
            outcome = (run_cell(*task), None)
        except BaseException:
            outcome = (None, f"An eval worker failed on a cell:\n{traceback.format_exc()}")
        results.put(outcome)
