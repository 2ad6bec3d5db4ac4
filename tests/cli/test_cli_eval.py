"""`agentscript eval`: exit codes, --json, --out, --report (in headless Chromium), and a
crash in the middle of an eval resumed from its results file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentscript.cli.main import main
from browser import Browser
from eval_support import classify, example_copy
from openai_wire import serving


def eval_args(folder: Path, *extra: str) -> list[str]:
    return [
        "eval",
        str(folder / "classifier.as"),
        "--data",
        str(folder / "cases.jsonl"),
        "--mock",
        str(folder / "answers.json"),
        "--field",
        "label",
        *extra,
    ]


def test_summary_table_and_min_score_exit_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = example_copy(tmp_path)
    assert main(eval_args(folder, "--min-score", "0.8")) == 0
    table = capsys.readouterr().out
    assert "program" in table and "0.800" in table and "80%" in table
    assert "every configuration reached --min-score 0.8" in table
    assert main(eval_args(folder, "--min-score", "0.9")) == 1
    assert "below --min-score 0.9: program" in capsys.readouterr().out


def test_json_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = example_copy(tmp_path)
    assert (
        main(
            eval_args(
                folder,
                "--json",
                "--variant",
                "label guide=none",
                "--variant",
                "label guide=definitions",
            )
        )
        == 0
    )
    document = json.loads(capsys.readouterr().out)
    assert document["configurations"] == ["label guide=none", "label guide=definitions"]
    assert [s["mean_score"] for s in document["summary"]] == [0.8, 0.8]
    assert [(t["tag"], t["n"], t["mean_score"]) for t in document["tags"]] == [("hard", 4, 0.0)] * 2
    (difference,) = document["differences"]
    assert (difference["mean"], difference["low"], difference["high"]) == (0, 0, 0)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--metric", "fuzzy"], "Unknown metric 'fuzzy'"),
        (["--bogus"], "No such option '--bogus'"),
        (["--fresh"], "--fresh needs --out"),
        (["--field", "a..b"], "Invalid --field 'a..b'"),
        (["--replay", "nowhere"], "Use either --mock or --replay"),
        (["--tolerance", "0.1"], "--tolerance applies to --metric number only"),
        (["--judge-model", "openai://x"], "--judge-model needs a judge program"),
        (["--concurrency", "0"], "--concurrency"),
        (["--workers", "0"], "'0' is not a positive number or auto"),
        (["--workers", "many"], "'many' is not a positive number or auto"),
    ],
)
def test_usage_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    folder = example_copy(tmp_path)
    assert main(eval_args(folder, *extra)) == 2
    assert message in capsys.readouterr().err


def test_a_program_with_errors_exits_2_with_its_location(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = example_copy(tmp_path)
    (folder / "classifier.as").write_text("main agent {")
    assert main(eval_args(folder)) == 2
    assert "classifier.as:1:" in capsys.readouterr().err


@pytest.mark.browser
def test_report_page_in_headless_chromium(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    page = tmp_path / "report" / "eval.html"
    args = eval_args(folder, "--metric", str(folder / "judge.as"), "--report", str(page))
    assert (
        main([*args, "--variant", "label guide=none", "--variant", "label guide=definitions"]) == 0
    )
    text = page.read_text()
    assert "http://" not in text and "https://" not in text  # nothing is fetched
    with Browser.launch() as browser:
        browser.open(page.as_uri())
        assert browser.evaluate("document.querySelectorAll('#grid td.cell').length") == 40
        assert browser.evaluate("document.querySelectorAll('#grid td.cell.fail').length") == 2 * 4
        summary = browser.evaluate("document.getElementById('summary').innerText")
        assert "label guide=definitions" in summary and "0.875" in summary and "baseline" in summary
        tags = browser.evaluate("document.getElementById('tags').innerText")
        assert "hard" in tags and "0.375" in tags
        # A cell opens its value, expected value, score, reason and run.
        browser.evaluate(
            'document.querySelector(\'td.cell[data-case="t12"]'
            '[data-configuration="label guide=none"]\').click()'
        )
        detail = browser.evaluate("document.getElementById('detail').innerText")
        assert "t12 · label guide=none" in detail
        assert '"label": "bug"' in detail and '"feature"' in detail
        assert "0.000 (failed)" in detail and "feature, not bug" in detail
        # Its run id opens the run's trace, carried in the page.
        assert browser.evaluate("document.querySelector('#detail pre.trace').hidden") is True
        browser.evaluate("document.querySelector('#detail a').click()")
        trace = browser.evaluate(
            "[...document.querySelectorAll('#detail pre.trace')].find(p => !p.hidden).innerText"
        )
        assert "- generate Label the ticket" in trace
        browser.screenshot(tmp_path / "report.png", full_page=True)


@pytest.mark.browser
def test_model_text_in_the_report_stays_text(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    hostile = "</script><img src=x onerror=\"document.title='owned'\"><!--"
    script = {"cases": {"*": {"Triage": [{"label": hostile, "reason": "<b>bold</b>"}]}}}
    (folder / "hostile.json").write_text(json.dumps(script))
    page = tmp_path / "eval.html"
    args = [
        "eval", str(folder / "classifier.as"), "--data", str(folder / "cases.jsonl"),
        "--mock", str(folder / "hostile.json"), "--report", str(page), "--tag", "hard",
    ]  # fmt: skip
    assert main(args) == 0
    # As the run page: nothing but the page's own inline code and styles may load or run.
    assert (
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\';'
        in page.read_text()
    )
    with Browser.launch() as browser:
        browser.open(page.as_uri())
        assert browser.evaluate("document.title") != "owned"
        assert browser.evaluate("document.querySelectorAll('img, b').length") == 0
        browser.evaluate("document.querySelector('td.cell').click()")
        detail = browser.evaluate("document.getElementById('detail').innerText")
        assert "</script><img src=x onerror=" in detail
        assert browser.evaluate("document.title") != "owned"


@pytest.mark.parametrize(
    "parallel", [["--concurrency", "2"], ["--concurrency", "4", "--workers", "2"]]
)
def test_killed_in_the_middle_an_eval_resumes_from_its_results(
    tmp_path: Path, parallel: list[str]
) -> None:
    folder = example_copy(tmp_path)
    out = tmp_path / "out.jsonl"
    # Four cells are answered and the rest wait at the server until the kill: the eval dies
    # mid-way however fast or slow the machine is.
    with serving(classify, hold_after=4) as server:
        command = [
            sys.executable, "-m", "agentscript", "eval", str(folder / "classifier.as"),
            "--data", str(folder / "cases.jsonl"), "--model", "openai://good",
            "--field", "label", "--out", str(out), *parallel,
        ]  # fmt: skip
        environ = {**os.environ, **server.environ()}
        process = subprocess.Popen(command, env=environ, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if out.exists() and len(out.read_text().splitlines()) >= 4:
                break
            time.sleep(0.05)
        if "--workers" in parallel:
            assert len(eval_workers_of(process.pid, out)) == 2
        process.send_signal(signal.SIGKILL)
        process.wait()
        server.release()
        # Workers of the killed eval finish the cells they hold and exit: none is left.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and eval_workers_of(process.pid, out):
            time.sleep(0.1)
        assert eval_workers_of(process.pid, out) == []
        done = {
            json.loads(line)["id"] for line in out.read_text().splitlines() if line.endswith("}")
        }
        assert 4 <= len(done) < 20
        asked = len(server.requests)
        finished = subprocess.run(
            [*command, "--json"], env=environ, capture_output=True, text=True, timeout=120
        )
    assert finished.returncode == 0, finished.stderr
    document = json.loads(finished.stdout)
    assert document["resumed"] >= len(done) and document["summary"][0]["n"] == 20
    assert document["summary"][0]["mean_score"] == 1.0
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 20
    # Only the cells not finished before the kill asked the model again.
    assert len(server.requests) - asked <= 20 - len(done)


def eval_workers_of(parent: int, marker: Path) -> list[int]:
    """Live processes but `parent` whose command line names `marker`: the workers forked by
    it (a fork keeps its parent's command line), which would outlive it if they never noticed
    that it died. A zombie is not alive."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == parent:
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            command = (entry / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if state != "Z" and os.fsencode(marker) in command.split(b"\x00"):
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize(
    "parallel",
    [["--concurrency", "1"], ["--concurrency", "2"], ["--concurrency", "4", "--workers", "2"]],
)
def test_ctrl_c_keeps_the_finished_cells_and_says_how_to_resume(
    tmp_path: Path, parallel: list[str]
) -> None:
    folder = example_copy(tmp_path)
    out = tmp_path / "out.jsonl"
    # Two cells are answered; every later request waits at the server until the interrupt
    # has been sent, so the eval is stopped mid-way however fast or slow the machine is.
    with serving(classify, hold_after=2) as server:
        command = [
            sys.executable, "-m", "agentscript", "eval", str(folder / "classifier.as"),
            "--data", str(folder / "cases.jsonl"), "--model", "openai://good",
            "--field", "label", "--out", str(out), *parallel,
        ]  # fmt: skip
        process = subprocess.Popen(
            command,
            env={**os.environ, **server.environ()},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if out.exists() and len(out.read_text().splitlines()) >= 2:
                break
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        # Sent before the held cells are answered: the eval starts no cell after them.
        server.release()
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130
    assert f"Interrupted; the finished cells are in {out}" in stderr
    assert "Traceback" not in stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert 2 <= len(rows) < 20 and all(row["error"] is None for row in rows)


def test_progress_bar_at_a_terminal(tmp_path: Path) -> None:
    import pty

    folder = example_copy(tmp_path)
    leader, follower = pty.openpty()
    finished = subprocess.run(
        [sys.executable, "-m", "agentscript", *eval_args(folder)],
        stdout=subprocess.PIPE,
        stderr=follower,
        env={**os.environ, "COLUMNS": "120", "TERM": "xterm"},
        timeout=120,
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert finished.returncode == 0
    text = shown.decode(errors="replace")
    assert "20/20" in text and "errors 0" in text and "score 0.800" in text


def test_a_model_without_its_key_is_refused_before_any_cell_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = example_copy(tmp_path)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    args = ["eval", str(folder / "classifier.as"), "--data", str(folder / "cases.jsonl")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Model openai://gpt-4.1-mini: OPENAI_API_KEY is not set" in err
    assert "--mock or --replay DIR" in err
    assert not (folder / ".agentscript").exists()  # nothing ran


def test_a_report_that_cannot_be_written_is_an_error_after_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = example_copy(tmp_path)
    (tmp_path / "file").write_text("")
    assert main(eval_args(folder, "--report", str(tmp_path / "file" / "r.html"))) == 2
    captured = capsys.readouterr()
    assert "0.800" in captured.out
    assert "Cannot write the report" in captured.err and "Traceback" not in captured.err


def test_a_key_a_model_echoes_never_reaches_the_results_or_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = example_copy(tmp_path)
    key = "sk-local-test"  # what serving().environ() sets as OPENAI_API_KEY

    def echoes_the_key(model: str, body: dict[str, Any]) -> str:
        return json.dumps({"label": f"bug {key}", "reason": f"the key is {key}"})

    out, page = tmp_path / "out.jsonl", tmp_path / "report.html"
    with serving(echoes_the_key) as server:
        for name, value in server.environ().items():
            monkeypatch.setenv(name, value)
        code = main(
            [
                "eval", str(folder / "classifier.as"), "--data", str(folder / "cases.jsonl"),
                "--model", "openai://echo", "--field", "label", "--tag", "hard",
                "--out", str(out), "--report", str(page),
            ]
        )  # fmt: skip
    assert code in (0, 1)
    assert "[REDACTED]" in out.read_text()
    assert key not in out.read_text() and key not in page.read_text()
