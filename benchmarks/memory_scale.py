"""The memory service at scale, as hosts write it, side by side with raw SQLite FTS5.

LoCoMo turns, cycled to N entries, all in ONE scope (the service with `max_entries` lifted),
written as a host writes them through the MCP server: the turn's text, kind episodic, a key,
event_time and source.session; no title, no tags, no context. For each N (default 10,000 and
100,000; 1,000,000 is a size like any other) and each batch size (1: one `remember` per entry;
1000: `remember_many` of 1,000), it fills a fresh database and measures remembers per second,
the whole fill's seconds and the p95 of one call, then recall p50/p95 over LoCoMo questions
(limit 10), then the file's size. The peer in the same run is raw FTS5: one table with the
porter tokenizer, one commit per add (or per batch of the same size), the same texts, the same
questions as OR queries ranked by bm25 with LIMIT 10, and the same durability as the service
(WAL, synchronous=FULL), so both pay the same fsync per commit.

Each system is measured in a child process of its own, which makes its entries itself (none
are handed over), so its peak RSS (`ru_maxrss`) is what filling and asking cost that process.
Before the sizes, the disk's fsync floor: durable one-row commits per second into a table of
one integer column (WAL, synchronous=FULL), the most any one-commit-per-remember write can do.

Prints a table and the ratios next to the issue's targets; never asserts. Slow: 100,000
remembers one by one take minutes, 1,000,000 in batches several; on a shared machine the
figures are noisy. The data set is evaluation data only, read from `shared/benchmarks/locomo/`
(or --data), never copied here.

    .venv/bin/python benchmarks/memory_scale.py [--sizes 10000 100000 1000000]
        [--batches 1 1000] [--queries 300] [--folder DIR] [--data PATH]
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import re
import resource
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentscript.memory import FixedClock, MemoryConfig, MemoryService
from locomo_recall import DEFAULT_DATA, Conversation, load, percentile, print_table, session_of

SCOPE = "/scale/one-scope"
# The targets (issue 37): one remember a call against the disk's fsync floor, batches against
# raw FTS5's batches; recall p95 in ms up to 100,000 entries and beyond; peak RSS against raw
# FTS5's up to 100,000 and in MB beyond; a whole fill beyond 100,000, in seconds.
TARGET_SINGLE_FLOOR_RATIO = 0.6
TARGET_BATCH_RATIO = 0.15
TARGET_REMEMBER_P95_MS = 5.0
TARGET_RECALL_P95_MS = {100_000: 10.0, 1_000_000: 25.0}
TARGET_RECALL_RATIO = 0.5
TARGET_DISK_RATIO = 2.0
TARGET_RSS_RATIO = 1.3
TARGET_RSS_MB = 400.0
TARGET_FILL_SECONDS = 300.0
FLOOR_COMMITS = 2_000
_WORD = re.compile(r"[A-Za-z0-9]+")


@dataclass(frozen=True, slots=True)
class Figures:
    """What one system measured at one (N, batch)."""

    remember_per_second: float
    remember_p95_ms: float
    recall_p50_ms: float
    recall_p95_ms: float
    disk_bytes: int
    fill_seconds: float
    peak_rss_bytes: int = 0


def host_items(conversations: list[Conversation], size: int) -> Iterator[dict[str, Any]]:
    """`size` remember arguments: the turns cycled, each cycle its own keys and sessions, so
    every entry is new (nothing merges or supersedes) and sessions stay one conversation's."""
    turns = [(conversation, turn) for conversation in conversations for turn in conversation.turns]
    for number in range(size):
        conversation, turn = turns[number % len(turns)]
        cycle = number // len(turns)
        text = f"{turn.speaker}: {turn.text}"
        if turn.caption:
            text += f"\n[shared a photo: {turn.caption}]"
        yield {
            "text": text,
            "kind": "episodic",
            "key": f"{cycle}/{conversation.sample_id}/{turn.turn_id}",
            "scope": SCOPE,
            "event_time": turn.when + timedelta(days=400 * cycle),
            "source": {"session": f"{cycle}/{conversation.sample_id}/{session_of(turn.turn_id)}"},
        }


def batches(items: Iterator[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def measure_service(
    folder: Path, data: Path, size: int, batch: int, questions: list[str]
) -> Figures:
    path = folder / "service.db"
    clock = FixedClock(datetime(2030, 1, 1, tzinfo=UTC))
    config = MemoryConfig(max_entries=size + 1)
    calls: list[float] = []
    with MemoryService.open(None, database=path, config=config, clock=clock) as service:
        started = time.perf_counter()
        for group in batches(host_items(load(data), size), batch):
            call = time.perf_counter()
            if batch == 1:
                service.remember(**group[0])
            else:
                service.remember_many(group)
            calls.append((time.perf_counter() - call) * 1000)
        elapsed = time.perf_counter() - started
        recalls = []
        for question in questions:
            call = time.perf_counter()
            service.recall(question, scope=SCOPE, limit=10, body_chars=0)
            recalls.append((time.perf_counter() - call) * 1000)
    return Figures(
        size / elapsed,
        percentile(calls, 95),
        percentile(recalls, 50),
        percentile(recalls, 95),
        _size(path),
        elapsed,
    )


def measure_fts5(folder: Path, data: Path, size: int, batch: int, questions: list[str]) -> Figures:
    path = folder / "fts5.db"
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=FULL")
    connection.execute("CREATE VIRTUAL TABLE turns USING fts5(text, tokenize = 'porter')")
    calls: list[float] = []
    started = time.perf_counter()
    for group in batches(host_items(load(data), size), batch):
        call = time.perf_counter()
        connection.execute("BEGIN")
        connection.executemany(
            "INSERT INTO turns (text) VALUES (?)", [(item["text"],) for item in group]
        )
        connection.execute("COMMIT")
        calls.append((time.perf_counter() - call) * 1000)
    elapsed = time.perf_counter() - started
    recalls = []
    for question in questions:
        words = " OR ".join(f'"{word}"' for word in dict.fromkeys(_WORD.findall(question)))
        call = time.perf_counter()
        if words:
            connection.execute(
                "SELECT rowid FROM turns WHERE turns MATCH ? ORDER BY bm25(turns) LIMIT 10",
                (words,),
            ).fetchall()
        recalls.append((time.perf_counter() - call) * 1000)
    connection.close()
    return Figures(
        size / elapsed,
        percentile(calls, 95),
        percentile(recalls, 50),
        percentile(recalls, 95),
        _size(path),
        elapsed,
    )


def fsync_floor(folder: Path) -> float:
    """Durable one-row commits per second on this disk, as both systems commit (WAL,
    synchronous=FULL): the ceiling of any write that commits once per remember. The best of
    three rounds, as the disk can do it."""
    path = folder / "floor.db"
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=FULL")
    connection.execute("CREATE TABLE commits (n INTEGER)")
    rates = []
    for _ in range(3):
        started = time.perf_counter()
        for number in range(FLOOR_COMMITS):
            connection.execute("BEGIN")
            connection.execute("INSERT INTO commits (n) VALUES (?)", (number,))
            connection.execute("COMMIT")
        rates.append(FLOOR_COMMITS / (time.perf_counter() - started))
    connection.close()
    return max(rates)


def in_child(measure: Callable[..., Figures], *arguments: Any) -> Figures:
    """`measure(*arguments)` in a fresh process, with that process's peak RSS."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_measured, (measure, *arguments))


def _measured(measure: Callable[..., Figures], *arguments: Any) -> Figures:
    figures = measure(*arguments)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return replace(figures, peak_rss_bytes=peak)


def _size(path: Path) -> int:
    """The database's bytes once closed (its WAL checkpointed into it)."""
    return sum(
        candidate.stat().st_size
        for candidate in (path, path.with_name(path.name + "-wal"))
        if candidate.exists()
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 1000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--folder", type=Path, help="where the databases go (default: a temp)")
    arguments = parser.parse_args(argv)
    if not arguments.data.exists():
        print(f"LoCoMo data not found at {arguments.data} (use --data)", file=sys.stderr)
        return 2
    conversations = load(arguments.data)
    every_question = [question for c in conversations for question, _, _ in c.questions]
    questions = random.Random(15).sample(
        every_question, min(arguments.queries, len(every_question))
    )
    with tempfile.TemporaryDirectory(dir=arguments.folder) as folder:
        floor = fsync_floor(Path(folder))
    print(f"fsync floor: {floor:,.0f} durable commits/s", file=sys.stderr, flush=True)
    rows = []
    for size in arguments.sizes:
        for batch in arguments.batches:
            with tempfile.TemporaryDirectory(dir=arguments.folder) as folder:
                measured = (Path(folder), arguments.data, size, batch, questions)
                ours = in_child(measure_service, *measured)
                peer = in_child(measure_fts5, *measured)
            rows.append((size, batch, ours, peer))
            print(f"measured N={size:,} batch={batch}", file=sys.stderr, flush=True)
    _print_figures(rows, len(questions), floor)
    return 0


Row = tuple[int, int, Figures, Figures]


def _print_figures(rows: list[Row], questions: int, floor: float) -> None:
    print_table(
        f"one scope, LoCoMo turns as a host writes them, {questions} recalls (limit 10); "
        f"fsync floor {floor:,.0f} commits/s",
        [
            "N",
            "batch",
            "system",
            "remember/s",
            "fill s",
            "call p95 ms",
            "recall p50 ms",
            "recall p95 ms",
            "disk MB",
            "peak RSS MB",
        ],
        (
            [
                f"{size:,}",
                str(batch),
                name,
                f"{figures.remember_per_second:,.0f}",
                f"{figures.fill_seconds:,.1f}",
                f"{figures.remember_p95_ms:.2f}",
                f"{figures.recall_p50_ms:.2f}",
                f"{figures.recall_p95_ms:.2f}",
                f"{figures.disk_bytes / 1e6:.1f}",
                f"{figures.peak_rss_bytes / 1e6:.0f}",
            ]
            for size, batch, ours, peer in rows
            for name, figures in (("memory service", ours), ("raw FTS5", peer))
        ),
    )
    print_table(
        "the memory service against the targets (ratios: to raw FTS5 in the same run, or to "
        "the fsync floor for one remember a call)",
        ["N", "batch", "remember/s", "call p95 ms", "recall p95", "recall p95 ms", "disk", "RSS"],
        (
            [f"{size:,}", str(batch), *_against_targets(size, batch, ours, peer, floor)]
            for size, batch, ours, peer in rows
        ),
    )


def _against_targets(
    size: int, batch: int, ours: Figures, peer: Figures, floor: float
) -> list[str]:
    if batch == 1:
        remember = "floor " + _versus(
            ours.remember_per_second / floor, ">=", TARGET_SINGLE_FLOOR_RATIO
        )
    else:
        remember = _versus(
            ours.remember_per_second / peer.remember_per_second, ">=", TARGET_BATCH_RATIO
        )
    if size > 100_000:
        remember += f", fill {_versus(ours.fill_seconds, '<=', TARGET_FILL_SECONDS)} s"
        rss = _versus(ours.peak_rss_bytes / 1e6, "<=", TARGET_RSS_MB) + " MB"
    else:
        rss = _versus(ours.peak_rss_bytes / peer.peak_rss_bytes, "<=", TARGET_RSS_RATIO)
    recall_ms = TARGET_RECALL_P95_MS[100_000 if size <= 100_000 else 1_000_000]
    return [
        remember,
        _versus(ours.remember_p95_ms, "<=", TARGET_REMEMBER_P95_MS) if batch == 1 else "-",
        _versus(ours.recall_p95_ms / peer.recall_p95_ms, "<=", TARGET_RECALL_RATIO),
        _versus(ours.recall_p95_ms, "<=", recall_ms),
        _versus(ours.disk_bytes / peer.disk_bytes, "<=", TARGET_DISK_RATIO),
        rss,
    ]


def _versus(value: float, relation: str, target: float) -> str:
    met = value >= target if relation == ">=" else value <= target
    return f"{value:.2f} ({relation} {target:g}: {'met' if met else 'missed'})"


if __name__ == "__main__":
    sys.exit(main())
