"""The 0.1.0 command line, `agentscript FILE [--check | --parse] [--input JSON] …`, kept working.

A small hand-written parser, so its exact error messages survive and it needs no click import;
it turns the flags into one action of `actions`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from agentscript.cli import actions
from agentscript.cli.errors import CliError

if TYPE_CHECKING:
    from agentscript.app.configuration import ModelChoice, ReleaseChoice, RunConfig

# Flags that take the next argument as their value, and the field each one fills.
_VALUE_FLAGS = {
    "--input": "input_json",
    "--input-file": "input_file",
    "--agent": "agent",
    "--function": "function",
    # The original's later versions: 0.1.7 `--concurrency N`, 0.1.21 `--trace-file F`.
    "--concurrency": "concurrency",
    "--trace-file": "trace_file",
}
_SWITCHES = {
    "--check": "check",
    "--parse": "parse",
    "--real-llm": "real_llm",
    "--verbose": "verbose",
    "--quiet": "quiet",
    # 0.1.6: `--mock` (the default of 0.1.0 programs anyway) and `--dry-run`.
    "--mock": "mock",
    "--dry-run": "dry_run",
}
_HELP = ("-h", "--help")
_VERSION = ("-v", "--version")

Request = Literal["act", "help", "version"]


@dataclass(slots=True)
class LegacyArgs:
    """The flag form's arguments. `request` is "help"/"version" when those flags were given."""

    request: Request = "act"
    file: str | None = None
    values: dict[str, str] = field(default_factory=dict)
    switches: set[str] = field(default_factory=set)
    # `--model URI` / `--model NAME=URI`, repeatable, as `agentscript run --model`.
    models: list[str] = field(default_factory=list)

    def run_config(self) -> RunConfig:
        from agentscript.app.configuration import RunConfig

        assert self.file is not None
        return RunConfig(
            agent=self.values.get("agent"),
            function=self.values.get("function"),
            model=self.model(),
            by_release=self.release_choice(),
            models=list(self.models),
            concurrency=self.concurrency(),
            # 0.1.0 rooted host tools at the working directory and memory at the program's.
            workspace=os.getcwd(),
            memory_root=os.path.dirname(os.path.abspath(self.file)),
        )

    def run_output(self) -> actions.RunOutput:
        return actions.RunOutput(
            trace=self.values.get("trace"),
            trace_path=self.values.get("trace_file"),
            verbose="verbose" in self.switches,
            quiet="quiet" in self.switches,
        )

    def model(self) -> ModelChoice:
        """0.1.0 answered with the mock model unless asked for the real one; naming a model
        with `--model` asks for it too (unless `--mock` is given). Where none was asked for,
        the program's release has the last word (release_choice)."""
        if "dry_run" in self.switches:
            return "dry-run"
        if "real_llm" in self.switches or (self.models and "mock" not in self.switches):
            return "real"
        return "mock"

    def release_choice(self) -> ReleaseChoice | None:
        """What the release the program runs as decides (app/release_defaults.py): what
        `--mock` mocks besides the model, and which model answers when none was asked for."""
        if "mock" in self.switches:
            return "mock"
        return "unchosen-model" if self.model() == "mock" else None

    def concurrency(self) -> int:
        text = self.values.get("concurrency", "4")
        if not text.isdigit() or int(text) < 1:
            raise CliError("--concurrency must be a positive integer")
        return int(text)


def parse_args(args: list[str]) -> LegacyArgs:
    """Read the flag form left to right, as 0.1.0 did; raises CliError with its messages."""
    parsed = LegacyArgs()
    position = 0
    while position < len(args):
        arg = args[position]
        position += 1
        if arg in _HELP:
            parsed.request = "help"
        elif arg in _VERSION:
            parsed.request = "version"
        elif arg in _SWITCHES:
            parsed.switches.add(_SWITCHES[arg])
        elif arg == "--model":
            if position >= len(args) or args[position].startswith("--"):
                raise CliError(f"Expected value after {arg}")
            parsed.models.append(args[position])
            position += 1
        elif arg == "--trace":
            # `--trace FILE` as in 0.1.0, or alone (later releases): the pretty trace.
            has_value = position < len(args) and not args[position].startswith("--")
            parsed.values["trace"] = args[position] if has_value else "pretty"
            position += has_value
        elif arg in _VALUE_FLAGS:
            if position >= len(args) or args[position].startswith("--"):
                raise CliError(f"Expected value after {arg}")
            parsed.values[_VALUE_FLAGS[arg]] = args[position]
            position += 1
        elif arg.startswith("-") and arg != "-":
            raise CliError(f"Unknown option '{arg}'")
        elif parsed.file is None:
            parsed.file = arg
        else:
            raise CliError("Unexpected positional argument. Use --input to pass input JSON.")
    if parsed.request != "act":
        return parsed
    switches = parsed.switches
    actions.check_output_flags(
        "quiet" in switches, "verbose" in switches, parsed.values.get("trace")
    )
    if {"parse", "check"} <= switches:
        raise CliError("Use either --parse or --check, not both")
    if len(switches & {"mock", "dry_run", "real_llm"}) > 1:
        raise CliError("Use only one of --mock, --dry-run and --real-llm")
    parsed.concurrency()
    actions.check_input_flags(parsed.values.get("input_json"), parsed.values.get("input_file"))
    return parsed


def act(parsed: LegacyArgs) -> int:
    """Do what the parsed flags ask for; the caller handles help, version and a missing file."""
    assert parsed.file is not None
    if "parse" in parsed.switches:
        return actions.parse_file(parsed.file)
    if "check" in parsed.switches:
        return actions.check_files([parsed.file], report_ok=False)
    return actions.run_program(
        parsed.file,
        parsed.run_config(),
        parsed.run_output(),
        input_json=parsed.values.get("input_json"),
        input_file=parsed.values.get("input_file"),
    )
