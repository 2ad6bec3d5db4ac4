"""`host://optimizer`: a program inspects another, runs a trial with chosen picks, and writes a
specialized copy, as the original's optimizer primitives do (0.1.18)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agentscript
from openai_wire import serving, user_message

TARGET = """import llm Model from "openai://base"

main agent Triage {
    model Model
    role "support triage"
    description "Sorts tickets."

    main func(input { ticket: string }) {
        use input.ticket as "ticket"
        use one of {
            none: empty selected
            guide: "billing: charges and invoices."
        } as "label guide"
        generate({ input: "Label the ticket." }) -> { label: string }
    }
}
"""

OPTIMIZER = """import llm Model from "openai://base"
import tool Optimizer from "host://optimizer"

main agent Tuner {
    model Model
    role "tuner"
    description "Tries a pick and keeps it."

    main func(input) {
        found = Optimizer.inspect({ target: input.target })
        trial = Optimizer.trial({
            target: input.target,
            snapshot_id: found.snapshot_id,
            selection: input.selection,
            input: { ticket: "I was charged twice" }
        })
        kept = Optimizer.specialize({
            target: input.target,
            selection: input.selection,
            write: input.write
        })
        return { found: found, trial: trial, kept: kept }
    }
}
"""


def labels(model: str, body: dict[str, Any]) -> str:
    return json.dumps({"label": "billing" if "billing: charges" in user_message(body) else "other"})


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "triage.as").write_text(TARGET, encoding="utf-8")
    (tmp_path / "tuner.as").write_text(OPTIMIZER, encoding="utf-8")
    return tmp_path


def tune(workspace: Path, write: str, pick: str = "guide") -> dict[str, Any]:
    with serving(labels) as server:
        result = agentscript.run(
            workspace / "tuner.as",
            {"target": "triage.as", "selection": {SITE: pick}, "write": write},
            agentscript.RunConfig(approve="auto", journal=False, environ=server.environ()),
        )
    value: dict[str, Any] = result.value
    return value


SITE = "triage.as#Triage.__main[label guide]"


def test_inspect_lists_the_sites_and_what_the_target_picks_today(workspace: Path) -> None:
    found = tune(workspace, "preview")["found"]
    assert found["ok"] and found["target"] == "triage.as"
    assert found["variant_sites"] == [
        {
            "site_id": SITE,
            "label": "label guide",
            "selected": "none",
            "candidates": [{"name": "none"}, {"name": "guide"}],
        }
    ]
    assert found["baseline_selection"] == {SITE: "none"}
    assert found["snapshot_id"].startswith("sha256:")


def test_a_trial_runs_the_target_with_the_pick_and_says_what_it_picked(workspace: Path) -> None:
    trial = tune(workspace, "preview")["trial"]
    assert trial["ok"] and trial["result"] == {"label": "billing"}
    assert trial["picked"] == {SITE: {"variant": "guide", "reason": "trial", "empty": False}}
    assert trial["usage"]["llm_calls"] == 1 and trial["warnings"] == []


def test_specialize_previews_then_writes_a_copy_never_the_target(workspace: Path) -> None:
    preview = tune(workspace, "preview")["kept"]
    assert preview["changed"] and preview["outputs"] == []
    assert '+            guide: "billing: charges and invoices." selected' in preview["diff"]
    assert not (workspace / "triage.specialized.as").exists()
    copy = tune(workspace, "copy")["kept"]
    assert copy["outputs"] == ["triage.specialized.as"]
    written = (workspace / "triage.specialized.as").read_text()
    assert 'guide: "billing: charges and invoices." selected' in written
    assert (workspace / "triage.as").read_text() == TARGET


def test_a_pick_the_target_does_not_have_is_a_soft_error(workspace: Path) -> None:
    value = tune(workspace, "preview", pick="terse")
    assert value["trial"] == {"ok": False, "code": "unknown_variant", "site_id": SITE,
                              "variant": "terse"}  # fmt: skip


def test_a_target_outside_the_workspace_is_refused(workspace: Path, tmp_path: Path) -> None:
    with serving(labels) as server, pytest.raises(agentscript.ExecutionError, match="escapes"):
        agentscript.run(
            workspace / "tuner.as",
            {"target": "../elsewhere.as", "selection": {}, "write": "preview"},
            agentscript.RunConfig(approve="auto", journal=False, environ=server.environ()),
        )


def test_check_knows_the_host_tools_and_refuses_others(workspace: Path) -> None:
    assert agentscript.check(agentscript.load(workspace / "tuner.as")) == []
    alias = OPTIMIZER.replace("host://optimizer", "host://agentscript")
    assert agentscript.check(agentscript.load_source(alias, "alias.as")) == []
    other = agentscript.load_source(OPTIMIZER.replace("host://optimizer", "host://nope"), "x.as")
    (problem,) = agentscript.check(other)
    assert problem.code == "UNKNOWN_HOST_TOOL"
    assert "host://optimizer, host://agentscript" in problem.message


def cli_mode(
    workspace: Path, capsys: pytest.CaptureFixture[str], *flags: str
) -> tuple[int, str, str]:
    """`agentscript tuner.as triage.as --selection … --write … FLAGS` in the workspace."""
    from agentscript.cli.main import main

    selection = json.dumps({"triage.as#Triage.__main[label guide]": "guide"})
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(workspace)
        code = main(["tuner.as", "triage.as", "--selection", selection, *flags])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_original_cli_mode_passes_the_target_and_flags_as_input(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli_mode(workspace, capsys, "--mock", "--write", "preview", "--quiet")
    assert code == 0, err
    value = json.loads(out)
    assert value["found"]["target"] == "triage.as"
    assert value["trial"]["ok"] is True and value["trial"]["picked"]
    kept = value["kept"]
    assert kept["ok"] and kept["outputs"] == []
    assert '+            guide: "billing: charges and invoices." selected' in kept["diff"]
    assert (workspace / "triage.as").read_text() == TARGET  # a preview writes nothing


def test_the_cli_mode_keeps_the_runners_flags_out_of_the_input(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentscript.cli.optimizer_mode import parse

    parsed = parse(
        ["tuner.as", "triage.as", "--max-trials", "3", "--trial-trace", "none", "--dry-run",
         "--selection", '{"a": "b"}', "--mock", "--run-dir", "runs"]
    )  # fmt: skip
    assert parsed.input == {
        "target": "triage.as",
        "dry_run": True,
        "trial_trace": "none",
        "selection": {"a": "b"},
    }
    assert parsed.runner == {"max_trials": "3", "run_dir": "runs"}
    config = parsed.run_config()
    assert (config.model, config.max_trials) == ("mock", 3)
    assert str(config.journal_path).endswith("runs/journal.db")


def test_a_trial_past_max_trials_stops_the_run(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    twice = OPTIMIZER.replace(
        "        kept = Optimizer.specialize({",
        "        again = Optimizer.trial({ target: input.target, selection: input.selection, "
        'input: { ticket: "x" } })\n        kept = Optimizer.specialize({',
    )
    (workspace / "tuner.as").write_text(twice, encoding="utf-8")
    code, _, err = cli_mode(workspace, capsys, "--mock", "--write", "preview", "--max-trials", "1")
    assert code == 1
    assert "more than 1 trials (--max-trials)" in err
    assert "Traceback" not in err
