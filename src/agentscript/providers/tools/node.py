"""`node:` and `npm:` tools (the original's 0.1.11): `import tool Path from "node:path"`, then
`Path.join("a", "b")`; `import tool Yaml from "npm:yaml"`, then `Yaml.parse(text)`.

Only what `agentscript.npm.json` allows is imported (npm_allow.py), and a package only at a
version its range accepts (read from the installed package.json). Each call runs the system's
Node.js in a process of its own (no shell) with the runner shipped beside this module
(node_runner.mjs), in the workspace folder so packages resolve from its node_modules, with a
minimal environment, bounded by the run's deadline and a cap of its own, its answer capped in
size (output_caps.py); the process and anything it started are killed when the call ends.
Arguments are positional, values cross as JSON, and a value that is not JSON-safe (a Date, a
Buffer, undefined, a cycle, a tool binding) is refused with its path. Every call is effectful,
as in the original: behind the approval gate, refused in `parallel for`.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import threading
import time
from importlib import resources
from pathlib import Path
from typing import IO, Any

from agentscript.providers.tools.base import Risk
from agentscript.providers.tools.npm_allow import NpmRegistry
from agentscript.providers.tools.output_caps import MAX_OUTPUT_BYTES
from agentscript.providers.tools.semver_range import satisfies
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall
from agentscript.runtime.values import (
    AgentBinding,
    FunctionBinding,
    LlmBinding,
    MemoryBinding,
    ToolBinding,
)

DEFAULT_TIMEOUT_SECONDS = 120.0
_POLL_SECONDS = 0.1
# What the Node process sees of the environment: enough to find node and run, nothing secret.
_PASSED_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "TZ", "SYSTEMROOT")
_BINDINGS = {
    ToolBinding: "tool",
    LlmBinding: "llm",
    MemoryBinding: "memory",
    AgentBinding: "agent",
    FunctionBinding: "function",
}


class NodeTools:
    """The `node:` and `npm:` schemes over one workspace."""

    def __init__(
        self,
        workspace: Path,
        allow: NpmRegistry | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        self.workspace = workspace
        # Read once: a registry the run itself writes must not widen what it may import.
        self.allow = allow if allow is not None else NpmRegistry.read(workspace)
        self.timeout = timeout_seconds
        self._runner = resources.files(__package__).joinpath("node_runner.mjs").read_text()

    def risk(self, request: ToolCall) -> Risk:
        return "effect"

    def call(self, request: ToolCall) -> Any:
        target = self.allow.check(request.uri)
        name = f"{target.kind} '{request.label}'"
        for position, argument in enumerate(request.args):
            problem = _unsafe(argument, "argument")
            if problem is not None:
                raise ExecutionError(
                    f"{name} argument at position {position} expects JSON-safe value at {problem}"
                )
        if target.package is not None and target.version:
            self._check_version(target.package, target.version)
        node = shutil.which("node")
        if node is None:
            raise ExecutionError(
                f"{name} needs Node.js, and no `node` is on PATH: install Node.js "
                "(https://nodejs.org, or apt-get install -y nodejs)"
            )
        job = {
            "specifier": target.specifier,
            "package": target.package,
            "method": request.method,
            "args": list(request.args),
            "read": request.property_read,
            "label": request.label,
        }
        answer = self._run([node, "--input-type=module", "-e", self._runner], job, request, name)
        if answer.get("ok") is True:
            return answer.get("value")
        if "invalid" in answer:
            raise ExecutionError(f"{name} returned invalid value at {answer['invalid']}")
        raise ExecutionError(f"{name} failed: {answer.get('error') or 'no message'}")

    def _check_version(self, package: str, wanted: str) -> None:
        manifest = self.workspace / "node_modules" / package / "package.json"
        try:
            installed = json.loads(manifest.read_text(encoding="utf-8")).get("version")
        except OSError:
            raise ExecutionError(
                f"Package '{package}' package.json was not found under node_modules in "
                f"{self.workspace} (run npm install {package} there)"
            ) from None
        except (ValueError, AttributeError) as problem:
            raise ExecutionError(
                f"Package '{package}' package.json is invalid: {problem}"
            ) from None
        if not isinstance(installed, str) or not satisfies(installed, wanted):
            raise ExecutionError(
                f"Package '{package}' installed version '{installed}' does not satisfy "
                f"'{wanted}' in agentscript.npm.json"
            )

    def _run(
        self, command: list[str], job: dict[str, Any], request: ToolCall, name: str
    ) -> dict[str, Any]:
        """Start Node on `job` and wait for its one-line answer, no longer than the run's
        deadline and the call's own cap; the process group is killed however the wait ends."""
        deadline = request.deadline
        cap = deadline.seconds_left(self.timeout)
        run_ends_first = deadline.binds(self.timeout)
        environment = {key: os.environ[key] for key in _PASSED_ENVIRONMENT if key in os.environ}
        process = subprocess.Popen(
            command,
            cwd=self.workspace,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: whatever it starts dies with it
        )
        output: list[bytes] = []
        exchange = threading.Thread(
            target=_exchange,
            args=(process, json.dumps(job).encode(), output),
            name=f"node-tool {request.label}",
            daemon=True,
        )
        started = time.monotonic()
        exchange.start()
        try:
            while exchange.is_alive():
                exchange.join(_POLL_SECONDS)
                deadline.check()
                if exchange.is_alive() and time.monotonic() - started > cap:
                    if run_ends_first:
                        raise deadline.exceeded()
                    raise ExecutionError(
                        f"{name} took longer than {self.timeout:g} seconds and was stopped"
                    )
        finally:
            _stop(process)
            exchange.join()
        answer_bytes = output[0] if output else b""
        if len(answer_bytes) > MAX_OUTPUT_BYTES:
            raise ExecutionError(f"{name} answered more than {MAX_OUTPUT_BYTES} bytes")
        try:
            answer = json.loads(answer_bytes.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            answer = None
        if not isinstance(answer, dict):
            raise ExecutionError(
                f"{name} failed: Node exited with status {process.returncode} and no answer"
            )
        return answer


def _exchange(process: subprocess.Popen[bytes], job: bytes, output: list[bytes]) -> None:
    """Give the runner its job, then read its answer: up to one byte past the cap, so a bigger
    answer is known to be too big without holding all of it."""
    stdin: IO[bytes] | None = process.stdin
    stdout: IO[bytes] | None = process.stdout
    assert stdin is not None and stdout is not None
    try:
        stdin.write(job)
        stdin.close()
    except OSError:  # Node exited before reading: its status says why
        pass
    output.append(stdout.read(MAX_OUTPUT_BYTES + 1))


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Kill the runner's process group (the runner, and anything a module started) and reap
    the runner."""
    killpg = getattr(os, "killpg", None)
    try:
        if killpg is not None:
            killpg(process.pid, signal.SIGKILL)
        elif process.poll() is None:
            process.kill()
    except ProcessLookupError:
        pass
    process.wait()
    if process.stdout is not None:
        process.stdout.close()


def _unsafe(value: Any, at: str) -> str | None:
    """Where `value` holds something that cannot cross as JSON (`argument.items[2]: got tool
    binding`), or None. Runtime values are trees, so there is no cycle to meet."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{at}, got {value}"
    if isinstance(value, list):
        for index, item in enumerate(value):
            problem = _unsafe(item, f"{at}[{index}]")
            if problem is not None:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            problem = _unsafe(item, f"{at}.{key}")
            if problem is not None:
                return problem
        return None
    kind = _BINDINGS.get(type(value))
    return f"{at}, got {kind} binding" if kind else f"{at}, got {type(value).__name__}"
