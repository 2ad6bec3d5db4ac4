"""Runs on a durable queue shared by many workers, on DBOS Transact (its state in PostgreSQL,
or SQLite on one machine).

What DBOS owns: the queue, which worker takes a job, concurrency per worker and per queue, the
rate limit, and replaying a job after a crash (a job is a DBOS workflow whose id `submit`
chooses; each attempt's run id is made from it, jobs.attempt_run_id). What the run journal
owns: what every run did, so a replayed job resumes its run from the journal (attempts.py)
instead of doing it again.

DBOS recovers the jobs of a worker that restarts with the same executor id. A worker that
never comes back is noticed by the others: every worker writes a heartbeat to the queue's
database (heartbeats.py); a live worker that sees another's heartbeat older than
`DEAD_AFTER_SECONDS` hands that worker's pending jobs back to the queue.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentscript.app.errors import AppError
from agentscript.app.queue.attempts import WorkerPolicy, carry_out
from agentscript.app.queue.database import QueueDatabase
from agentscript.app.queue.heartbeats import Heartbeats
from agentscript.app.queue.jobs import JobOutcome, RunJob, new_job_id
from agentscript.app.queue.limits import LimitedModel, OnWait, SharedLimits

if TYPE_CHECKING:
    from agentscript.app.queue.limits import Limit
    from agentscript.runtime.ports import LlmProvider

WORKFLOW = "agentscript.run"
QUEUE = "agentscript-runs"
APPLICATION = "agentscript"
# A worker whose heartbeat is older than this is taken for dead.
DEAD_AFTER_SECONDS = 10.0
HEARTBEAT_SECONDS = 1.0
# How often workers look for queued jobs.
POLL_SECONDS = 0.05
# How many jobs a worker takes beyond those it runs, by default as many as it runs (its
# --concurrency) and at least PREFETCH_AT_LEAST: a slot that frees starts the next job at once
# instead of at the next poll. One is not enough: a poll falls once in each short run, and a
# poll of PostgreSQL takes 5-15 ms, so the one job it takes comes after the slot freed.
PREFETCH_SAME = -1
PREFETCH_AT_LEAST = 2


# DBOS's workflow states as a queue's user reads them.
_STATES = {
    "ENQUEUED": "queued",
    "PENDING": "running",
    "SUCCESS": "done",
    "ERROR": "failed",
    "CANCELLED": "cancelled",
}


def check_url(url: str) -> str:
    """`postgresql://…` or `sqlite:///path`, or a clear error naming the forms."""
    if url.startswith(("postgresql://", "postgres://", "sqlite:///")):
        return url
    raise AppError(
        f"--queue {url!r}: give postgresql://USER@HOST/DB (many machines) or "
        "sqlite:///PATH (worker processes on one machine)"
    )


def new_executor_id() -> str:
    """A worker's name in the queue: its host, its pid and a random part."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True, slots=True)
class QueuedRun:
    workflow_id: str
    status: str
    worker: str | None
    label: str
    program: str
    created_at: float | None


class Worker:
    """One worker process: takes jobs from the queue, `concurrency` at a time, until stopped.

    `limits` (requests and tokens per period, calls in flight per model, runs at once over
    all workers) become the ones every worker applies (limits.py), None keeps those stored in
    the queue; `on_wait` hears of each model call that starts to wait for one.

    `prefetch` jobs are taken from the queue beyond the `concurrency` that run (by default
    as many, at least PREFETCH_AT_LEAST): each waits in this worker for a slot, so a slot
    that frees goes on at once instead of waiting for the next poll of the queue. A
    prefetched job is the worker's as a running one is (recovered alike if the worker dies).
    None are prefetched under a limit on the runs at once over all workers, which counts
    every job a worker took."""

    def __init__(
        self,
        url: str,
        concurrency: int = 4,
        approve: str | None = None,
        executor_id: str | None = None,
        rerun_unfinished: bool = False,
        dead_after: float = DEAD_AFTER_SECONDS,
        limits: list[Limit] | None = None,
        on_wait: OnWait | None = None,
        prefetch: int = PREFETCH_SAME,
    ) -> None:
        self.url = check_url(url)
        self.concurrency = concurrency
        self.prefetch = (
            max(concurrency, PREFETCH_AT_LEAST) if prefetch == PREFETCH_SAME else prefetch
        )
        self.limits = limits
        self.on_wait = on_wait
        self.approve = approve
        self.rerun_unfinished = rerun_unfinished
        self.dead_after = dead_after
        self.executor_id = executor_id or new_executor_id()
        self._stopped = threading.Event()

    def serve(self, until: Callable[[], bool] | None = None) -> None:
        """Launch DBOS, work, and keep the heartbeat until `stop()` (or `until()` is true)."""
        from dbos import DBOS

        database = QueueDatabase(self.url)
        try:
            heartbeats = Heartbeats(database)
            limits = SharedLimits(database, self.executor_id)
            if self.limits is not None:
                limits.publish(self.limits)
            runs_at_once = limits.runs_at_once()
            if runs_at_once is not None and runs_at_once < self.concurrency:
                raise AppError(
                    f"the queue runs {runs_at_once} at once over all workers (--queue-concurrency),"
                    f" fewer than this worker's --concurrency {self.concurrency}: give a "
                    "--concurrency at most that large"
                )
        except BaseException:
            database.close()
            raise

        def limited(router: LlmProvider) -> LlmProvider:
            return LimitedModel(router, limits, self.on_wait)

        policy = WorkerPolicy(self.approve, self.rerun_unfinished, limited)
        _launch(self.url, self.executor_id, policy, self.concurrency)
        prefetch = self.prefetch if runs_at_once is None else 0
        DBOS.register_queue(
            QUEUE,
            worker_concurrency=self.concurrency + prefetch,
            global_concurrency=runs_at_once,
            polling_interval_sec=POLL_SECONDS,
        )
        try:
            while not self._stopped.is_set() and not (until is not None and until()):
                heartbeats.beat(self.executor_id)
                for dead in heartbeats.dead(self.dead_after, self.executor_id):
                    # DBOS recovers a worker's jobs when it restarts with the same id; one
                    # that never comes back is recovered here, by a live one.
                    DBOS._recover_pending_workflows([dead])
                    limits.forget_worker(dead)
                    heartbeats.forget(dead)
                self._stopped.wait(HEARTBEAT_SECONDS)
        finally:
            heartbeats.forget(self.executor_id)
            DBOS.destroy(destroy_registry=True)
            database.close()

    def stop(self) -> None:
        self._stopped.set()


def _launch(
    url: str,
    executor_id: str,
    policy: WorkerPolicy,
    concurrency: int,
) -> None:
    """Start DBOS with the job workflow: a job taken from the queue waits for one of
    `concurrency` slots, then is carried out from the journal under its own id."""
    from dbos import DBOS

    DBOS(
        config={
            "name": APPLICATION,
            "system_database_url": url,
            "executor_id": executor_id,
            "log_level": "WARNING",
            "notification_listener_polling_interval_sec": POLL_SECONDS,
        }
    )

    slots = threading.BoundedSemaphore(concurrency)

    @DBOS.workflow(name=WORKFLOW)
    def run_job(job: dict[str, Any]) -> dict[str, Any]:
        job_id = DBOS.workflow_id
        assert job_id is not None  # inside the workflow
        with slots:
            return carry_out(RunJob.from_json(job), job_id, policy).to_json()

    DBOS.launch()


class QueueClient:
    """Submit jobs to the queue and read them back, without being a worker."""

    def __init__(self, url: str) -> None:
        from dbos import DBOS, DBOSClient

        self.url = check_url(url)
        # The queue's tables, made (or brought up to date) by whoever comes first: a run may be
        # submitted before any worker started.
        DBOS.migrate(self.url)
        self._client = DBOSClient(system_database_url=self.url)

    def submit(self, jobs: Sequence[RunJob], stop: Callable[[], bool] | None = None) -> list[str]:
        """Queue `jobs` (those before `stop()` said so); their ids, which are also the
        journal's run ids of their first attempts (jobs.new_job_id)."""
        ids = []
        for job in jobs:
            if stop is not None and stop():
                break
            ids.append(self._enqueue(job))
        return ids

    def _enqueue(self, job: RunJob) -> str:
        from dbos import error

        while True:
            options: Any = {
                "queue_name": QUEUE,
                "workflow_name": WORKFLOW,
                "workflow_id": new_job_id(time.time()),
                "workflow_id_reuse_policy": "reject",
            }
            try:
                return str(self._client.enqueue(options, job.to_json()).get_workflow_id())
            except error.DBOSWorkflowIDInUseError:  # another job drew the same id: draw again
                continue

    def wait(self, workflow_id: str, stop: Callable[[], bool] | None = None) -> JobOutcome | None:
        """The job's outcome once it ends (looked at every POLL_SECONDS), or None when
        `stop()` said so first: the job is left as it is, queued or running."""
        while True:
            ended = self._ended(workflow_id)
            if ended is not None:
                return ended
            if stop is not None and stop():
                return None
            time.sleep(POLL_SECONDS)

    def outcome(self, workflow_id: str, give_up: Callable[[], bool]) -> JobOutcome | None:
        """The job's outcome once it ends (looked at every POLL_SECONDS), or None when
        `give_up()` said so while the job was still queued: it is cancelled then, so it never
        runs. Ctrl-C while the job is queued cancels it too; a job a worker took is left to
        finish (its run is journaled, and `runs list --queue` shows it)."""
        try:
            return self.wait(
                workflow_id, stop=lambda: give_up() and self._cancel_if_queued(workflow_id)
            )
        except KeyboardInterrupt:
            self._cancel_if_queued(workflow_id)
            raise

    def _ended(self, workflow_id: str) -> JobOutcome | None:
        """The job's outcome once it ended, None while it is queued or running."""
        status = self._client.retrieve_workflow(workflow_id).get_status()
        state = str(status.status)
        if state in ("ENQUEUED", "PENDING"):
            return None
        if state == "SUCCESS":
            return JobOutcome(**dict(status.output or {}))
        problem = status.error or _STATES.get(state, state.lower())
        return JobOutcome(False, error=f"the queued run ended {problem}")

    def _cancel_if_queued(self, workflow_id: str) -> bool:
        """Cancel the job if no worker took it yet; whether it was cancelled."""
        if str(self._client.retrieve_workflow(workflow_id).get_status().status) == "ENQUEUED":
            self._client.cancel_workflow(workflow_id)
            return True
        return False

    def runs(self, limit: int = 100) -> list[QueuedRun]:
        """The newest runs of the queue: queued, running, done or failed (a run whose program
        failed is failed, though its job ended normally), with the worker that took each."""
        found = []
        for status in self._client.list_workflows(name=WORKFLOW, limit=limit, sort_desc=True):
            job = status.input["args"][0] if status.input and status.input.get("args") else {}
            state = _STATES.get(str(status.status), str(status.status).lower())
            if state == "done" and isinstance(status.output, dict) and not status.output["ok"]:
                state = "failed"
            found.append(
                QueuedRun(
                    status.workflow_id,
                    state,
                    status.executor_id,
                    str(job.get("label", "")),
                    str(job.get("program", "")),
                    status.created_at / 1000 if status.created_at else None,
                )
            )
        return found

    def close(self) -> None:
        self._client.destroy()
