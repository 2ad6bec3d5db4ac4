"""Every example and tutorial, run on the local real model (SmolLM2-135M behind llama-server,
`make local-model`): what each ends with.

Each program that documents an offline run (`//   agentscript run FILE --mock … --input …` in
its header) runs as that command says, without `--mock`, with `--approve auto` and
`--model openai://smollm2` (every llm import on the local model), OPENAI_BASE_URL at the
server, in a scratch copy of its folder (examples/ or tutorials/), so what it writes, its
journal and its memory database stay there. The request timeout is the default.

A program passes when it ends with a value, or with one located error line (FILE:LINE:COL) that
says what the model did wrong; it fails on a traceback, on an error without a location, or
on a request timeout (the model was still answering), or when it is still running after
--limit seconds. The model answers weakly (135M parameters): a
value says nothing about its quality, only that every path a real model takes held up.

    python benchmarks/real_model_examples.py [--url http://127.0.0.1:PORT/v1] [--only NAME]
        [--limit 600] [--json]

Exit status 1 when a program fails. Never asserts on timings.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import local_model  # noqa: E402

FOLDERS = ("examples", "tutorials")
COMMAND = re.compile(r"^//\s+agentscript run (.+)$", re.MULTILINE)
# A program with models of its own or in the agents it imports.
MODELS = re.compile(r"^import (llm|agent) ", re.MULTILINE)
LOCATED = re.compile(r"\.as:\d+:\d+")
# Flags of the documented command that a real run drops, with how many values each takes.
DROPPED = {"--mock": 1, "--trace": 1}


@dataclass
class Outcome:
    program: str
    status: str  # "value", "located error", or a failure: "traceback", "unlocated error", …
    seconds: float
    detail: str

    @property
    def passed(self) -> bool:
        return self.status in {"value", "located error"}


def programs() -> list[tuple[Path, list[str]]]:
    """Every program with a documented run, and that run's arguments (after the file)."""
    found = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.as")):
            text = path.read_text(encoding="utf-8")
            matched = COMMAND.search(text)
            if matched:
                words = shlex.split(matched.group(1))
                found.append(
                    (path, _real_run_arguments(words[1:], MODELS.search(text) is not None))
                )
    return found


def _real_run_arguments(words: list[str], has_models: bool) -> list[str]:
    kept: list[str] = []
    skip = 0
    for word in words:
        if skip:
            skip -= 1
        elif word in DROPPED:
            skip = DROPPED[word]
        else:
            kept.append(word)
    if has_models:  # a program without models (control-flow.as) refuses --model
        kept += ["--model", f"openai://{local_model.MODEL_NAME}"]
    return kept if "--approve" in kept else [*kept, "--approve", "auto"]


def scratch_copy(program: Path, into: Path) -> Path:
    """A copy of the program's top folder (examples/ or tutorials/) to run in."""
    top = program.relative_to(ROOT).parts[0]
    shutil.copytree(ROOT / top, into / top)
    return into


def run_one(program: Path, arguments: list[str], url: str, limit: float) -> Outcome:
    name = str(program.relative_to(ROOT))
    with tempfile.TemporaryDirectory(prefix="real-model-example-") as scratch:
        workspace = scratch_copy(program, Path(scratch))
        environ = {
            **os.environ,
            "OPENAI_BASE_URL": url,
            "AGENTSCRIPT_MEMORY_DB": str(Path(scratch) / "memory.db"),
            "PYTHONPATH": str(ROOT / "src"),
        }
        environ.pop("OPENAI_API_KEY", None)
        command = [sys.executable, "-m", "agentscript", "run", name, *arguments]
        started = time.monotonic()
        try:
            done = subprocess.run(
                command,
                cwd=workspace,
                env=environ,
                capture_output=True,
                text=True,
                timeout=limit,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return Outcome(name, "still running", limit, f"killed after {limit:.0f} s")
        seconds = time.monotonic() - started
    return _judge(name, done, seconds)


def _judge(name: str, done: subprocess.CompletedProcess[str], seconds: float) -> Outcome:
    errors = done.stderr.strip()
    if "Traceback (most recent call last)" in errors:
        return Outcome(name, "traceback", seconds, errors[-1500:])
    if done.returncode == 0:
        return Outcome(name, "value", seconds, done.stdout.strip()[-600:])
    last = errors.splitlines()[-1] if errors else f"exit status {done.returncode}"
    if "timed out" in errors:
        return Outcome(name, "timeout", seconds, last)
    if LOCATED.search(errors):
        return Outcome(name, "located error", seconds, errors[-600:])
    return Outcome(name, "unlocated error", seconds, last)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="an already running server's base URL (…/v1)")
    parser.add_argument("--only", help="run the programs whose path contains this text")
    parser.add_argument("--limit", type=float, default=600.0, help="seconds per program")
    parser.add_argument("--json", action="store_true", help="print the outcomes as JSON")
    options = parser.parse_args()
    if options.url is None and local_model.local_model_missing() is not None:
        print(f"{local_model.local_model_missing()}: run make local-model", file=sys.stderr)
        return 2
    chosen = [
        (path, arguments)
        for path, arguments in programs()
        if options.only is None or options.only in str(path.relative_to(ROOT))
    ]
    outcomes = []
    with ExitStack() as stack:
        url = options.url or stack.enter_context(local_model.serve())
        for path, arguments in chosen:
            outcome = run_one(path, arguments, url, options.limit)
            outcomes.append(outcome)
            print(
                f"{outcome.program:36} {outcome.status:15} {outcome.seconds:6.1f} s  "
                f"{' '.join(outcome.detail.split())[:160]}",
                file=sys.stderr,
                flush=True,
            )
    if options.json:
        print(json.dumps([asdict(outcome) for outcome in outcomes], indent=2))
    failed = [outcome.program for outcome in outcomes if not outcome.passed]
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"{len(outcomes) - len(failed)}/{len(outcomes)} ended with a value or a located error; "
        f"load average {load}",
        file=sys.stderr,
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
