"""A job's program as a worker loads it: kept while its files are unchanged, read again (and
refused when it no longer matches the submit) once one changes, even to the same size."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentscript.app.queue.jobs import attempt_run_id, new_job_id, pin, program_for
from agentscript.lang import ast

PROGRAM = """import llm Model from "openai://m"

main agent Echo {
    model Model
    role "echo"
    description "Answers."
    main func(input { text: string }) {
        use input.text as "text"
        generate({ input: "Answer AAAA." }) -> { reply: string }
    }
}
"""


def instruction(program: ast.Program) -> str:
    text = repr(program)
    return "AAAA" if "AAAA" in text else "BBBB" if "BBBB" in text else "?"


def test_a_changed_file_is_read_again_and_an_old_job_refused(tmp_path: Path) -> None:
    path = tmp_path / "echo.as"
    path.write_text(PROGRAM, encoding="utf-8")
    first = pin(path, {"text": "hi"})
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))  # written long before it is read
    loaded = program_for(first)
    assert isinstance(loaded, ast.Program) and instruction(loaded) == "AAAA"
    assert program_for(first) is loaded  # unchanged files: the program this worker loaded

    path.write_text(PROGRAM.replace("AAAA", "BBBB"), encoding="utf-8")  # the same size
    os.utime(path, ns=(2_000_000_000, 2_000_000_000))
    refused = program_for(first)
    assert isinstance(refused, str) and "changed since the run was submitted" in refused
    second = pin(path, {"text": "hi"})
    reloaded = program_for(second)
    assert isinstance(reloaded, ast.Program) and instruction(reloaded) == "BBBB"


def test_a_program_gone_is_a_reason_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "echo.as"
    path.write_text(PROGRAM, encoding="utf-8")
    job = pin(path, {"text": "hi"})
    path.unlink()
    reason = program_for(job)
    assert isinstance(reason, str) and "cannot be read now" in reason


def test_job_ids_are_run_ids_and_attempts_follow_them() -> None:
    from agentscript.learn.journal_store import file_safe_run_id

    ids = {new_job_id(1_764_944_000.0) for _ in range(1000)}
    assert len(ids) == 1000
    job_id = ids.pop()
    assert job_id.startswith("20251205-")
    assert attempt_run_id(job_id, 1) == job_id
    assert attempt_run_id(job_id, 3) == f"{job_id}-3"
    assert file_safe_run_id(attempt_run_id(job_id, 3))


def test_a_drawn_id_already_queued_is_drawn_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentscript.app.queue import engine

    path = tmp_path / "echo.as"
    path.write_text(PROGRAM, encoding="utf-8")
    drawn = iter(["20261205-120000-aaaaaaaaaaaa"] * 2 + ["20261205-120000-bbbbbbbbbbbb"])
    monkeypatch.setattr(engine, "new_job_id", lambda now: next(drawn))
    client = engine.QueueClient(f"sqlite:///{tmp_path / 'queue.db'}")
    try:
        ids = client.submit([pin(path, {"text": "a"}), pin(path, {"text": "b"})])
        queued = {run.workflow_id: run for run in client.runs()}
    finally:
        client.close()
    assert ids == ["20261205-120000-aaaaaaaaaaaa", "20261205-120000-bbbbbbbbbbbb"]
    assert set(queued) == set(ids)  # the second job is queued, not taken for the first
