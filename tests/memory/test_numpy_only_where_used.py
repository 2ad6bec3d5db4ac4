"""numpy is the memory service's text index's (scoring and packing postings): `agentscript
check` and a plain run, which never open the memory service, must not pay for importing it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

PROBE = """
import json, sys
import agentscript
from agentscript.cli.main import main
codes = [main(["check", "hello.as"]), main(["run", "hello.as", "--mock", "hello.responses.json",
    "--input", '{"name": "Ada"}', "--quiet"])]
print(json.dumps({"codes": codes, "numpy": "numpy" in sys.modules}))
"""


def test_check_and_a_plain_run_do_not_import_numpy(tmp_path: Path) -> None:
    for name in ("hello.as", "hello.responses.json"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", **_python_path()},
    )
    assert json.loads(done.stdout.splitlines()[-1]) == {"codes": [0, 0], "numpy": False}


def test_recall_does_import_numpy(tmp_path: Path) -> None:
    """The probe above can fail: the memory service's recall does import numpy."""
    probe = (
        "import sys\n"
        "from agentscript.memory import MemoryService\n"
        f"with MemoryService.open(None, database={str(tmp_path / 'm.db')!r}) as service:\n"
        "    service.remember(text='the kiln is hot', scope='/s')\n"
        "    service.recall('kiln', scope='/s')\n"
        "print('numpy' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", **_python_path()},
    )
    assert done.stdout.split() == ["True"]


def _python_path() -> dict[str, str]:
    """The test process's import path, so the child imports the same agentscript."""
    return {"PYTHONPATH": ":".join(path for path in sys.path if path)}
