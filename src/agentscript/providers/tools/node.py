"""`node:` and `npm:` tools (the original's 0.1.11): `import tool Path from "node:path"`, then
`Path.join("a", "b")`; `import tool Yaml from "npm:yaml"`, then `Yaml.parse(text)`.

Only what `agentscript.npm.json` allows is imported (npm_allow.py), and a package only at a
version its range accepts (read from the installed package.json). Each call runs the system's
Node.js in a process of its own (no shell), in the workspace folder so packages resolve from
its node_modules, with a minimal environment, bounded by the run's deadline and a cap of its
own, its answer capped in size. Arguments are positional, values cross as JSON, and a value
that is not JSON-safe (a Date, a Buffer, undefined, a cycle) is refused with its path. Every
call is effectful, as in the original: behind the approval gate, refused in `parallel for`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from importlib import resources
from pathlib import Path
from typing import Any

from agentscript.providers.tools.base import Risk
from agentscript.providers.tools.npm_allow import NpmRegistry, NpmTarget
from agentscript.providers.tools.semver_range import satisfies
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall

DEFAULT_TIMEOUT_SECONDS = 120.0
# The most a call's answer may hold; a bigger one is refused, not cut (it is one JSON value).
MAX_ANSWER_BYTES = 8 << 20
_POLL_SECONDS = 0.1
# What the Node process sees of the environment: enough to find node and run, nothing secret.
_PASSED_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "TZ", "SYSTEMROOT")


class NodeTools:
    """The `node:` and `npm:` schemes over one workspace."""

    def __init__(self, workspace: Path, allow: NpmRegistry | None = None) -> None:
        self.workspace = workspace
        self.allow = allow if allow is not None else NpmRegistry.read(workspace)
        self._runner = resources.files(__package__).joinpath("node_runner.mjs").read_text()

    def risk(self, request: ToolCall) -> Risk:
        return "effect"

    def call(self, request: ToolCall) -> Any:
        target = self.allow.check(request.uri)
        label = f"{request.tool_name}.{request.method}"
        if target.package is not None:
            self._check_version(target)
        node = shutil.which("node")
        if node is None:
            raise ExecutionError(
                f"{target.kind} '{label}' needs Node.js, and no `node` is on PATH: install "
                "Node.js (https://nodejs.org, or apt-get install -y nodejs)"
            )
        job = {
            "specifier": target.specifier,
            "method": request.method,
            "args": list(request.args),
            "label": label,
        }
        answer = self._run([node, "--input-type=module", "-e", self._runner], job, request, target)
        if not answer.get("ok"):
            raise ExecutionError(f"{target.kind} '{label}' {_failure(answer.get('error'))}")
        return answer.get("value")

    def _check_version(self, target: NpmTarget) -> None:
        assert target.package is not None
        manifest = self.workspace / "node_modules" / target.package / "package.json"
        try:
            installed = json.loads(manifest.read_text(encoding="utf-8")).get("version", "")
        except (OSError, ValueError):
            raise ExecutionError(
                f"Failed to load npm package '{target.package}': it is not installed in "
                f"{self.workspace / 'node_modules'} (run npm install {target.package} there)"
            ) from None
        if target.version and not satisfies(str(installed), target.version):
            raise ExecutionError(
                f"Package '{target.package}' installed version '{installed}' does not satisfy "
                f"'{target.version}' in agentscript.npm.json"
            )

    def _run(
        self, command: list[str], job: dict[str, Any], request: ToolCall, target: NpmTarget
    ) -> dict[str, Any]:
        deadline = request.deadline
        cap = deadline.seconds_left(DEFAULT_TIMEOUT_SECONDS)
        run_ends_first = deadline.binds(DEFAULT_TIMEOUT_SECONDS)
        environment = {key: os.environ[key] for key in _PASSED_ENVIRONMENT if key in os.environ}
        process = subprocess.Popen(
            command,
            cwd=self.workspace,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        started = time.monotonic()
        given: bytes | None = json.dumps(job).encode()
        try:
            while True:
                try:
                    output, _ = process.communicate(given, timeout=_POLL_SECONDS)
                    break
                except subprocess.TimeoutExpired:
                    given = None  # sent with the first call; later calls only wait
                deadline.check()
                if time.monotonic() - started > cap:
                    if run_ends_first:
                        raise deadline.exceeded()
                    raise ExecutionError(
                        f"{target.kind} '{job['label']}' took longer than "
                        f"{DEFAULT_TIMEOUT_SECONDS:g} seconds and was stopped"
                    )
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        if len(output) > MAX_ANSWER_BYTES:
            raise ExecutionError(
                f"{target.kind} '{job['label']}' answered more than {MAX_ANSWER_BYTES} bytes"
            )
        try:
            answer = json.loads(output.decode("utf-8").strip().splitlines()[-1])
        except (ValueError, IndexError, UnicodeDecodeError):
            answer = None
        if not isinstance(answer, dict):
            raise ExecutionError(
                f"{target.kind} '{job['label']}' failed: Node exited with status "
                f"{process.returncode} and no answer"
            )
        return answer


def _failure(error: Any) -> str:
    text = str(error or "failed")
    return text if text.startswith("returned invalid value") else f"failed: {text}"
