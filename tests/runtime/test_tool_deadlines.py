"""A run's `--max-seconds` and Ctrl-C reach into the tool call in progress: the run stops with
the budget error (or the interrupt) instead of waiting for the tool's own time cap, and a
password in an import URI never shows in the error label."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.providers.tools import regex_search
from agentscript.runtime.budgets import BudgetExceeded

GREP = """
import tool Grep from "sh://grep"

main agent Searcher {
    main func() {
        found = Grep.run({ path: ".", pattern: "(a+)+$", regex: true })
        return found
    }
}
"""

PARALLEL_GREP = """
import tool Grep from "sh://grep"

main agent Searcher {
    main func() {
        results = parallel for i in [1, 2] max 2 {
            Grep.run({ path: ".", pattern: "(a+)+$", regex: true })
        }
        return results
    }
}
"""


def workspace_with(tmp_path: Path, source: str) -> Path:
    (tmp_path / "evil.txt").write_text("a" * 40 + "!\n")
    program = tmp_path / "search.as"
    program.write_text(source)
    return program


def config(max_seconds: float | None = None) -> agentscript.RunConfig:
    return agentscript.RunConfig(
        model="mock", approve="auto", journal=False, max_seconds=max_seconds
    )


def test_max_seconds_stops_a_tool_call_in_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(regex_search, "REGEX_TIMEOUT_SECONDS", 60.0)
    program = workspace_with(tmp_path, GREP)
    with pytest.raises(BudgetExceeded) as stopped:
        agentscript.run(program, {}, config(max_seconds=1))
    assert stopped.value.budget == "seconds"
    assert "more than 1 seconds (--max-seconds)" in stopped.value.located()
    assert stopped.value.located().endswith("search.as:6:17")


def test_ctrl_c_stops_tool_calls_in_every_parallel_iteration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without the interrupt reaching the workers, the run would wait out this cap.
    monkeypatch.setattr(regex_search, "REGEX_TIMEOUT_SECONDS", 60.0)
    program = workspace_with(tmp_path, PARALLEL_GREP)
    # Ctrl-C once both iterations' regex workers are running: SIGINT delivered to the main
    # thread, which waits for the iterations.
    both_started = threading.Barrier(3)
    start_worker = subprocess.Popen

    def counted(*args: Any, **kwargs: Any) -> subprocess.Popen[Any]:
        worker = start_worker(*args, **kwargs)
        both_started.wait(timeout=60)
        return worker

    monkeypatch.setattr(regex_search.subprocess, "Popen", counted)
    main = threading.main_thread().ident
    assert main is not None

    def interrupt() -> None:
        both_started.wait(timeout=60)
        signal.pthread_kill(main, signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        agentscript.run(program, {}, config())
    assert time.monotonic() - started < 30


def test_a_password_in_an_import_uri_is_masked_in_error_labels(tmp_path: Path) -> None:
    program = tmp_path / "p.as"
    program.write_text(
        """
import tool Api from "http://robot:hunter2-secret@127.0.0.1:9"

main agent Caller {
    main func() {
        Api.get({ url: "/x", timeout: 2000 })
    }
}
"""
    )
    with pytest.raises(agentscript.ExecutionError) as failed:
        agentscript.run(program, {}, config())
    message = failed.value.located()
    assert "Tool Api.get (http://robot:***@127.0.0.1:9) failed" in message
    assert "hunter2-secret" not in message
