"""`runs view` writes a run's page; `runs export --otlp` and `run --otel` send spans."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentscript.cli.main import main
from agentscript.providers.telemetry.otel import wait_for_telemetry
from local_http import LocalHTTPServer
from otlp_support import Collector, closed_port

PROGRAM = """
import llm M from "openai://gpt-4.1-mini"

agent Notes {
  model M
  role "note taker"
  description "Writes one note."
  main func(input { topic: string }) {
    use input.topic
    return generate({ input: "Write a note." }) -> { text }
  }
}
"""


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.as").write_text(PROGRAM)
    (tmp_path / "answers.json").write_text(json.dumps({"Notes": [{"text": "A note."}]}))
    return tmp_path


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = LocalHTTPServer(host="127.0.0.1")
    server.start()
    try:
        yield Collector(server)
    finally:
        server.stop()


def run_notes(capsys: pytest.CaptureFixture[str], workspace: Path, *extra: str) -> None:
    code, _, err = cli(
        capsys,
        "run",
        str(workspace / "notes.as"),
        "--mock",
        str(workspace / "answers.json"),
        "--input",
        '{"topic": "pages"}',
        *extra,
    )
    assert code == 0, err


def test_runs_view_writes_the_last_runs_page_beside_the_journal(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    run_notes(capsys, workspace)
    code, out, err = cli(capsys, "runs", "view", "--workspace", str(workspace))
    assert code == 0, err
    page = Path(out.strip())
    assert page.parent == Path(str(workspace)) / ".agentscript" / "views"
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "Write a note." in html


def test_runs_view_out_names_the_file(
    capsys: pytest.CaptureFixture[str], workspace: Path, tmp_path: Path
) -> None:
    run_notes(capsys, workspace)
    target = tmp_path / "pages" / "run.html"
    code, out, _ = cli(
        capsys, "runs", "view", "last", "--out", str(target), "--workspace", str(workspace)
    )
    assert code == 0 and out.strip() == str(target) and target.exists()


def test_runs_view_of_an_unknown_run_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    run_notes(capsys, workspace)
    code, _, err = cli(capsys, "runs", "view", "nope", "--workspace", str(workspace))
    assert code != 0 and "No run 'nope'" in err and "Traceback" not in err


def test_run_otel_sends_the_run_and_runs_export_sends_it_again(
    capsys: pytest.CaptureFixture[str],
    workspace: Path,
    collector: Collector,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
    run_notes(capsys, workspace, "--otel")
    wait_for_telemetry(10)
    live = sorted(span.name for span in collector.spans)
    assert live == ["chat gpt-4.1-mini", "invoke_workflow notes.as"]
    collector.spans.clear()
    code, out, err = cli(capsys, "runs", "export", "last", "--otlp", "--workspace", str(workspace))
    assert code == 0, err
    assert out.startswith("sent run ") and "2 spans to " + collector.endpoint in out
    assert sorted(span.name for span in collector.spans) == live


def test_runs_export_to_a_collector_that_is_down_fails_clearly(
    capsys: pytest.CaptureFixture[str], workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_notes(capsys, workspace)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "500")
    endpoint = f"http://127.0.0.1:{closed_port()}"
    code, _, err = cli(
        capsys,
        "runs",
        "export",
        "last",
        "--otlp",
        "--endpoint",
        endpoint,
        "--workspace",
        str(workspace),
    )
    assert code == 1
    assert "could not send run" in err and endpoint in err and "Traceback" not in err


def test_runs_view_open_hands_the_page_to_the_browser(
    capsys: pytest.CaptureFixture[str], workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_notes(capsys, workspace)
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url: opened.append(url) or True)
    code, out, _ = cli(capsys, "runs", "view", "--open", "--workspace", str(workspace))
    assert code == 0
    assert opened == [Path(out.strip()).resolve().as_uri()]


def test_a_forged_run_id_never_becomes_a_path_outside_views(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    import sqlite3

    run_notes(capsys, workspace)
    forged = "../../escaped"
    with sqlite3.connect(workspace / ".agentscript" / "runs.db") as journal:
        (real,) = journal.execute("SELECT run_id FROM runs").fetchone()
        for table in ("runs", "entries"):
            journal.execute(f"UPDATE {table} SET run_id = ? WHERE run_id = ?", (forged, real))
    code, _, err = cli(capsys, "runs", "view", "last", "--workspace", str(workspace))
    assert code != 0
    assert "a run id that is not a plain name: '../../escaped'" in err
    assert "Traceback" not in err
    assert not (workspace.parent / "escaped.html").exists()
    assert not list(workspace.parent.glob("**/escaped.html"))
