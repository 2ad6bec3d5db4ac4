"""How runs on a durable queue scale with worker processes (docs/scale-out.md).

`--runs` (1,000) runs of a one-generate program are queued for 1, 2 and 4 `agentscript worker`
processes (each `--concurrency` 8) on SQLite and on PostgreSQL (a throwaway cluster, as the
tests start one), against a local OpenAI-wire server in its own process answering after
`--latency-ms` (50 ms). For each setting it prints:

- runs/s from the first submit to the last run done (after warm-up runs, two a slot, since
  the run alone is measured warm too), and the ideal: workers × concurrency
  runs every latency (what the model's latency allows when nothing else costs time);
- CPU a run: the workers' CPU (every thread) and the model server's, per run;
- queueing overhead a run: how long a worker's slot is taken by a run (workers × concurrency
  / runs per second) beyond what the same run takes alone through `agentscript.run` (wall),
  and the workers' CPU a run beyond the run's own: the queue's transactions, the journal
  look-up, a slot waiting for a run, and (at concurrency 8) the runs of one worker waiting for
  each other's CPU (one process runs Python on one core at a time);
- then, per queue, one worker at concurrency 1 (`--alone-runs`, 200): the same overhead with
  no run waiting for another's CPU, the time the queue itself adds to a run;
- the machine: its cores and its load before and after, and its CPU ceiling (cores / all the
  CPU a run costs), so a reader sees whether the ideal was reachable where it ran.

Never asserts on timings. The machine may be shared: run it twice.

    .venv/bin/python benchmarks/scale_out.py [--runs 1000] [--latency-ms 50]
        [--concurrency 8] [--workers 1,2,4] [--backends sqlite,postgres] [--prefetch N]
        [--alone-runs 200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import agentscript
import private_memory  # noqa: F401  (the user's memory stays out of reach)
from agentscript.app.queue.database import QueueDatabase
from agentscript.app.queue.engine import QueueClient
from agentscript.app.queue.jobs import pin
from evals import SERVER, process_cpu_seconds

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = """
import llm Model from "openai://bench"

main agent Triage {
    model Model
    role "support triage"
    description "Labels tickets."
    main func(input { ticket: string }) {
        use input.ticket as "ticket"
        generate({ input: "Label the ticket." }) -> { label: string }
    }
}
"""


@dataclass(frozen=True)
class Setting:
    backend: str
    workers: int
    runs_per_second: float
    ideal: float
    worker_cpu: float
    server_cpu: float
    done: int
    concurrency: int
    runs: int


def sqlite_queue(folder: Path, name: str) -> str:
    return f"sqlite:///{folder / name}.db"


def postgres_queue(cluster: Any, name: str) -> str:
    with cluster.connect() as connection:
        connection.autocommit = True
        connection.execute(f"CREATE DATABASE {name}")
    return f"postgresql://postgres:{cluster.password}@127.0.0.1:{cluster.port}/{name}"


def start_postgres() -> Any:
    """A throwaway cluster (the tests' helper), or None when PostgreSQL is not installed."""
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    import pg_cluster

    reason = pg_cluster.unavailable_reason()
    if reason is not None:
        print(f"PostgreSQL skipped: {reason}", file=sys.stderr)
        return None
    return pg_cluster.start_cluster(durable=True)


def bare_run(program: Path, environ: dict[str, str], count: int = 40) -> tuple[float, float]:
    """The run alone, through `agentscript.run` (journaled, as a worker runs it): its median
    wall seconds and its CPU seconds (the journal's writing included)."""
    from agentscript.learn.journal import wait_for_journal

    loaded = agentscript.load(program)
    for number in range(10):  # warm: imports and first connections are not a run's cost
        agentscript.run(
            loaded, {"ticket": f"warm {number}"}, agentscript.RunConfig(environ=environ)
        )
    wait_for_journal()
    durations = []
    cpu_started = time.process_time()
    for number in range(count):
        started = time.perf_counter()
        agentscript.run(
            loaded, {"ticket": f"ticket {number}"}, agentscript.RunConfig(environ=environ)
        )
        durations.append(time.perf_counter() - started)
    wait_for_journal()
    return statistics.median(durations), (time.process_time() - cpu_started) / count


def measure(
    backend: str,
    url: str,
    workers: int,
    options: argparse.Namespace,
    program: Path,
    environ: dict[str, str],
    server_pid: int,
) -> Setting:
    command = [
        sys.executable, "-m", "agentscript", "worker", "--queue", url,
        "--concurrency", str(options.concurrency),
    ]  # fmt: skip
    if options.prefetch is not None:
        command += ["--prefetch", str(options.prefetch)]
    processes = [
        subprocess.Popen(
            command,
            env={**os.environ, **environ},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(workers)
    ]
    database = QueueDatabase(url)
    status_table = "workflow_status" if database.sqlite else "dbos.workflow_status"
    try:
        wait_until_serving(database, workers)
        template = pin(program, None, workspace=str(program.parent))
        jobs = [
            replace(template, input={"ticket": f"ticket {n}"}, label=f"t{n}")
            for n in range(options.runs)
        ]
        client = QueueClient(url)
        # Warm the workers first (a worker's first run imports the runtime and opens its
        # connections, once in its life), as the run alone is measured warm.
        warm = workers * options.concurrency * 2
        client.submit([replace(job, label=f"warm{n}") for n, job in enumerate(jobs[:warm])])
        wait_until_ended(database, status_table, warm)
        worker_cpu = sum(process_cpu_seconds(p.pid) for p in processes)
        server_cpu = process_cpu_seconds(server_pid)
        started = time.perf_counter()
        client.submit(jobs)
        wait_until_ended(database, status_table, warm + options.runs)
        seconds = time.perf_counter() - started
        worker_cpu = sum(process_cpu_seconds(p.pid) for p in processes) - worker_cpu
        server_cpu = process_cpu_seconds(server_pid) - server_cpu
        done = sum(1 for run in client.runs(limit=options.runs) if run.status == "done")
        client.close()
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=60)
        database.close()
    return Setting(
        backend,
        workers,
        options.runs / seconds,
        workers * options.concurrency / (options.latency_ms / 1000),
        worker_cpu / options.runs,
        server_cpu / options.runs,
        done,
        options.concurrency,
        options.runs,
    )


def wait_until_ended(database: QueueDatabase, status_table: str, count: int) -> None:
    while True:
        rows = database.execute(
            f"SELECT count(*) FROM {status_table} WHERE status IN ('SUCCESS', 'ERROR')"
        )
        if int(rows[0][0]) >= count:
            return
        time.sleep(0.02)


def wait_until_serving(database: QueueDatabase, workers: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            rows = database.execute("SELECT count(*) FROM agentscript_workers")
        except Exception:  # the table is made by the first worker to start
            rows = [(0,)]
        if int(rows[0][0]) >= workers:
            return
        time.sleep(0.05)
    raise SystemExit(f"{workers} workers did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--prefetch", type=int, help="the workers' --prefetch (their default)")
    parser.add_argument(
        "--alone-runs", type=int, default=200, help="runs for one worker at --concurrency 1"
    )
    parser.add_argument("--backends", default="sqlite,postgres")
    options = parser.parse_args()
    cores = os.cpu_count() or 1
    load_before = os.getloadavg()[0]
    server = subprocess.Popen(
        [sys.executable, str(SERVER), "--latency-ms", str(options.latency_ms)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None and server.stdin is not None
    environ = {"OPENAI_BASE_URL": server.stdout.readline().strip(), "OPENAI_API_KEY": "sk-local"}
    settings: list[Setting] = []
    cluster = None
    try:
        with tempfile.TemporaryDirectory() as temporary:
            folder = Path(temporary)
            program = folder / "triage.as"
            program.write_text(PROGRAM, encoding="utf-8")
            bare = bare_run(program, environ)
            for backend in options.backends.split(","):
                if backend == "postgres":
                    cluster = start_postgres()
                    if cluster is None:
                        continue
                for workers in [int(n) for n in options.workers.split(",")]:
                    name = f"queue_{backend}_{workers}"
                    url = (
                        sqlite_queue(folder, name)
                        if backend == "sqlite"
                        else postgres_queue(cluster, name)
                    )
                    settings.append(
                        measure(backend, url, workers, options, program, environ, server.pid)
                    )
                    print(json.dumps(settings[-1].__dict__), file=sys.stderr, flush=True)
                # The queue's own latency: one worker, one run at a time, so no run waits
                # for another's CPU.
                alone = argparse.Namespace(
                    **{
                        **vars(options),
                        "concurrency": 1,
                        "prefetch": None,
                        "runs": options.alone_runs,
                    }
                )
                url = (
                    sqlite_queue(folder, f"queue_{backend}_alone")
                    if backend == "sqlite"
                    else postgres_queue(cluster, f"queue_{backend}_alone")
                )
                settings.append(measure(backend, url, 1, alone, program, environ, server.pid))
                print(json.dumps(settings[-1].__dict__), file=sys.stderr, flush=True)
    finally:
        server.stdin.close()
        server.wait(timeout=10)
        if cluster is not None:
            cluster.stop()
    print_table(settings, bare, options, cores, load_before)


def print_table(
    settings: list[Setting],
    bare: tuple[float, float],
    options: argparse.Namespace,
    cores: int,
    load_before: float,
) -> None:
    print(
        f"{options.runs} runs ({options.alone_runs} at concurrency 1), one "
        f"{options.latency_ms:g} ms model call each; a run alone takes {bare[0] * 1000:.1f} ms, "
        f"CPU {bare[1] * 1000:.1f} ms"
    )
    print(
        f"machine: {cores} cores, load average {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after"
    )
    header = (
        "| queue | workers × concurrency | runs/s | ideal | of ideal "
        "| CPU a run (workers + server) "
        "| CPU ceiling runs/s | queueing overhead a run (slot time, CPU) |"
    )
    print(header)
    print("| --- " * 8 + "|")
    for setting in settings:
        cpu = setting.worker_cpu + setting.server_cpu
        ceiling = cores / cpu if cpu else float("inf")
        slot = setting.workers * setting.concurrency / setting.runs_per_second
        print(
            f"| {setting.backend} | {setting.workers} × {setting.concurrency} "
            f"| {setting.runs_per_second:.0f} "
            f"| {setting.ideal:.0f} | {setting.runs_per_second / setting.ideal:.0%} "
            f"| {setting.worker_cpu * 1000:.1f} + {setting.server_cpu * 1000:.1f} ms "
            f"| {ceiling:.0f} | {(slot - bare[0]) * 1000:.1f} ms, "
            f"{(setting.worker_cpu - bare[1]) * 1000:.1f} ms |"
            + ("" if setting.done == setting.runs else f" ({setting.done} done)")
        )


if __name__ == "__main__":
    main()
