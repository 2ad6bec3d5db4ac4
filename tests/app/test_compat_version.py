"""Which release of the original a program runs as: 0.1.0's tool result shapes unless the
workspace's package.json declares a newer @rong/agentscript, then `{ok, content}` and friends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agentscript
from agentscript.app.compat_version import BASELINE, declared_version, is_newer
from agentscript.app.configuration import RunConfig

PROGRAM = """\
import tool File from "file://workspace"
import tool Env from "env://"

main agent Reader {
  main func() {
    text = File.read({ path: "notes.txt" })
    names = File.list({ path: "docs" })
    greeting = Env.get({ name: "GREETING" })
    return { text: text, names: names, greeting: greeting }
  }
}
"""


def _declare(workspace: Path, section: str, spec: str) -> None:
    manifest = {"name": "agents", section: {"@rong/agentscript": spec}}
    (workspace / "package.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    ("section", "spec", "expected"),
    [
        ("dependencies", "^0.1.22", "0.1.22"),
        ("devDependencies", "~0.1.19", "0.1.19"),
        ("dependencies", "0.1.0", "0.1.0"),
        ("dependencies", "latest", BASELINE),
        ("optionalThings", "^0.1.22", BASELINE),
    ],
)
def test_the_workspace_package_json_declares_the_release(
    tmp_path: Path, section: str, spec: str, expected: str
) -> None:
    _declare(tmp_path, section, spec)
    assert declared_version(tmp_path) == expected


def test_no_or_broken_package_json_means_0_1_0(tmp_path: Path) -> None:
    assert declared_version(tmp_path) == BASELINE
    (tmp_path / "package.json").write_text("{ not json")
    assert declared_version(tmp_path) == BASELINE
    (tmp_path / "package.json").write_text("[1, 2]")
    assert declared_version(tmp_path) == BASELINE


def test_newer_means_after_0_1_0() -> None:
    assert is_newer("0.1.22") and is_newer("0.1.1") and is_newer("1.0.0")
    assert not is_newer("0.1.0") and not is_newer("latest")


def _run(workspace: Path, compat: str | None = None) -> object:
    (workspace / "notes.txt").write_text("alpha")
    (workspace / "docs").mkdir()
    (workspace / "docs" / "a.md").write_text("a")
    program = workspace / "main.as"
    program.write_text(PROGRAM)
    config = RunConfig(
        model="mock",
        workspace=workspace,
        environ={"GREETING": "hello"},
        env_allow=["GREETING"],
        compat=compat,
    )
    return agentscript.run(agentscript.load(program), {}, config).value


def test_a_program_without_a_declaration_gets_the_0_1_0_shapes(tmp_path: Path) -> None:
    assert _run(tmp_path) == {"text": "alpha", "names": ["a.md"], "greeting": "hello"}


def test_a_workspace_of_a_newer_release_gets_the_newer_shapes(tmp_path: Path) -> None:
    _declare(tmp_path, "dependencies", "^0.1.22")
    assert _run(tmp_path) == {
        "text": {"ok": True, "content": "alpha"},
        "names": {"ok": True, "entries": ["a.md"]},
        "greeting": {"ok": True, "value": "hello"},
    }


def test_the_run_configuration_overrides_the_workspace(tmp_path: Path) -> None:
    _declare(tmp_path, "dependencies", "^0.1.22")
    assert _run(tmp_path, compat="0.1.0")["text"] == "alpha"  # type: ignore[index]


CLASSIFIER = """\
import llm Model from "openai://gpt-4.1-mini"

main agent Classifier {
  model Model
  role "Triage"
  description "Labels a ticket."
  main func() {
    return generate({ input: "Label the ticket."OPTIONS }) -> { label string }
  }
}
"""


def _classify(workspace: Path, options: str = "") -> object:
    from agentscript.providers.llm.mock import ScriptedLlm

    program = workspace / "classify.as"
    program.write_text(CLASSIFIER.replace("OPTIONS", options))
    answer = ScriptedLlm([{"label": "bug", "reason": "it crashes"}])
    config = RunConfig(model=answer, workspace=workspace, journal=False)
    return agentscript.run(agentscript.load(program), {}, config).value


def test_a_newer_release_keeps_fields_the_shape_does_not_declare(tmp_path: Path) -> None:
    _declare(tmp_path, "dependencies", "^0.1.22")
    assert _classify(tmp_path) == {"label": "bug", "reason": "it crashes"}
    assert _classify(tmp_path, ", strict: false") == {"label": "bug", "reason": "it crashes"}
    with pytest.raises(agentscript.ExecutionError, match="unexpected field 'reason'"):
        _classify(tmp_path, ", strict: true")


def test_0_1_0_rejects_undeclared_fields_unless_strict_is_false(tmp_path: Path) -> None:
    with pytest.raises(agentscript.ExecutionError, match="unexpected field 'reason'"):
        _classify(tmp_path)
    assert _classify(tmp_path, ", strict: false") == {"label": "bug", "reason": "it crashes"}
