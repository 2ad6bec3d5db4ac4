"""What the queue's tests share: a fresh queue (a SQLite file, or a database of its own in
the session's PostgreSQL), worker processes on it, and `submit` through the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from agentscript.cli.main import main
from openai_wire import OpenAiWireServer


def queue_url(kind: str, tmp_path: Path) -> str:
    """A fresh queue of `kind` ("sqlite" or "postgres")."""
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'queue.db'}"
    import pg_cluster
    from system_parts import require

    require("postgres")
    cluster = pg_cluster.shared_cluster()
    name = f"queue_{uuid.uuid4().hex[:12]}"
    with cluster.connect() as connection:
        connection.autocommit = True
        connection.execute(f"CREATE DATABASE {name}")
    return f"postgresql://{pg_cluster.SUPERUSER}:{cluster.password}@127.0.0.1:{cluster.port}/{name}"


class Workers:
    """Worker processes on one queue, stopped (SIGTERM, then SIGKILL) at the end. Their
    standard error is kept in `folder` (what a worker printed, for a test to read)."""

    def __init__(self, url: str, server: OpenAiWireServer, folder: Path | None = None) -> None:
        self.url = url
        self.environ = {**os.environ, **server.environ()}
        self.folder = folder
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self, dead_after: float = 2.0, *options: str) -> subprocess.Popen[bytes]:
        command = [
            sys.executable, "-m", "agentscript", "worker", "--queue", self.url,
            "--approve", "auto", "--concurrency", "2", "--dead-after", str(dead_after), *options,
        ]  # fmt: skip
        errors: Any = subprocess.DEVNULL
        if self.folder is not None:
            errors = (self.folder / f"worker{len(self.processes)}.err").open("wb")
        process = subprocess.Popen(
            command, env=self.environ, stdout=subprocess.DEVNULL, stderr=errors
        )
        self.processes.append(process)
        return process

    def wait_until_serving(self) -> None:
        """Wait until every started worker beats (it took its place in the queue), so each
        can take runs from the first one submitted."""
        from agentscript.app.queue.database import QueueDatabase
        from agentscript.app.queue.heartbeats import Heartbeats

        database = QueueDatabase(self.url)
        try:
            Heartbeats(database)  # the table, should no worker have made it yet
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                rows = database.execute("SELECT count(*) FROM agentscript_workers")
                if int(rows[0][0]) >= len(self.processes):
                    return
                time.sleep(0.05)
        finally:
            database.close()
        said = f": {self.errors()}" if self.folder is not None else ""
        raise AssertionError(f"{len(self.processes)} workers never all served{said}")

    def errors(self) -> str:
        """What every worker printed to its standard error."""
        assert self.folder is not None
        return "".join(path.read_text() for path in sorted(self.folder.glob("worker*.err")))

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def submit(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = main(["submit", *args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def queued_runs(url: str) -> list[Any]:
    """The queue's newest runs as `runs list --queue` reads them."""
    from agentscript.app.queue.engine import QueueClient

    client = QueueClient(url)
    try:
        return client.runs()
    finally:
        client.close()
