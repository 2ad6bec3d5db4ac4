"""A child process for the SQLite text-index tests: it shrinks the index's packing sizes
(in this process only, before it writes) so a few entries make packs and merges, then writes,
reads, or dies by SIGKILL in the middle of a pack.

    python postings_child.py write DATABASE WORKER COUNT    remember COUNT entries
    python postings_child.py write-many DATABASE WORKER COUNT BATCH   the same, BATCH a call
    python postings_child.py kill-in-pack DATABASE COUNT [BATCH]  remember (BATCH a call)
                                                            until a pack is half done
    python postings_child.py kill-at-commit DATABASE COUNT  remember COUNT, die as the next commits
    python postings_child.py forget DATABASE COUNT          forget (purge) COUNT entries of pottery
    python postings_child.py read DATABASE SECONDS          recall in a loop, checking counts

A writer prints `ok ID` for each acknowledged entry. Entry n of worker w holds the words
`pottery` (every entry), `glaze` (every third), and `uniq<w>x<n>` (only it).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
import time
from typing import Any

from agentscript.memory import MemoryConfig, MemoryService, sqlite_postings

CONFIG = MemoryConfig(max_entries=100_000)
PACK_AT = 11
BLOCK_POSTINGS = 4
WRITTEN_POSTINGS = 6  # a pack writes its blocks in runs of a few postings


def shrink_blocks() -> None:
    sqlite_postings.PACK_AT = PACK_AT
    sqlite_postings.BLOCK_POSTINGS = BLOCK_POSTINGS
    sqlite_postings._WRITTEN_POSTINGS = WRITTEN_POSTINGS
    sqlite_postings._ENCODED_POSTINGS = WRITTEN_POSTINGS // 3


def text(worker: int, n: int) -> str:
    extra = " glaze" if n % 3 == 0 else ""
    return f"pottery{extra} uniq{worker}x{n} " + " ".join(["wheel"] * (n % 5))


def write(database: str, worker: int, count: int, batch: int = 1) -> None:
    """Remember `count` entries, `batch` a call (a batch packs its postings together)."""
    with MemoryService.open(None, database=database, config=CONFIG) as memory:
        for start in range(0, count, batch):
            if batch == 1:
                print("ok", memory.remember(text(worker, start))["id"], flush=True)
                continue
            items = [{"text": text(worker, n)} for n in range(start, min(count, start + batch))]
            for result in memory.remember_many(items):
                print("ok", result["id"], flush=True)


def kill_in_pack(database: str, count: int, batch: int) -> None:
    """Remember entries, `batch` a call; in the second pack, after it wrote its first run of
    blocks whole and half of the next, die (at its end, uncommitted, if it had one run)."""
    writes = {"packs": 0, "runs": 0}
    pack, write_blocks = sqlite_postings.pack, sqlite_postings._write_blocks

    def counted_pack(connection: sqlite3.Connection) -> None:
        writes["packs"] += 1
        pack(connection)
        if writes["packs"] == 2:
            os.kill(os.getpid(), signal.SIGKILL)

    def dying_write_blocks(connection: sqlite3.Connection, blocks: Any) -> None:
        if writes["packs"] != 2:
            write_blocks(connection, blocks)
            return
        writes["runs"] += 1
        if writes["runs"] == 1:
            write_blocks(connection, blocks)
            return
        write_blocks(connection, blocks[: max(1, len(blocks) // 2)])
        os.kill(os.getpid(), signal.SIGKILL)

    sqlite_postings.pack = counted_pack  # type: ignore[assignment]
    sqlite_postings._write_blocks = dying_write_blocks  # type: ignore[assignment]
    write(database, 0, count, batch)


def kill_at_commit(database: str, count: int) -> None:
    """Remember `count` entries, then die as the next remember's COMMIT starts (its tail row,
    totals and, every few entries, a pack written but not committed)."""
    with MemoryService.open(None, database=database, config=CONFIG) as memory:
        for n in range(count):
            print("ok", memory.remember(text(0, n))["id"], flush=True)
        connection = memory.store._connection  # type: ignore[attr-defined]

        def die_at_commit(statement: str) -> None:
            if statement == "COMMIT":
                os.kill(os.getpid(), signal.SIGKILL)

        connection.set_trace_callback(die_at_commit)
        memory.remember(text(0, count))


def forget(database: str, count: int) -> None:
    with MemoryService.open(None, database=database, config=CONFIG) as memory:
        for hit in memory.recall("pottery", limit=count)["results"]:
            memory.forget(hit["id"], purge=True)
            print("forgot", hit["id"], flush=True)


def read(database: str, seconds: float) -> None:
    """Recall in a loop with one store (one ShapeBook) while others write: every recall must
    succeed, and the entries holding `pottery` may only grow in number."""
    deadline = time.monotonic() + seconds
    seen = 0
    rounds = 0
    with MemoryService.open(None, database=database, config=CONFIG) as memory:
        while time.monotonic() < deadline:
            for query in ("pottery", "glaze pottery", "wheel glaze", "pottery wheel"):
                found = memory.recall(query, limit=3)
                if query == "pottery":
                    if found["total"] < seen:
                        raise SystemExit(f"pottery matched {found['count']} after {seen}")
                    seen = found["total"]
            rounds += 1
    print("rounds", rounds, "seen", seen, flush=True)


def main(arguments: list[str]) -> None:
    shrink_blocks()
    command, database, *rest = arguments
    if command == "write":
        write(database, int(rest[0]), int(rest[1]))
    elif command == "write-many":
        write(database, int(rest[0]), int(rest[1]), int(rest[2]))
    elif command == "kill-in-pack":
        kill_in_pack(database, int(rest[0]), int(rest[1]) if len(rest) > 1 else 1)
    elif command == "kill-at-commit":
        kill_at_commit(database, int(rest[0]))
    elif command == "forget":
        forget(database, int(rest[0]))
    elif command == "read":
        read(database, float(rest[0]))
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv[1:])
