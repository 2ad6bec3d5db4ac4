"""Tokens per task: AgentScript against Pydantic AI and DSPy, the same four tasks in the same run.

Each task is written in each framework the way its documentation suggests (benchmarks/
token_tasks/: the AgentScript programs, and harness.py with the Pydantic AI and DSPy versions),
and all of them talk to one local scripted server that counts what each sends with tiktoken's
cl100k_base. The peers are never dependencies of the project: this script installs them, pinned,
into a virtual environment of its own (by default under the system's temporary directory, kept
between runs) and runs the harness there; AgentScript runs as the `agentscript` command of the
project's venv. Prints one table with tokens, calls and request bytes per task, the ratios and
the targets (issue 19). Never asserted in tests.

    .venv/bin/python benchmarks/tokens.py [--peers-venv DIR] [--json]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import private_memory  # noqa: F401  (the user's memory stays out of reach)

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "benchmarks" / "token_tasks" / "harness.py"
PEERS = ["pydantic-ai-slim[openai]==2.68.0", "dspy==3.4.1", "tiktoken==0.14.0"]
STAMP = "agentscript-peers-" + "-".join(PEERS).replace("[", "").replace("]", "")


def peers_python(venv: Path) -> Path:
    """The peers venv's interpreter, created and filled on first use."""
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    if stamp.exists() and stamp.read_text() == STAMP:
        return python
    print(f"installing {', '.join(PEERS)} into {venv} (once)", file=sys.stderr)
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PEERS], check=True)
    stamp.write_text(STAMP)
    return python


def tokenizer_cache(python: Path) -> str:
    """tiktoken fetches its vocabulary from the network; litellm (which DSPy brings) ships
    cl100k_base's file, so point tiktoken's cache at it and stay offline."""
    found = subprocess.run(
        [
            str(python),
            "-c",
            "import os, litellm; print(os.path.join(os.path.dirname(litellm.__file__), "
            "'litellm_core_utils', 'tokenizers'))",
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    return found.stdout.strip().splitlines()[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--peers-venv",
        type=Path,
        default=Path(tempfile.gettempdir()) / "agentscript-token-peers",
        help="where Pydantic AI, DSPy and tiktoken are installed",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    python = peers_python(args.peers_venv)
    agentscript = Path(sys.executable).with_name("agentscript")
    environment = {
        **os.environ,
        "TIKTOKEN_CACHE_DIR": tokenizer_cache(python),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # litellm must not fetch its price list
    }
    command = [str(python), str(HARNESS), "--agentscript", str(agentscript)]
    if args.json:
        command.append("--json")
    return subprocess.run(command, env=environment, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
