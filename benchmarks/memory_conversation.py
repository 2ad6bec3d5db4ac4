"""Recall at conversation size, side by side with raw SQLite FTS5 (issue 26: at most 2× FTS5's
time up to 1,000 entries).

An agent host's memory is most often one conversation: a few hundred to a thousand turns in
one scope. Each LoCoMo conversation (about 400 to 700 turns) is remembered into a scope of its
own as a host writes it (`Speaker: text`, episodic, a key, event_time, source.session), and
also cycled to 1,000 entries; then its own questions are asked with limit 10 and 100. The peer
in the same run is raw FTS5 over the same texts (porter tokenizer, one table per scope), asked
the same questions as OR queries ranked by bm25, returning what a host reads: each hit's
rowid, text and score. The service returns its hits as a host gets them (default body cut).

Prints p50 and p95 per call and the ratio of p50s next to the target; never asserts. The data
set is evaluation data only, read from `shared/benchmarks/locomo/` (or --data), never copied
here.

    .venv/bin/python benchmarks/memory_conversation.py [--data PATH] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentscript.memory import FixedClock, MemoryConfig, MemoryService
from locomo_recall import DEFAULT_DATA, Conversation, load, percentile, print_table, session_of

TARGET_RATIO = 2.0
LIMITS = (10, 100)
_WORD = re.compile(r"[A-Za-z0-9]+")


def items(conversation: Conversation, size: int | None) -> list[dict[str, Any]]:
    """The conversation's turns as a host remembers them, cycled to `size` when given."""
    turns = conversation.turns
    count = size or len(turns)
    made = []
    for number in range(count):
        turn = turns[number % len(turns)]
        cycle = number // len(turns)
        text = f"{turn.speaker}: {turn.text}"
        if turn.caption:
            text += f"\n[shared a photo: {turn.caption}]"
        made.append(
            {
                "text": text,
                "kind": "episodic",
                "key": f"{cycle}/{turn.turn_id}",
                "scope": f"/conversation/{conversation.sample_id}",
                "event_time": turn.when + timedelta(days=400 * cycle),
                "source": {"session": f"{cycle}/{session_of(turn.turn_id)}"},
            }
        )
    return made


def timed(ask: Callable[[str], Any], questions: list[str], rounds: int) -> list[float]:
    for question in questions[:10]:  # warm: the first asks decode what later ones reuse
        ask(question)
    times = []
    for _ in range(rounds):
        for question in questions:
            started = time.perf_counter()
            ask(question)
            times.append((time.perf_counter() - started) * 1000)
    return times


def measure(
    folder: Path, conversations: list[Conversation], size: int | None, limit: int, rounds: int
) -> tuple[list[float], list[float], int]:
    """Each system's times a recall over every conversation, and the entries a scope held."""
    clock = FixedClock(datetime(2030, 1, 1, tzinfo=UTC))
    service_times: list[float] = []
    fts5_times: list[float] = []
    held = 0
    with MemoryService.open(
        None, database=folder / f"service-{size}-{limit}.db", clock=clock,
        config=MemoryConfig(max_entries=10_000),
    ) as service:  # fmt: skip
        connection = sqlite3.connect(folder / f"fts5-{size}-{limit}.db", isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        for number, conversation in enumerate(conversations):
            remembered = items(conversation, size)
            held = max(held, len(remembered))
            service.remember_many(remembered)
            table = f"turns{number}"
            connection.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(text, tokenize='porter')")
            connection.execute("BEGIN")
            connection.executemany(
                f"INSERT INTO {table} (text) VALUES (?)", [(item["text"],) for item in remembered]
            )
            connection.execute("COMMIT")
            questions = [question for question, *_ in conversation.questions]
            scope = remembered[0]["scope"]

            def ask_service(question: str, scope: str = scope) -> Any:
                return service.recall(question, scope=scope, limit=limit)

            def ask_fts5(question: str, table: str = table) -> Any:
                words = " OR ".join(f'"{w}"' for w in dict.fromkeys(_WORD.findall(question)))
                if not words:
                    return []
                return connection.execute(
                    f"SELECT rowid, text, bm25({table}) FROM {table} WHERE {table} MATCH ? "
                    f"ORDER BY bm25({table}) LIMIT ?",
                    (words, limit),
                ).fetchall()

            service_times += timed(ask_service, questions, rounds)
            fts5_times += timed(ask_fts5, questions, rounds)
        connection.close()
    return service_times, fts5_times, held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    conversations = load(options.data)
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        for size in (None, 1000):
            for limit in LIMITS:
                service, fts5, held = measure(
                    Path(temporary), conversations, size, limit, options.rounds
                )
                ratio = percentile(service, 50) / percentile(fts5, 50)
                verdict = "met" if ratio <= TARGET_RATIO else "missed"
                rows.append(
                    [
                        "as recorded" if size is None else f"cycled to {size:,}",
                        f"up to {held:,}",
                        str(limit),
                        f"{percentile(service, 50):.2f} / {percentile(service, 95):.2f}",
                        f"{percentile(fts5, 50):.2f} / {percentile(fts5, 95):.2f}",
                        f"{ratio:.2f} (<= {TARGET_RATIO:g}: {verdict})",
                    ]
                )
    print_table(
        f"recall at conversation size, {len(conversations)} conversations, one scope each, "
        f"{options.rounds} rounds of their questions; load average {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after",
        ["conversation", "entries a scope", "limit", "service p50 / p95 ms",
         "raw FTS5 p50 / p95 ms", "p50 × FTS5"],
        rows,
    )  # fmt: skip


if __name__ == "__main__":
    main()
