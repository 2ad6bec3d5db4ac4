"""The original's optimizer mode (0.1.18): `agentscript optimizer.as target.as --key value …`.

Two program files in the flag form run the first with the second as `input.target`; every
other `--key value` becomes an input field (`--trial-trace none` → `input.trial_trace`, a
value starting with `{` or `[` read as JSON), a `--key` with no value is `true`, and
`input.dry_run` is always there (`--dry-run` sets it: the optimizer program decides what it
means). The runner keeps its own flags out of the input: `--max-trials`, `--max-llm-calls`,
`--max-seconds`, `--run-dir` (the run's journal goes there), `--trace-file`, `--trace`,
`--model`, `--mock`, `--real-llm`, `--quiet`, `--verbose`. As in the newer releases, the
program's real model answers unless `--mock` is given.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscript.cli.errors import CliError

if TYPE_CHECKING:
    from agentscript.app.configuration import RunConfig
    from agentscript.cli.actions import RunOutput

# The runner's own flags: each takes a value and fills one field.
RUNNER_VALUES = {
    "--max-trials": "max_trials",
    "--max-llm-calls": "max_calls",
    "--max-seconds": "max_seconds",
    "--run-dir": "run_dir",
    "--trace-file": "trace_file",
    "--trace": "trace",
}
RUNNER_SWITCHES = {"--mock", "--real-llm", "--quiet", "--verbose"}


def applies(args: list[str]) -> bool:
    """Whether `args` is the optimizer mode: its first two words are program files."""
    return len(args) >= 2 and all(arg.endswith(".as") for arg in args[:2])


@dataclass(slots=True)
class OptimizerArgs:
    optimizer: str
    target: str
    input: dict[str, Any] = field(default_factory=dict)
    runner: dict[str, str] = field(default_factory=dict)
    switches: set[str] = field(default_factory=set)
    models: list[str] = field(default_factory=list)

    def run_config(self) -> RunConfig:
        from agentscript.app.configuration import RunConfig

        run_dir = self.runner.get("run_dir")
        return RunConfig(
            model="mock" if "--mock" in self.switches else "real",
            by_release="mock" if "--mock" in self.switches else None,
            models=list(self.models),
            max_calls=_number(self.runner, "max_calls", int),
            max_seconds=_number(self.runner, "max_seconds", float),
            max_trials=_number(self.runner, "max_trials", int),
            workspace=os.getcwd(),
            journal_path=str(Path(run_dir) / "journal.db") if run_dir else None,
        )

    def run_output(self) -> RunOutput:
        from agentscript.cli.actions import RunOutput

        return RunOutput(
            trace=self.runner.get("trace"),
            trace_path=self.runner.get("trace_file"),
            verbose="--verbose" in self.switches,
            quiet="--quiet" in self.switches,
        )


def parse(args: list[str]) -> OptimizerArgs:
    """Read the optimizer mode's arguments; raises CliError naming a flag that lacks its value."""
    parsed = OptimizerArgs(args[0], args[1], {"target": args[1], "dry_run": False})
    position = 2
    while position < len(args):
        arg = args[position]
        position += 1
        if not arg.startswith("--") or arg == "--":
            raise CliError(f"Unexpected argument {arg!r}: optimizer inputs are --key value")
        has_value = position < len(args) and not args[position].startswith("--")
        if arg in RUNNER_SWITCHES:
            parsed.switches.add(arg)
        elif arg in RUNNER_VALUES or arg == "--model":
            if not has_value:
                raise CliError(f"Expected value after {arg}")
            if arg == "--model":
                parsed.models.append(args[position])
            else:
                parsed.runner[RUNNER_VALUES[arg]] = args[position]
            position += 1
        elif has_value:
            parsed.input[_field(arg)] = _value(args[position], arg)
            position += 1
        else:
            parsed.input[_field(arg)] = True
    if {"--mock", "--real-llm"} <= parsed.switches:
        raise CliError("Use only one of --mock and --real-llm")
    return parsed


def run(args: list[str]) -> int:
    from agentscript.cli import actions

    try:
        parsed = parse(args)
        config = parsed.run_config()
    except CliError as error:
        print(error, file=sys.stderr)
        return 1
    return actions.run_program(
        parsed.optimizer,
        config,
        parsed.run_output(),
        input_json=json.dumps(parsed.input),
    )


def _field(flag: str) -> str:
    return flag[2:].replace("-", "_")


def _value(text: str, flag: str) -> Any:
    if not text.startswith(("{", "[")):
        return text
    try:
        return json.loads(text)
    except ValueError as problem:
        raise CliError(f"{flag}: the value is not valid JSON ({problem})") from None


def _number(values: dict[str, str], name: str, kind: type[int] | type[float]) -> Any:
    text = values.get(name)
    if text is None:
        return None
    try:
        number = kind(text)
    except ValueError:
        number = 0
    if number <= 0:
        flag = next(flag for flag, field_name in RUNNER_VALUES.items() if field_name == name)
        raise CliError(f"{flag} must be a positive number, got {text!r}")
    return number
