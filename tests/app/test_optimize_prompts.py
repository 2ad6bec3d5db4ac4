"""`agentscript optimize` changing prompts: instructions proposed by a model from the failing
cases' journaled prompts, and worked examples from the passing ones. A local OpenAI-wire
server answers right only when a given instruction or the examples are in the prompt, so the
search, the proposals, the written source, resume and the cost bound are checked exactly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agentscript.cli.main import main
from openai_wire import serving, user_message

PROGRAM = """import llm Model from "openai://base"

main agent Triage {
    model Model
    role "support triage"
    description "Sorts tickets."

    main func(input { ticket: string }) {
        use input.ticket as "ticket"
        generate({ input: "Label the ticket." }) -> { label: "billing" | "bug" | "other" }
    }
}
"""

GOOD = "Label the ticket billing when it mentions a charge or an invoice, else bug."
VAGUE = "Think about the ticket."

TICKETS = [
    ("I was charged twice", "billing"),
    ("The export button is broken", "bug"),
    ("My invoice is wrong", "billing"),
    ("The page is broken after saving", "bug"),
]


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


def is_proposer(prompt: str) -> bool:
    return "cases answered wrong" in prompt


def right_label(prompt: str) -> str:
    """The ticket's label, read from the line after `ticket:` (not from the examples)."""
    lines = prompt.splitlines()
    ticket = lines[lines.index("ticket:") + 1].lower()
    return "billing" if ("charged" in ticket or "invoice" in ticket) else "bug"


def knows_with_instruction(model: str, body: dict[str, Any]) -> str:
    """Proposes GOOD and VAGUE; right only when GOOD is the instruction, else "other"."""
    prompt = user_message(body)
    if is_proposer(prompt):
        return json.dumps({"instructions": [VAGUE, GOOD, VAGUE, ""]})
    return json.dumps({"label": right_label(prompt) if GOOD in prompt else "other"})


def learns_from_examples(model: str, body: dict[str, Any]) -> str:
    """Gets billing tickets right, bug tickets right only once examples are in the prompt."""
    prompt = user_message(body)
    if is_proposer(prompt):
        return json.dumps({"instructions": []})
    label = right_label(prompt)
    if label == "bug" and "Worked examples" not in prompt:
        label = "other"
    return json.dumps({"label": label})


def optimize(tmp_path: Path, server: Any, *args: str) -> tuple[int, dict[str, Any]]:
    program, data = tmp_path / "triage.as", tmp_path / "cases.jsonl"
    out = tmp_path / "out"
    command = [
        "optimize", str(program), "--data", str(data), "--field", "label",
        "--out", str(out), "--json", "--workspace", str(tmp_path), *args,
    ]  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        for name, value in server.environ().items():
            patch.setenv(name, value)
        code = main(command)
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
    return code, report


def test_the_plan_counts_proposals_and_examples_before_spending(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program, data = write_workspace(tmp_path)
    with serving(knows_with_instruction) as server:
        code = main(["optimize", str(program), "--data", str(data), "--dry-run", "--json"])
    assert code == 0 and server.requests == []
    plan = json.loads(capsys.readouterr().out)
    kinds = {choice["kind"]: choice for choice in plan["labels"]}
    assert kinds["instruction"]["label"] == "instruction triage.as#Triage.__main:10"
    assert kinds["instruction"]["candidates"] == [
        "written", "proposed-1", "proposed-2", "proposed-3",
    ]  # fmt: skip
    assert kinds["examples"]["candidates"] == ["none", "examples"]
    # 4 instructions × 2 example choices = 8 trials on 12 cases, 2 runs on 8 held out, one
    # call a run; one proposal of at most 2 calls (its attempts).
    assert plan["trials"] == 8 and plan["proposal_runs"] == 1
    assert plan["max_calls"] == 12 * 8 + 2 * 8 + 2


def test_a_proposed_instruction_that_holds_out_is_written_into_the_source(
    tmp_path: Path,
) -> None:
    program, _ = write_workspace(tmp_path)
    with serving(knows_with_instruction) as server:
        code, report = optimize(tmp_path, server, "--demos", "0")
    assert code == 0 and report["accepted"], report["reason"]
    site = "triage.as#Triage.__main:10"
    # Distinct, non-empty proposals other than the current text, in the order given.
    assert report["prompts"][site]["proposed"] == [VAGUE, GOOD]
    assert report["winner"] == f"instruction {site}=proposed-2"
    proposer_prompts = [p for p in map(user_message, server.requests) if is_proposer(p)]
    assert len(proposer_prompts) == 1
    # The proposer read the failing cases: their journaled prompts, answers and expectations.
    shown = proposer_prompts[0]
    assert "current instruction:\nLabel the ticket." in shown
    assert '"answer": {"label": "other"}, "expected": "billing"' in shown
    assert (
        '"prompt": "ticket:\\nI was charged twice (0)\\nInstruction:\\nLabel the ticket."' in shown
    )
    optimized = (tmp_path / "out" / "optimized" / "triage.as").read_text()
    assert f'generate({{ input: "{GOOD}" }})' in optimized
    assert "// optimized: a proposed instruction (held-out +" in optimized
    assert main(["check", str(tmp_path / "out" / "optimized" / "triage.as")]) == 0
    # Fewer proposals came back than were asked for: the bound shrinks with them.
    calls = report["calls"]
    assert calls["spent"] <= calls["estimated_after_proposals"] < calls["estimated_max"]
    assert program.read_text() == PROGRAM


def test_worked_examples_from_passing_cases_go_before_the_generate(tmp_path: Path) -> None:
    write_workspace(tmp_path)
    with serving(learns_from_examples) as server:
        code, report = optimize(tmp_path, server, "--instructions", "0", "--demos", "2")
    assert code == 0 and report["accepted"], report["reason"]
    site = "triage.as#Triage.__main:10"
    assert report["winner"] == f"examples {site}=examples"
    examples = report["prompts"][site]["examples"]
    assert examples.count("Input: ") == 2 and '"label": "billing"' in examples
    optimized = (tmp_path / "out" / "optimized" / "triage.as").read_text()
    lines = optimized.splitlines()
    generate = next(i for i, line in enumerate(lines) if "generate(" in line)
    assert lines[generate - 2].strip().startswith("// optimized: worked examples (held-out +")
    assert lines[generate - 1].startswith('        use "Worked examples')
    assert lines[generate - 1].endswith('< 1k as "worked examples"')
    assert main(["check", str(tmp_path / "out" / "optimized" / "triage.as")]) == 0
    # Trials answer with the examples in the prompt; held out, they still help.
    assert report["held_out"]["low"] > 0
    assert not any(is_proposer(user_message(body)) for body in server.requests)


def test_a_resumed_optimization_tries_the_same_proposals_without_asking_again(
    tmp_path: Path,
) -> None:
    write_workspace(tmp_path)
    with serving(knows_with_instruction) as server:
        code, report = optimize(tmp_path, server, "--demos", "0", "--max-calls", "20")
        assert code == 1 and report["stopped"]
        code, report = optimize(tmp_path, server, "--demos", "0")
        proposer_asks = sum(is_proposer(user_message(body)) for body in server.requests)
    assert code == 0 and report["accepted"]
    assert proposer_asks == 1
    prompts = json.loads(next((tmp_path / "out").glob("prompts-*.json")).read_text())
    assert prompts == report["prompts"]


def test_no_failing_case_means_nothing_to_propose(tmp_path: Path) -> None:
    write_workspace(tmp_path)

    def always_right(model: str, body: dict[str, Any]) -> str:
        prompt = user_message(body)
        assert not is_proposer(prompt), "the proposer was asked with nothing to learn from"
        return json.dumps({"label": right_label(prompt)})

    with serving(always_right) as server:
        code, report = optimize(tmp_path, server, "--demos", "0")
    site = "triage.as#Triage.__main:10"
    assert code == 0 and report["accepted"] is False
    assert report["prompts"][site]["proposed"] == []
    assert report["reason"] == "no trial beat the baseline on the training cases"
    assert len(server.requests) == 12  # the baseline's training cases only


def test_a_proposer_that_fails_leaves_the_instruction_as_written(tmp_path: Path) -> None:
    write_workspace(tmp_path)

    def broken_proposer(model: str, body: dict[str, Any]) -> str:
        prompt = user_message(body)
        if is_proposer(prompt):
            return "not json"
        return json.dumps({"label": "other"})

    with serving(broken_proposer) as server:
        code, report = optimize(tmp_path, server, "--demos", "0")
    site = "triage.as#Triage.__main:10"
    assert code == 0 and report["accepted"] is False
    assert report["prompts"][site]["proposed"] == []
    assert report["prompts"][site]["error"].startswith(f"the proposer failed at {site}:")
    # Both of its attempts count in what was spent.
    assert report["calls"]["spent"] == 12 + 2 == len(server.requests)


WRITER = PROGRAM.replace(
    'import llm Model from "openai://base"',
    'import llm Model from "openai://base"\nimport tool File from "file://workspace"',
).replace(
    '        generate({ input: "Label the ticket." })',
    '        File.write({ path: "notes/" + input.ticket + ".md", content: "seen" })\n'
    '        generate({ input: "Label the ticket." })',
)


def test_trials_have_no_effect_unless_allowed_and_then_every_effect_is_undone(
    tmp_path: Path,
) -> None:
    write_workspace(tmp_path)
    (tmp_path / "triage.as").write_text(WRITER, encoding="utf-8")
    with serving(learns_from_examples) as server:
        code, mocked = optimize(tmp_path, server, "--instructions", "0")
        assert code == 0 and mocked["effects"] is None
        assert not (tmp_path / "notes").exists()  # the mock tools answered
        shutil.rmtree(tmp_path / "out")  # not a resume: the trials run again, for real
        code, real = optimize(
            tmp_path, server, "--instructions", "0", "--allow-effects", "--approve", "auto"
        )
    assert code == 0, real
    effects = real["effects"]
    # Every trial run wrote one file; each was undone once its cell was scored.
    runs = 12 * real["plan"]["trials"] + 2 * 8
    assert effects == {"recorded": runs, "undone": runs, "not_undone": []}
    assert list((tmp_path / "notes").glob("*.md")) == []
