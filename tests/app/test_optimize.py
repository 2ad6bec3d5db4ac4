"""`agentscript optimize` against a local OpenAI-wire server whose answers depend on the prompt:
right when the label guide is in it (or for the `good` model), so search, the held-out gate,
resume, the cost bound and the rewritten source are checked exactly."""

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

from agentscript.app.evals.cases import load_cases
from agentscript.app.optimize.runner import split_cases
from agentscript.cli.main import main
from openai_wire import serving, user_message

PROGRAM = """import llm Model from "openai://base"

main agent Triage {
    model Model
    role "support triage"
    description "Sorts tickets."

    main func(input { ticket: string }) {
        use input.ticket as "ticket"
        use one of {
            none: empty selected
            guide: "billing: charges and invoices. bug: something broken."
        } as "label guide"
        generate({ input: "Label the ticket: billing, bug or other." }) -> { label: string }
    }
}
"""

TICKETS = [
    ("I was charged twice", "billing"),
    ("The export button is broken", "bug"),
    ("My invoice is wrong", "billing"),
    ("The page is broken after saving", "bug"),
]


# These tests search the `use one of` label and the model; test_optimize_prompts.py the
# instructions and worked examples.
LABELS_ONLY = ("--instructions", "0", "--demos", "0")


def write_workspace(tmp_path: Path, cases: int = 20) -> tuple[Path, Path]:
    program = tmp_path / "triage.as"
    program.write_text(PROGRAM, encoding="utf-8")
    data = tmp_path / "cases.jsonl"
    rows = []
    for index in range(cases):
        text, label = TICKETS[index % len(TICKETS)]
        rows.append(
            {"id": f"c{index:02d}", "input": {"ticket": f"{text} ({index})"}, "expected": label}
        )
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return program, data


def ticket_in(prompt: str) -> str:
    """The ticket's text: the line after its label in the prompt (`ticket:`, or
    `[ticket] input.ticket:` in the 0.1.0 layout)."""
    lines = prompt.splitlines()
    label = next(i for i, line in enumerate(lines) if line.startswith(("ticket:", "[ticket]")))
    return lines[label + 1]


def guided(model: str, body: dict[str, Any]) -> str:
    """Right when the guide is in the prompt, or when the model is `good`; else "other"."""
    prompt = user_message(body)
    ticket = ticket_in(prompt).lower()
    knows = "billing: charges" in prompt or model == "good"
    label = "other"
    if knows:
        label = "billing" if ("charged" in ticket or "invoice" in ticket) else "bug"
    return json.dumps({"label": label})


def optimize(tmp_path: Path, server: Any, *args: str) -> tuple[int, dict[str, Any]]:
    program, data = tmp_path / "triage.as", tmp_path / "cases.jsonl"
    out = tmp_path / "out"
    command = [
        "optimize", str(program), "--data", str(data), "--field", "label",
        "--out", str(out), "--json", *LABELS_ONLY, *args,
    ]  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        for name, value in server.environ().items():
            patch.setenv(name, value)
        code = main(command)
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
    return code, report


def test_dry_run_prints_the_plan_and_its_most_calls_and_sends_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program, data = write_workspace(tmp_path)
    with serving(guided) as server:
        code = main(
            ["optimize", str(program), "--data", str(data), "--dry-run", "--json", *LABELS_ONLY]
        )
    assert code == 0 and server.requests == []
    plan = json.loads(capsys.readouterr().out)
    # 12 training cases × 2 trials, then baseline and winner on the 8 held out: 1 call a run.
    assert plan["trials"] == 2 and (plan["train"], plan["held_out"]) == (12, 8)
    assert plan["runs"] == 12 * 2 + 2 * 8 and plan["max_calls"] == 40
    assert plan["labels"][0]["candidates"] == ["none", "guide"]


def test_a_winner_that_holds_out_is_written_into_the_source_and_spends_what_was_estimated(
    tmp_path: Path,
) -> None:
    program, _ = write_workspace(tmp_path)
    with serving(guided) as server:
        code, report = optimize(tmp_path, server)
    assert code == 0
    assert report["accepted"] is True, report["reason"]
    assert report["winner"] == "label guide=guide" and report["baseline"] == "label guide=none"
    assert report["held_out"]["low"] > 0
    assert report["calls"]["spent"] == report["calls"]["estimated_max"] == len(server.requests)
    optimized = (tmp_path / "out" / "optimized" / "triage.as").read_text()
    assert "none: empty\n" in optimized
    assert 'guide: "billing: charges and invoices. bug: something broken." selected' in optimized
    assert "// optimized: label guide = guide (held-out +" in optimized
    diff = (tmp_path / "out" / "optimized.diff").read_text()
    assert diff.startswith("--- a/triage.as\n+++ b/triage.as\n")
    assert program.read_text() == PROGRAM  # not applied without --apply


def test_apply_writes_an_accepted_winner_in_place_and_it_checks_clean(tmp_path: Path) -> None:
    program, _ = write_workspace(tmp_path)
    with serving(guided) as server:
        code, report = optimize(tmp_path, server, "--apply")
    assert code == 0 and report["accepted"]
    assert program.read_text() == (tmp_path / "out" / "optimized" / "triage.as").read_text()
    assert main(["check", str(program)]) == 0


def test_a_gain_only_on_the_training_cases_is_refused(tmp_path: Path) -> None:
    program, data = write_workspace(tmp_path)
    train, _ = split_cases(load_cases(data), 0.6, 0)
    trained = {case.input["ticket"] for case in train}

    def overfit(model: str, body: dict[str, Any]) -> str:
        prompt = user_message(body)
        if "billing: charges" in prompt and ticket_in(prompt) in trained:
            return guided(model, body)
        return json.dumps({"label": "other"})

    with serving(overfit) as server:
        code, report = optimize(tmp_path, server, "--apply")
    assert code == 0 and report["accepted"] is False
    assert "reaches 0: the program is unchanged" in report["reason"]
    assert program.read_text() == PROGRAM
    assert not (tmp_path / "out" / "optimized").exists()


def test_the_model_is_a_choice_too(tmp_path: Path) -> None:
    write_workspace(tmp_path)

    def by_model(model: str, body: dict[str, Any]) -> str:
        # The guide helps no model here: only `good` knows the labels.
        if model == "good":
            return guided(model, body)
        return json.dumps({"label": "other"})

    with serving(by_model) as server:
        code, report = optimize(
            tmp_path, server, "--model", "openai://bad", "--model", "openai://good",
            "--strategy", "search",
        )  # fmt: skip
    assert code == 0 and report["accepted"]
    assert report["winner"].startswith("openai://good")
    optimized = (tmp_path / "out" / "optimized" / "triage.as").read_text()
    assert 'import llm Model from "openai://good"' in optimized


def test_a_stopped_run_resumes_without_sending_a_request_twice(tmp_path: Path) -> None:
    write_workspace(tmp_path)
    with serving(guided) as server:
        code, report = optimize(tmp_path, server, "--max-calls", "7")
        assert code == 1 and report["stopped"] and report["accepted"] is False
        first = [json.dumps(body, sort_keys=True) for body in server.requests]
        assert len(first) <= 7
        code, report = optimize(tmp_path, server)
        assert code == 0 and report["accepted"]
        again = [json.dumps(body, sort_keys=True) for body in server.requests[len(first) :]]
    assert not set(first) & set(again)
    assert len(first) + len(again) == report["plan"]["max_calls"]


def test_nothing_to_search_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, data = write_workspace(tmp_path)
    plain = tmp_path / "hello.as"
    plain.write_text(
        'import llm M from "openai://x"\nmain agent A {\n  model M\n  role "r"\n'
        '  description "d"\n  main func() {\n    generate({ input: "Hi" }) -> { a }\n  }\n}\n'
    )
    assert main(["optimize", str(plain), "--data", str(data), "--dry-run", *LABELS_ONLY]) == 2
    assert "Nothing to optimize" in capsys.readouterr().err


TWO_STEPS = PROGRAM.replace(
    """        use input.ticket as "ticket"
        use one of {""",
    """        use input.ticket as "ticket"
        gist = generate({ input: "Say what the ticket is about." }) -> { gist: string }
        use gist.gist as "gist"
        use one of {""",
)


def test_a_prompt_asked_in_an_earlier_trial_is_answered_from_the_cache(tmp_path: Path) -> None:
    write_workspace(tmp_path)
    (tmp_path / "triage.as").write_text(TWO_STEPS, encoding="utf-8")

    def answer(model: str, body: dict[str, Any]) -> str:
        if "Say what the ticket is about." in user_message(body):
            return json.dumps({"gist": "a ticket"})
        return guided(model, body)

    with serving(answer) as server:
        code, report = optimize(tmp_path, server)
    assert code == 0 and report["accepted"]
    # The first generate's prompt is the same in every trial: asked once per case. 12 cases
    # train, 8 are held out; two trials on each.
    assert report["cache"] == {"hits": 12 + 8, "misses": 60, "hit_rate": 0.25}
    assert len(server.requests) == report["cache"]["misses"]
    assert report["calls"]["spent"] == report["calls"]["estimated_max"] == 80


def test_a_killed_optimization_resumes_without_asking_a_finished_cell_again(
    tmp_path: Path,
) -> None:
    program, data = write_workspace(tmp_path)
    out = tmp_path / "out"
    command = [
        sys.executable, "-m", "agentscript", "optimize", str(program), "--data", str(data),
        "--field", "label", "--out", str(out), "--json", *LABELS_ONLY,
    ]  # fmt: skip
    # Five cells are answered; the sixth waits at the server until the kill.
    with serving(guided, hold_after=5) as server:
        environ = {**os.environ, **server.environ()}
        process = subprocess.Popen(command, env=environ, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and finished_rows(out) < 5:
            time.sleep(0.05)
        assert finished_rows(out) == 5
        process.kill()
        process.wait()
        server.release()
        before = [json.dumps(body, sort_keys=True) for body in server.requests]
        finished = subprocess.run(command, env=environ, capture_output=True, timeout=120)
        after = [json.dumps(body, sort_keys=True) for body in server.requests[len(before) :]]
    assert finished.returncode == 0, finished.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["accepted"]
    # The five answered cells are never asked again; the one in flight at the kill may be.
    assert len(set(before[:5]) & set(after)) == 0
    assert len(before) + len(after) - 1 <= report["plan"]["max_calls"]


def finished_rows(out: Path) -> int:
    return sum(
        len(path.read_text().splitlines()) for path in out.glob("trials-*.jsonl") if path.exists()
    )


def test_ctrl_c_stops_an_optimization_with_130_and_the_rerun_resumes(tmp_path: Path) -> None:
    program, data = write_workspace(tmp_path)
    out = tmp_path / "out"
    command = [
        sys.executable, "-m", "agentscript", "optimize", str(program), "--data", str(data),
        "--field", "label", "--out", str(out), "--json", *LABELS_ONLY,
    ]  # fmt: skip
    with serving(guided, hold_after=3) as server:
        environ = {**os.environ, **server.environ()}
        process = subprocess.Popen(
            command, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and finished_rows(out) < 3:
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        server.release()
        _, err = process.communicate(timeout=60)
        assert process.returncode == 130, err
        assert f"Interrupted; the finished trials are in {out}" in err
        assert "Traceback" not in err
        kept = finished_rows(out)
        assert kept >= 3
        finished = subprocess.run(command, env=environ, capture_output=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["accepted"]
