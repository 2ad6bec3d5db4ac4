"""How fast memory resources are: durable `add` throughput and `query` latency, per backend.

For each size (records already stored) and backend it measures adds per second through the
router, fsync included, and the p50/p95 latency of a `kind` query (an index lookup in SQL, a
full scan of the file for JSONL) and of a `text` query (a substring scan everywhere). PostgreSQL
runs in a throwaway cluster with fsync on, as in the tests, when the server binaries exist.
Stores are filled through `import_records` so large sizes take seconds, not hours. Prints one
table and never asserts on timings: figures depend on the machine, above all on its disk.

    .venv/bin/python benchmarks/memory_resources.py [--sizes 1000,10000,100000]
        [--backends jsonl,sqlite,postgres] [--adds 200] [--queries 100] [--seconds 3]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import private_memory  # noqa: F401  (the user's memory stays out of reach)
from agentscript.app.memory_resources import import_records
from agentscript.providers.memory.router import MemoryRouter
from agentscript.providers.memory.rules import timestamp
from agentscript.runtime.jsjson import stringify
from agentscript.runtime.ports import MemoryRequest

ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ("jsonl", "sqlite", "postgres")
TARGET_SQLITE_P95_MS = 5.0
TARGET_ADDS_PER_SECOND = 2_000
KINDS = ("lesson", "note", "rule", "profile", "run", "review", "plan", "fact")
WORDS = (
    "agent model prompt budget context lesson draft review score tool memory query trace "
    "announce release feature customer export import dark mode faster csv report summary"
).split()
# One text in a hundred mentions it, so a `text` query scans about a thousand rows for ten hits.
RARE_WORD = "Zeppelin"
START = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(slots=True)
class Measurement:
    backend: str
    records: int
    adds_per_second: float
    kind_ms: tuple[float, float]
    text_ms: tuple[float, float]


def envelopes(first: int, count: int) -> Iterator[dict[str, Any]]:
    """Records `first` .. `first + count - 1`, a millisecond apart, the same on every run."""
    words = random.Random(first)
    for number in range(first, first + count):
        text = " ".join(words.choice(WORDS) for _ in range(words.randint(8, 24)))
        if number % 100 == 7:
            text += f" {RARE_WORD}"
        created = timestamp(START + timedelta(milliseconds=number))
        yield {
            "id": f"bench-{number:08d}",
            "created_at": created,
            "updated_at": created,
            "record": {"kind": KINDS[number % len(KINDS)], "text": text, "n": number},
        }


def latency_ms(run: Callable[[], object], samples: int, seconds: float) -> tuple[float, float]:
    """p50 and p95 in milliseconds over `samples` runs, fewer (at least five) if they would
    take longer than `seconds`."""
    durations: list[float] = []
    deadline = time.perf_counter() + seconds
    while len(durations) < samples and (len(durations) < 5 or time.perf_counter() < deadline):
        start = time.perf_counter()
        run()
        durations.append((time.perf_counter() - start) * 1000)
    p95 = statistics.quantiles(durations, n=20)[18] if len(durations) >= 20 else max(durations)
    return statistics.median(durations), p95


def measure(backend: str, uri: str, workdir: Path, args: argparse.Namespace) -> list[Measurement]:
    router = MemoryRouter(workdir, workdir)
    stored = 0
    results = []
    try:
        for size in sorted(args.sizes):
            lines = (stringify(envelope) for envelope in envelopes(stored, size - stored))
            stored += import_records(uri, lines).added

            def add(number: int) -> None:
                record = {"kind": "lesson", "text": f"measured add {number}", "n": number}
                router.add(MemoryRequest("Bench", uri, "add", record))

            start = time.perf_counter()
            for number in range(args.adds):
                add(number)
            adds_per_second = args.adds / (time.perf_counter() - start)
            stored += args.adds

            def query(argument: dict[str, Any]) -> Callable[[], object]:
                return lambda: router.query(MemoryRequest("Bench", uri, "query", argument))

            kind = latency_ms(query({"kind": "rule", "limit": 10}), args.queries, args.seconds)
            text = latency_ms(
                query({"text": RARE_WORD.lower(), "limit": 10}), args.queries, args.seconds
            )
            results.append(Measurement(backend, stored, adds_per_second, kind, text))
            print(f"  {backend:<8} {stored:>7,} records measured", file=sys.stderr)
    finally:
        router.close()
    return results


def fsyncs_per_second(directory: Path, count: int = 200) -> float:
    """How many small append + fsync pairs the disk under `directory` takes per second: the
    ceiling of durable adds for a single writer, whatever the backend."""
    path = directory / "fsync-probe"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        start = time.perf_counter()
        for _ in range(count):
            os.write(descriptor, b"x" * 200 + b"\n")
            os.fsync(descriptor)
        return count / (time.perf_counter() - start)
    finally:
        os.close(descriptor)
        path.unlink()


def start_postgres() -> tuple[Any, str | None]:
    """A durable throwaway cluster (the tests' helper), or None and why not."""
    sys.path.insert(0, str(ROOT / "tests"))
    import pg_cluster

    reason = pg_cluster.unavailable_reason()
    if reason is not None:
        return None, reason
    return pg_cluster.start_cluster(durable=True), None


def print_table(measurements: list[Measurement]) -> None:
    header = ("backend", "records", "add/s (fsync)", "kind p50 / p95 ms", "text p50 / p95 ms")
    rows = [header] + [
        (
            m.backend,
            f"{m.records:,}",
            f"{m.adds_per_second:,.0f}",
            f"{m.kind_ms[0]:.2f} / {m.kind_ms[1]:.2f}",
            f"{m.text_ms[0]:.2f} / {m.text_ms[1]:.2f}",
        )
        for m in sorted(measurements, key=lambda m: (m.records, BACKENDS.index(m.backend)))
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    for index, row in enumerate(rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
        if index == 0:
            print("  ".join("-" * width for width in widths))


def print_targets(measurements: list[Measurement], ceiling: float) -> None:
    largest = max(m.records for m in measurements)
    print()
    print(f"disk: {ceiling:,.0f} append+fsync per second (a single writer's ceiling)")
    for m in measurements:
        if m.backend == "sqlite" and m.records == largest:
            met = m.kind_ms[1] <= TARGET_SQLITE_P95_MS
            print(
                f"target: SQLite query p95 <= {TARGET_SQLITE_P95_MS:.0f} ms at {largest:,}: "
                f"{m.kind_ms[1]:.2f} ms (kind), {m.text_ms[1]:.2f} ms (text) -> "
                f"{'met' if met else 'MISSED'} for kind"
            )
    for m in measurements:
        if m.records == largest:
            met = m.adds_per_second >= TARGET_ADDS_PER_SECOND
            print(
                f"target: add >= {TARGET_ADDS_PER_SECOND:,}/s durable, {m.backend}: "
                f"{m.adds_per_second:,.0f}/s -> {'met' if met else 'MISSED'}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(size) for size in text.split(",")],
        default=[1_000, 10_000, 100_000],
        help="records stored before each measurement (comma-separated)",
    )
    parser.add_argument(
        "--backends",
        type=lambda text: text.split(","),
        default=list(BACKENDS),
        help=f"which of {','.join(BACKENDS)}",
    )
    parser.add_argument("--adds", type=int, default=200, help="adds timed per size")
    parser.add_argument("--queries", type=int, default=100, help="queries timed per figure")
    parser.add_argument("--seconds", type=float, default=3.0, help="time budget per figure")
    parser.add_argument("--dir", type=Path, default=None, help="where stores live (a temp dir)")
    args = parser.parse_args()
    unknown = set(args.backends) - set(BACKENDS)
    if unknown:
        parser.error(f"unknown backends: {', '.join(sorted(unknown))}")

    measurements: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="agentscript-memory-", dir=args.dir) as name:
        workdir = Path(name)
        ceiling = fsyncs_per_second(workdir)
        uris = {
            "jsonl": f"file://{workdir}/bench.jsonl",
            "sqlite": f"sqlite://{workdir}/bench.db#bench",
        }
        cluster = None
        if "postgres" in args.backends:
            cluster, reason = start_postgres()
            if cluster is None:
                print(f"postgres skipped: {reason}", file=sys.stderr)
            else:
                uris["postgres"] = cluster.socket_uri("bench")
        try:
            for backend in args.backends:
                if backend in uris:
                    measurements += measure(backend, uris[backend], workdir, args)
        finally:
            if cluster is not None:
                cluster.stop()
    print_table(measurements)
    print_targets(measurements, ceiling)


if __name__ == "__main__":
    main()
