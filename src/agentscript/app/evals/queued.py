"""An eval's runs on a durable queue (`eval --queue URL`): each cell's run (and its judge's)
is a queued run that any worker takes, while this process keeps what a local eval keeps: which
cells run, the budget, the metric, the rows, the report. Only the run moves; the cell is scored
here with the one metric implementation, so a queued eval's report is a local one's.

A run goes out pinned (agentscript.app.queue.jobs: the program's files as they read when the
eval started) with the cell's `--model` and `use one of` picks. At most `concurrency` cells are
on the queue at once, so a stopped eval (Ctrl-C, a spent budget) leaves no more than those:
the ones still queued are cancelled and never run, the ones a worker took finish and keep
their rows. The workers' own environment reaches the models, and the workers journal the
runs into the workspace's journal.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from agentscript.app.queue.engine import QueueClient
from agentscript.app.queue.jobs import JobOutcome, RunJob, pin
from agentscript.lang import ast
from agentscript.runtime.errors import LoadError


class QueuedRuns:
    """The eval's connection to the queue: pins each program once, then sends its runs."""

    def __init__(self, url: str, workspace: str, max_seconds: float | None) -> None:
        self._client = QueueClient(url)
        self._workspace = workspace
        self._max_seconds = max_seconds
        self._pinned: dict[str, RunJob] = {}
        self._lock = threading.Lock()

    def run(
        self,
        program: ast.Program,
        input_value: Any,
        label: str,
        options: dict[str, Any],
        give_up: Callable[[], bool],
    ) -> JobOutcome | None:
        """Queue one run of `program` and wait for its outcome; None when `give_up()` said so
        before a worker took it (it is cancelled). `options` are the job's models, variants,
        agent and function."""
        job = replace(self._template(program), input=input_value, label=label, **options)
        (workflow_id,) = self._client.submit([job])
        return self._client.outcome(workflow_id, give_up)

    def _template(self, program: ast.Program) -> RunJob:
        if program.source_path is None:
            raise LoadError("eval --queue needs the program (and a judge) as a file to queue")
        with self._lock:
            job = self._pinned.get(program.source_path)
            if job is None:
                job = pin(
                    program.source_path,
                    None,
                    workspace=self._workspace,
                    max_seconds=self._max_seconds,
                )
                self._pinned[program.source_path] = job
            return job

    def close(self) -> None:
        self._client.close()
