"""The VS Code extension builds into a .vsix with `editors/vscode/build.sh` (npm registry only),
outside the checkout, and the package holds what its manifest names."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXTENSION = ROOT / "editors" / "vscode"


@pytest.mark.node
def test_the_extension_builds_into_a_vsix(tmp_path: Path) -> None:
    version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout
    if int(version.lstrip("v").split(".")[0]) < 20:
        pytest.skip(f"@vscode/vsce 3 needs Node.js 20 or newer, this is {version.strip()}")
    before = sorted(path.name for path in EXTENSION.iterdir())
    subprocess.run(["node", "--check", str(EXTENSION / "src" / "extension.js")], check=True)
    done = subprocess.run(
        ["bash", str(EXTENSION / "build.sh"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (package,) = tmp_path.glob("*.vsix")
    assert package.name == "agentscript-0.1.0.vsix"
    with zipfile.ZipFile(package) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("extension/package.json"))
    assert "extension/" + manifest["main"].removeprefix("./") in names
    for grammar in manifest["contributes"]["grammars"]:
        assert "extension/" + grammar["path"].removeprefix("./") in names
    for language in manifest["contributes"]["languages"]:
        assert "extension/" + language["configuration"].removeprefix("./") in names
    assert "extension/node_modules/vscode-languageclient/package.json" in names
    assert "extension/build.sh" not in names
    # Nothing was written into the checkout.
    assert sorted(path.name for path in EXTENSION.iterdir()) == before
