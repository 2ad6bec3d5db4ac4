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


# ------------------------------------------------------- the journal is untrusted input


def stopped_run(capsys: pytest.CaptureFixture[str], workspace: Path) -> None:
    code, _, err = mocked(capsys, workspace, "--max-calls", "2")
    assert code == 1 and "Run budget exceeded" in err
    (workspace / "rest.json").write_text(json.dumps({"Notes": [{"text": "three"}]}))


def resume(capsys: pytest.CaptureFixture[str], workspace: Path) -> tuple[int, str, str]:
    return runs(
        capsys, workspace, "resume", "last", "--mock", str(workspace / "rest.json"),
        "--approve", "auto", "--no-learn",
    )  # fmt: skip


def forge(folder: Path, **columns: str) -> None:
    """Change the last run's row of the journal as a hostile repository could ship it."""
    import sqlite3

    with sqlite3.connect(folder / ".agentscript" / "runs.db") as journal:
        for column, value in columns.items():
            journal.execute(
                f"UPDATE runs SET {column} = ? WHERE run_id = "
                "(SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 1)",
                (value,),
            )


def test_a_resume_never_runs_a_program_or_writes_outside_its_own_workspace(
    capsys: pytest.CaptureFixture[str], workspace: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "notes.as").write_text(PROGRAM)
    stopped_run(capsys, workspace)
    forge(workspace, workspace="/", program=str(elsewhere / "notes.as"))

    code, _, err = resume(capsys, workspace)

    assert code != 0
    assert "is not a file inside this workspace" in err
    assert "Traceback" not in err
    assert list(elsewhere.iterdir()) == [elsewhere / "notes.as"]


def test_a_copied_workspace_resumes_its_own_copy(
    capsys: pytest.CaptureFixture[str],
    workspace: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import shutil

    stopped_run(capsys, workspace)
    copy = tmp_path_factory.mktemp("copy") / "notes"
    shutil.copytree(workspace, copy)
    monkeypatch.chdir(copy)  # `agentscript runs resume last` in the copy, no --workspace

    code, _, err = cli(
        capsys, "runs", "resume", "last", "--mock", str(copy / "rest.json"), "--approve",
        "auto", "--no-learn",
    )  # fmt: skip

    assert code == 0, err
    assert files(copy)["c.md"] == "three"
    assert "c.md" not in files(workspace)  # the original folder is left alone


def test_a_run_is_resumed_once(capsys: pytest.CaptureFixture[str], workspace: Path) -> None:
    stopped_run(capsys, workspace)
    code, _, err = runs(
        capsys, workspace, "resume", "last", "--mock", str(workspace / "rest.json"),
        "--approve", "auto", "--no-learn",
    )  # fmt: skip
    assert code == 0, err
    code, shown, _ = runs(capsys, workspace, "list", "--json")
    stopped = json.loads(shown)[-1]["id"]

    code, _, err = runs(capsys, workspace, "resume", stopped, "--mock", "--approve", "auto")

    assert code != 0
    assert f"Run {stopped} was resumed already, by run" in err
