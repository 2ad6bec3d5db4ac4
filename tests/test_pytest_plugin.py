"""The pytest plugin, found through its entry point by a real pytest run in a fresh folder:
a program replayed from a cassette, and an eval's score asserted (passing and failing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import agentscript
from eval_support import example_copy

USER_TESTS = """
from agentscript.testing import assert_score

FOLDER = {folder!r}


def test_replayed_run(agentscript_run):
    result = agentscript_run(FOLDER + "/classifier.as", {{"ticket": "I was charged twice"}},
                             cassette={cassette!r})
    assert result.value["label"] == "billing"


def test_eval_passes(agentscript_eval):
    report = agentscript_eval(FOLDER + "/classifier.as", FOLDER + "/cases.jsonl",
                              mock=FOLDER + "/answers.json", field="label")
    assert_score(report, 0.8)


def test_eval_fails(agentscript_eval):
    report = agentscript_eval(FOLDER + "/classifier.as", FOLDER + "/cases.jsonl",
                              mock=FOLDER + "/answers.json", field="label")
    assert_score(report, 0.95)
"""


def test_plugin_fixtures_and_score_assertion(tmp_path: Path) -> None:
    folder = example_copy(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"label": "billing", "reason": "a charge"}]))
    cassette = tmp_path / "charged.jsonl"
    agentscript.run(
        folder / "classifier.as",
        {"ticket": "I was charged twice"},
        agentscript.RunConfig(
            model="mock", responses=script, record=cassette, journal=False, learn=False
        ),
    )
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_agent.py").write_text(
        USER_TESTS.format(folder=str(folder), cassette=str(cassette))
    )
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite)],
        cwd=suite,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = finished.stdout
    assert "2 passed, 1 failed" in output or "1 failed, 2 passed" in output, output
    assert "program: mean score 0.800 < 0.95" in output
    assert "t12 [program] score 0.00" in output
    # The fixtures journal into the test's own tmp_path, never next to the program.
    assert not (folder / ".agentscript").exists()
