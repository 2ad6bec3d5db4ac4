"""Every offline command that README.md and docs/ show runs as written.

Commands are taken from the shell blocks (```sh / ```console, `$ ` prompts stripped) that start
with `agentscript`. A command runs when it needs no model and nothing the repository lacks:
`run` with `--mock`, `--dry-run` or `--replay`, and `check`, `parse`, `tools`, whose program files
all exist. Each runs in a copy of the repository's examples, tutorials and docs under a temporary
folder (so nothing lands in the checkout), through the installed `agentscript` script, without a
shell, and must exit 0.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).with_name("agentscript")
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"```(?:sh|console|bash)\n(.*?)```", re.DOTALL)
OFFLINE_RUN = ("--mock", "--dry-run", "--replay")
SAFE_COMMANDS = ("check", "parse", "tools")


def shell_commands(document: Path) -> list[str]:
    commands = []
    for block in _BLOCK.findall(document.read_text(encoding="utf-8")):
        for line in block.splitlines():
            line = line.removeprefix("$ ").strip()
            if line.startswith("agentscript "):
                commands.append(line)
    return commands


def words_of(command: str) -> list[str]:
    text = command.split(" #", 1)[0]  # a trailing comment
    return shlex.split(text)


def runnable(words: list[str]) -> bool:
    """Offline, and every program (and answers file) it names is in the repository."""
    if len(words) < 2:
        return False
    files = [word for word in words if word.endswith((".as", ".json", ".jsonl"))]
    if not files or not all((ROOT / file).is_file() for file in files if "{" not in file):
        return False
    if words[1] == "run":
        return any(flag in words for flag in OFFLINE_RUN) and "--approve" not in words
    return words[1] in SAFE_COMMANDS


COMMANDS = sorted(
    {
        (document.relative_to(ROOT).as_posix(), command)
        for document in DOCUMENTS
        for command in shell_commands(document)
        if runnable(words_of(command))
    }
)


def test_the_documents_show_offline_commands() -> None:
    sources = {source for source, _ in COMMANDS}
    assert "README.md" in sources
    assert len(COMMANDS) >= 4


@pytest.fixture(scope="module")
def checkout_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("checkout")
    for folder in ("examples", "tutorials", "docs"):
        shutil.copytree(ROOT / folder, copy / folder)
    return copy


@pytest.mark.parametrize(("source", "command"), COMMANDS)
def test_a_documented_command_runs_as_written(
    checkout_copy: Path, tmp_path: Path, source: str, command: str
) -> None:
    words = words_of(command)
    environ = {
        **os.environ,
        "HOME": str(tmp_path),  # nothing lands in the real home folder
        "AGENTSCRIPT_MEMORY_DB": str(tmp_path / "memory.db"),
    }
    done = subprocess.run(
        [str(SCRIPT), *words[1:]],
        cwd=checkout_copy,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"{source}: {command}\n{done.stderr}"
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "memory.db").exists(), "an offline run learned into the memory"
