"""The VS Code TextMate grammar tokenises every example and tutorial, every character by a rule,
with VS Code's own tokenizer (vscode-textmate and vscode-oniguruma, installed from the npm
registry into a temporary folder)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GRAMMAR = ROOT / "editors" / "vscode" / "syntaxes" / "agentscript.tmLanguage.json"
CHECKER = ROOT / "tests" / "support" / "textmate_check.js"
PACKAGES = ("vscode-textmate@9", "vscode-oniguruma@2")

pytestmark = pytest.mark.node


@pytest.fixture(scope="module")
def node_modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("textmate")
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", *PACKAGES],
        cwd=folder,
        check=True,
        capture_output=True,
        timeout=300,
        env={**os.environ, "npm_config_cache": str(folder / ".npm")},
    )
    return folder / "node_modules"


def _tokenise(node_modules: Path, files: list[Path]) -> dict[str, object]:
    done = subprocess.run(
        ["node", str(CHECKER), str(GRAMMAR), *map(str, files)],
        env={**os.environ, "NODE_PATH": str(node_modules)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report: dict[str, object] = json.loads(done.stdout)
    return report


def test_every_example_and_tutorial_is_tokenised_without_unmatched_text(
    node_modules: Path,
) -> None:
    files = sorted([*ROOT.glob("examples/**/*.as"), *ROOT.glob("tutorials/**/*.as")])
    assert len(files) >= 10
    report = _tokenise(node_modules, files)
    assert report["files"] == len(files)
    assert report["unmatched"] == []
    assert report["unclosed"] == []


def test_the_check_finds_text_no_rule_matches(node_modules: Path, tmp_path: Path) -> None:
    # `#` and `@` are no AgentScript token, and a string left open runs to the end.
    sample = tmp_path / "odd.as"
    sample.write_text('agent A {\n    x = 1 # 2 @\n    y = "open\n', encoding="utf-8")
    report = _tokenise(node_modules, [sample])
    unmatched = report["unmatched"]
    assert isinstance(unmatched, list)
    assert [item["text"].strip() for item in unmatched] == ["#", "@"]
    assert report["unclosed"] == [str(sample)]
