"""`run --replay RUN`, `runs export --cassette` and `runs resume` from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentscript.cli.main import main
from agentscript.providers.storage.cassette_file import write_cassette
from agentscript.runtime.ports import Cassette
from agentscript.runtime.secrets import SecretSet

PROGRAM = """
import llm M from "openai://m"
import tool File from "file://workspace"

agent Notes {
  model M
  role "note taker"
  description "Writes notes."
  main func(input { topics: list[string] }) {
    old = File.read({ path: "seed.md" })
    written = []
    for topic in input.topics max 10 {
      use topic
      note = generate({ input: "Write a note." }) -> { text }
      File.write({ path: topic + ".md", content: note.text })
      written.add(topic)
    }
    { written: written, seed: old }
  }
}
"""
ANSWERS = {"Notes": [{"text": "one"}, {"text": "two"}, {"text": "three"}]}
INPUT = '{"topics": ["a", "b", "c"]}'


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.as").write_text(PROGRAM)
    (tmp_path / "seed.md").write_text("seed\n")
    (tmp_path / "answers.json").write_text(json.dumps(ANSWERS))
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], workspace: Path, *extra: str) -> tuple[int, str, str]:
    program = str(workspace / "notes.as")
    return cli(capsys, "run", program, "--input", INPUT, "--no-learn", "--quiet", *extra)


def mocked(
    capsys: pytest.CaptureFixture[str], workspace: Path, *extra: str
) -> tuple[int, str, str]:
    answers = str(workspace / "answers.json")
    return run(capsys, workspace, "--mock", answers, "--approve", "auto", *extra)


def runs(capsys: pytest.CaptureFixture[str], workspace: Path, *args: str) -> tuple[int, str, str]:
    return cli(capsys, "runs", *args, "--workspace", str(workspace))


def files(workspace: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(workspace.glob("*.md"))}


def test_replay_of_a_journaled_run_needs_no_model_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    code, recorded, err = mocked(capsys, workspace)
    assert code == 0, err
    written = files(workspace)
    for path in workspace.glob("[abc].md"):
        path.unlink()

    code, replayed, err = run(capsys, workspace, "--replay", "last", "--approve", "deny")

    assert code == 0, err
    assert replayed == recorded
    assert files(workspace) == {"seed.md": "seed\n"}
    assert len(written) == 4


def test_replay_tools_effects_runs_reads_live(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    assert mocked(capsys, workspace)[0] == 0
    (workspace / "seed.md").write_text("changed seed\n")

    code, out, err = run(capsys, workspace, "--replay", "last", "--replay-tools", "effects")

    assert code == 0, err
    assert json.loads(out)["seed"] == "changed seed\n"


def test_a_changed_program_stops_the_replay_with_a_diff(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    assert mocked(capsys, workspace)[0] == 0
    program = workspace / "notes.as"
    program.write_text(PROGRAM.replace("Write a note.", "Write a short note."))

    code, _, err = run(capsys, workspace, "--replay", "last")

    assert code == 1
    assert "has no recorded answer for Notes.__main" in err
    assert "notes.as:" in err.splitlines()[0]
    assert "-Write a note." in err and "+Write a short note." in err
    assert "--replay-lenient" in err
    assert "Traceback" not in err


def test_lenient_replay_answers_the_changed_call_from_the_live_model(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    assert mocked(capsys, workspace)[0] == 0
    first = workspace / "notes.as"
    first.write_text(PROGRAM.replace("Write a note.", "Write a short note."))
    answers = str(workspace / "answers.json")

    code, out, err = run(
        capsys, workspace, "--replay", "last", "--replay-lenient", "--mock", answers
    )

    assert code == 0, err
    assert json.loads(out)["written"] == ["a", "b", "c"]


def test_export_writes_a_cassette_that_replays_without_the_journal(
    capsys: pytest.CaptureFixture[str], workspace: Path, tmp_path: Path
) -> None:
    code, recorded, err = mocked(capsys, workspace)
    assert code == 0, err
    cassette = tmp_path / "cassettes" / "notes.jsonl"

    code, _, err = runs(capsys, workspace, "export", "last", "--cassette", str(cassette))

    assert code == 0, err
    assert "3 model exchanges, 4 tool calls, 0 memory calls" in err
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert [line.get("kind", "model") for line in lines] == ["model"] * 3 + ["tool"] * 4
    code, replayed, err = run(capsys, workspace, "--replay", str(cassette), "--no-journal")
    assert code == 0, err
    assert replayed == recorded


def test_a_cassette_never_holds_a_provider_key(tmp_path: Path) -> None:
    cassette = Cassette("test", model=[{"digest": "d", "raw_text": "the key is sk-live-123"}])
    write_cassette(cassette, tmp_path / "c.jsonl", SecretSet(["sk-live-123"]))
    assert "sk-live-123" not in (tmp_path / "c.jsonl").read_text()
    assert "[REDACTED]" in (tmp_path / "c.jsonl").read_text()


def test_resume_finishes_a_run_stopped_by_its_budget_without_repeating_it(
    capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    code, out, err = mocked(capsys, workspace, "--max-calls", "2")
    assert code == 1 and "Run budget exceeded" in err
    assert files(workspace) == {"a.md": "one", "b.md": "two", "seed.md": "seed\n"}
    (workspace / "a.md").write_text("edited by hand")  # a repeated write would undo this
    answers = {"Notes": [{"text": "three"}]}  # only the call the budget stopped is asked
    (workspace / "rest.json").write_text(json.dumps(answers))

    code, out, err = runs(
        capsys,
        workspace,
        "resume",
        "last",
        "--mock",
        str(workspace / "rest.json"),
        "--approve",
        "auto",
        "--max-calls",
        "1",  # fresh budgets, for the live part only: the two answered calls are free
        "--no-learn",
    )

    assert code == 0, err
    assert json.loads(out)["value"] == {"written": ["a", "b", "c"], "seed": "seed\n"}
    assert "usage: 1 model call," in err
    assert files(workspace)["a.md"] == "edited by hand"
    assert files(workspace)["c.md"] == "three"
    code, shown, err = runs(capsys, workspace, "show", "last")
    start = json.loads(shown)["entries"][0]["data"]
    code, listed, err = runs(capsys, workspace, "list", "--json")
    assert start["resumed_from"] == json.loads(listed)[1]["id"]


def test_a_finished_run_is_not_resumed(capsys: pytest.CaptureFixture[str], workspace: Path) -> None:
    assert mocked(capsys, workspace)[0] == 0

    code, _, err = runs(capsys, workspace, "resume", "last", "--mock")

    assert code == 1
    assert "is ok, nothing to resume; replay it with `run --replay`" in err
