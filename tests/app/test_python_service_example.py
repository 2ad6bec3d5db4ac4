"""examples/python/: the FastAPI service under a real ASGI server (uvicorn on 127.0.0.1),
answering concurrent requests through the generated async client and a Python tool, with the
scripted mock model; the answers and the journal are checked. The example is copied into a
temporary folder first, so nothing is written into the checkout."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from agentscript.app.python_client import python_client_files
from agentscript.learn.journal import Journal

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python"
TICKETS = [f"  Ticket {index}:\n I was charged twice  " for index in range(12)]


@pytest.fixture
def example(tmp_path: Path) -> Path:
    copy = tmp_path / "python"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("__pycache__", ".agentscript"))
    return copy


def test_the_committed_client_is_what_the_program_generates(example: Path) -> None:
    generated = python_client_files(example / "triage.as", "triage_client")
    for file in generated:
        committed = EXAMPLE / "triage_client" / file.path
        assert committed.read_text(encoding="utf-8") == file.text, f"regenerate {committed}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_service_answers_concurrent_requests_each_from_its_own_run(
    example: Path, tmp_path: Path
) -> None:
    port = free_port()
    journal = tmp_path / "journal.db"
    environ = {
        **os.environ,
        "TRIAGE_MOCK": "triage.responses.json",
        "TRIAGE_JOURNAL": str(journal),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "service:app", "--host", "127.0.0.1",
         "--port", str(port), "--log-level", "warning"],
        cwd=example, env=environ, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            try:
                httpx.get(f"{base}/openapi.json", timeout=1).raise_for_status()
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the service never started"
                time.sleep(0.1)

        def ask(text: str) -> httpx.Response:
            return httpx.post(f"{base}/triage", json={"text": text}, timeout=60)

        with ThreadPoolExecutor(max_workers=len(TICKETS)) as pool:
            answers = list(pool.map(ask, TICKETS))
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert [answer.status_code for answer in answers] == [200] * len(TICKETS)
    assert [answer.json() for answer in answers] == [{"label": "billing", "urgent": False}] * 12
    # Every request was a run of its own: journaled, its ticket cleaned by the Python tool.
    opened = Journal.open(journal)
    try:
        runs = opened.store.runs()
        assert len(runs) == len(TICKETS) and {run.status for run in runs} == {"ok"}
        cleaned = set()
        for run in runs:
            for entry in opened.store.entries(run.run_id):
                if entry.kind == "tool" and isinstance(entry.data, dict):
                    cleaned.add(json.dumps(entry.data.get("result")))
    finally:
        opened.close()
    assert cleaned == {json.dumps(f"Ticket {index}: I was charged twice") for index in range(12)}
