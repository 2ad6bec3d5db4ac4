"""What the tool bounds cost and what they save, each against its peer in the same run.

- glob matching (globs.py: atomic-group regex, automaton for paths with a newline) against the
  original's regex, on ordinary paths and on the catastrophic glob `*a*a*…*b` against names
  of n `a`s (the original's time grows exponentially with n, so its n stays small);
- a gzip bomb answered to the HTTP tool: peak memory (tracemalloc) of our streaming
  decompression against decoding with httpx's `iter_bytes`, the peer the tool used before.

Prints one table and never asserts on timings: figures depend on the machine and its load.

    .venv/bin/python benchmarks/tool_bounds.py [--paths 20000] [--bomb-mib 200]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import re
import sys
import time
import tracemalloc
from collections.abc import Callable

import httpx
from pytest_httpserver import HTTPServer
from werkzeug.wrappers import Response

import private_memory  # noqa: F401  (the user's memory stays out of reach)
from agentscript.providers.tools.globs import Glob
from agentscript.providers.tools.http import HttpTools
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall

Row = tuple[str, str, str]


def original_glob(glob: str) -> re.Pattern[str]:
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob)
    return re.compile(f"(^|/){body}$")


def seconds(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def glob_rows(paths: int) -> list[Row]:
    names = [f"src/agentscript/providers/tools/module_{i}.py" for i in range(paths)]
    ours, theirs = Glob("*.py"), original_glob("*.py")
    automaton = seconds(lambda: [ours.search(name) for name in names])
    regex = seconds(lambda: [theirs.search(name) for name in names])
    rows: list[Row] = [
        (
            f"glob *.py over {paths:,} paths",
            f"{paths / automaton:,.0f} paths/s",
            f"{paths / regex:,.0f} paths/s (regex)",
        )
    ]
    evil = "*a*a*a*a*a*a*a*a*b"
    ours, theirs = Glob(evil), original_glob(evil)
    for length in (14, 18, 22):
        name = "a" * length
        rows.append(
            (
                f"glob {evil} on {length} a's",
                f"{seconds(lambda n=name: ours.search(n)) * 1000:.3f} ms",
                f"{seconds(lambda n=name: theirs.search(n)) * 1000:,.1f} ms (regex)",
            )
        )
    for name, label in (("a" * 60, "60 a's"), ("a" * 59 + "\n", "59 a's and a newline")):
        rows.append(
            (
                f"glob {evil} on {label}",
                f"{seconds(lambda n=name: ours.search(n)) * 1000:.3f} ms",
                "never finishes (regex)",
            )
        )
    return rows


def peak_mib(action: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        action()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak / 2**20


def bomb_rows(mebibytes: int) -> list[Row]:
    bomb = gzip.compress(b"\0" * (mebibytes * 2**20), 9)
    server = HTTPServer(host="127.0.0.1", port=0)
    server.start()
    server.expect_request("/bomb").respond_with_response(
        Response(bomb, headers={"Content-Encoding": "gzip"})
    )
    url = f"http://127.0.0.1:{server.port}"
    tools = HttpTools()

    def ours() -> None:
        # Refused as larger than the cap: what is measured is the memory on the way.
        with contextlib.suppress(ExecutionError):
            tools.call(ToolCall("Api", url, "get", [{"url": "/bomb"}]))

    def httpx_iter_bytes() -> None:
        with httpx.stream("GET", f"{url}/bomb") as response:
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > 2**20:
                    return

    try:
        rows: list[Row] = [
            (
                f"gzip bomb {len(bomb) / 1024:,.0f} KiB -> {mebibytes} MiB, peak memory",
                f"{peak_mib(ours):,.1f} MiB",
                f"{peak_mib(httpx_iter_bytes):,.1f} MiB (httpx iter_bytes)",
            )
        ]
    finally:
        tools.close()
        server.stop()
    return rows


def print_table(rows: list[Row]) -> None:
    header: Row = ("measure", "AgentScript", "peer")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(3)]
    for index, row in enumerate([header, *rows]):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
        if index == 0:
            print("  ".join("-" * width for width in widths))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=20_000)
    parser.add_argument("--bomb-mib", type=int, default=200)
    args = parser.parse_args(argv)
    print(f"Python {sys.version.split()[0]}; one run each (timings are noisy on a shared host)\n")
    print_table([*glob_rows(args.paths), *bomb_rows(args.bomb_mib)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
