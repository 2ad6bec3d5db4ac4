"""What OpenTelemetry export costs a run: the same mock run again and again in this process,
alternating no export, export to a live local collector, and export to a collector that is
down (a closed port), against the peer in the same run, no export. Target: a collector that is
down costs a run no more than a live one (within 2 ms); what export costs at all is the
OpenTelemetry SDK's price per span.

The collector is a stdlib HTTP server on 127.0.0.1 that answers every OTLP post at once. The
runs of a process share one span batch that leaves in the background; the time a process
exiting then waits for it (at most 2 s) is shown too. Prints one table; never asserts on timings.

    .venv/bin/python benchmarks/telemetry.py [--runs 60]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import agentscript
import private_memory  # noqa: F401  (the user's memory stays out of reach)
from agentscript.providers.telemetry.otel import wait_for_telemetry

TARGET_MS = 2.0

PROGRAM = """import llm Model from "openai://gpt-4.1-mini"
import tool Search from "mcp://tools/search"

agent Worker {
  model Model
  role "worker"
  description "Looks one thing up."
  main func(input { topic string }) {
    use input.topic
    found = Search.query({ q: input.topic })
    return generate({ input: "Say what it is." }) -> { text string }
  }
}

main agent Lead {
  model Model
  role "lead"
  description "Delegates."
  main func(input { topics list[string] }) {
    done = []
    for topic in input.topics < 10 {
      done.add(Worker({ topic: topic }))
    }
    return done.length
  }
}
"""


class _Collector(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    live = f"http://127.0.0.1:{server.server_address[1]}"
    down = f"http://127.0.0.1:{closed_port()}"
    with tempfile.TemporaryDirectory(prefix="agentscript-otel-bench-") as folder:
        workspace = Path(folder)
        program_path = workspace / "bench.as"
        program_path.write_text(PROGRAM, encoding="utf-8")
        program = agentscript.load(program_path)
        topics = {"topics": [f"topic {index}" for index in range(10)]}

        def timed(endpoint: str | None) -> float:
            environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint} if endpoint else {}
            config = agentscript.RunConfig(
                model="mock", mock_tools=True, journal=False, environ=environ
            )
            started = time.perf_counter()
            agentscript.run(program, topics, config)
            return (time.perf_counter() - started) * 1000

        results: dict[str, list[float]] = {"off": [], "live": [], "down": []}
        for endpoint in (None, live, down):
            timed(endpoint)  # warm up: imports, first connections
        for _ in range(args.runs):
            for name, endpoint in (("off", None), ("live", live), ("down", down)):
                results[name].append(timed(endpoint))
        started = time.perf_counter()
        wait_for_telemetry(30)
        drain = time.perf_counter() - started
    server.shutdown()
    base = statistics.median(results["off"])
    print(f"{args.runs} mock runs of 41 events each, alternating; median wall time per run")
    print()
    print(f"{'export':<34} {'ms':>8} {'added ms':>9}")
    rows = (
        ("none (peer)", "off"),
        ("to a live local collector", "live"),
        ("to a collector that is down", "down"),
    )
    for label, name in rows:
        median = statistics.median(results[name])
        print(f"{label:<34} {median:>8.2f} {median - base:>+9.2f}")
    added = statistics.median(results["down"]) - statistics.median(results["live"])
    verdict = "meets" if added < TARGET_MS else "MISSES"
    print()
    print(f"waiting for the last spans at the end (live and down collectors): {drain:.2f} s")
    print(
        f"target: a collector that is down costs no more than a live one (within "
        f"{TARGET_MS:.0f} ms): {verdict} ({added:+.2f} ms)"
    )


if __name__ == "__main__":
    main()
