"""The three things the command does with a file: run it, check it, print its syntax tree.

Both command-line forms (the `run`/`check`/`parse` subcommands and the 0.1.0 flag form) call
these, so they behave alike. Each returns an exit code and reports errors itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from agentscript.app import programs
from agentscript.cli import render
from agentscript.cli.errors import REPORTED_ERRORS, CliError, error_lines
from agentscript.cli.input import PromptedInput, read_input

if TYPE_CHECKING:
    from agentscript.app.configuration import RunConfig
    from agentscript.runtime.ports import RunJournal
from agentscript.runtime.errors import AgentScriptError


@dataclass(frozen=True, slots=True)
class RunOutput:
    """How a run's result is shown: where its trace goes (a file, or "pretty"), how much is
    printed, and whether what the run spent is reported on stderr (the `run` subcommand does;
    the 0.1.0 form stays silent)."""

    trace: str | None = None
    verbose: bool = False
    quiet: bool = False
    report_usage: bool = False

    @property
    def trace_file(self) -> str | None:
        return self.trace if self.trace not in (None, "pretty") else None

    @property
    def pretty_trace(self) -> bool:
        return self.verbose or self.trace == "pretty"


def check_output_flags(quiet: bool, verbose: bool, trace: str | None) -> None:
    """`--quiet` hides the trace that `--verbose` / `--trace pretty` ask to show."""
    if quiet and (verbose or trace == "pretty"):
        raise CliError("Use either --quiet or verbose trace output, not both")


def check_input_flags(input_json: str | None, input_file: str | None) -> None:
    if input_json is not None and input_file is not None:
        raise CliError("Use either --input or --input-file, not both")


def reporting_errors(action: Callable[[], int]) -> int:
    """Run `action`; print any expected error as one line per problem and return exit code 1."""
    try:
        return action()
    except REPORTED_ERRORS as error:
        for line in error_lines(error):
            print(line, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("Interrupted", file=sys.stderr)
        return 130


def at_terminal() -> bool:
    """Missing input is asked for only when a person is there to see the question and answer."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def run_program(
    path: str,
    config: RunConfig,
    output: RunOutput,
    *,
    input_json: str | None = None,
    input_file: str | None = None,
    reflect: bool = False,
) -> int:
    """Run the program at `path` with `config` (given the terminal's hooks: prompts for
    missing input, the approval question, dry-run prompts on stderr), show the result as
    `output` says and, with `reflect`, let its agent reflect on it."""
    return reporting_errors(partial(_run, path, config, output, input_json, input_file, reflect))


def _run(
    path: str,
    config: RunConfig,
    output: RunOutput,
    input_json: str | None,
    input_file: str | None,
    reflect: bool,
) -> int:
    check_output_flags(output.quiet, output.verbose, output.trace)
    check_input_flags(input_json, input_file)
    from agentscript.app.run import run

    input_value = read_input(input_json, input_file)
    program = programs.load(path)
    config = at_the_terminal(config)
    try:
        result = run(program, input_value, config)
    except AgentScriptError as error:
        # Show how far the run got: the partial trace goes where the full one would have.
        if error.trace is not None and output.trace_file is not None:
            render.write_trace_file(output.trace_file, error.trace)
        if error.trace is not None and output.pretty_trace:
            render.print_trace(error.trace, sys.stderr)
        if error.spent is not None and output.report_usage and not output.quiet:
            print(render.usage_line(error.spent), file=sys.stderr)
        _after_run(error.journal, config, program.source_path, reflect)
        raise
    if output.trace_file is not None:
        render.write_trace_file(output.trace_file, result.trace)
    if output.quiet:
        print(render.to_json(result.value))
    else:
        print(render.run_output(result.value, result.trace, output.trace_file))
    if output.pretty_trace:
        sys.stdout.flush()
        render.print_trace(result.trace, sys.stdout)
    if output.report_usage and not output.quiet:
        print(render.usage_line(result.usage), file=sys.stderr)
    _after_run(result.journal, config, program.source_path, reflect)
    return 0


def at_the_terminal(config: RunConfig) -> RunConfig:
    """`config` with the terminal's hooks: missing input is asked for when a person is
    there, approvals are asked at the terminal, debug output and dry-run prompts go to
    stderr."""
    from agentscript.cli.approval import terminal_approver

    dry_run = config.model == "dry-run"
    return replace(
        config,
        input_provider=PromptedInput(input) if at_terminal() else None,
        debug_stream=sys.stderr,
        on_dry_run_prompt=render.PromptPrinter(sys.stderr) if dry_run else None,
        ask_user=terminal_approver(),
    )


def _after_run(
    journal: RunJournal | None, config: RunConfig, program_path: str | None, reflect: bool
) -> None:
    """Wait for the run's journal record, warn about anything that kept it incomplete, then
    reflect when asked (imported only then: reflection needs the memory service)."""
    if journal is None:
        return
    for problem in journal.wait(10.0):
        print(f"warning: run journal: {problem}", file=sys.stderr)
    if reflect:
        from agentscript.cli.reflect import reflect_after_run

        reflect_after_run(config, program_path, journal.run_id)


def undo_run(trace_path: str, workspace: str | None, dry_run: bool, force: bool = False) -> int:
    """`agentscript undo TRACE.json`: revert the file effects a run recorded, newest first, in
    `workspace` (the current directory when not given) and nowhere else."""

    def undo() -> int:
        from agentscript.app.undo import undo_trace_file

        report = undo_trace_file(trace_path, workspace, dry_run, force)
        print(render.undo_report(report, dry_run))
        return 0 if report["ok"] else 1

    return reporting_errors(undo)


def list_tools(path: str, workspace: str | None, as_json: bool, start_servers: bool = True) -> int:
    """`agentscript tools FILE`: each tool import, and for MCP servers the tools they offer."""

    def show() -> int:
        program = programs.load(path)
        listing = programs.tools(program, Path(workspace) if workspace else None, start_servers)
        if as_json:
            print(render.to_json(listing))
        else:
            print(render.tool_listing(listing))
        return 0

    return reporting_errors(show)


def check_files(paths: Sequence[str], report_ok: bool) -> int:
    """Check every file (a broken one does not stop the others); exit 1 if any has an error."""
    failed = False
    for path in paths:
        failed |= reporting_errors(partial(_check, path, report_ok)) != 0
    return 1 if failed else 0


def _check(path: str, report_ok: bool) -> int:
    diagnostics = programs.check(programs.load(path))
    for diagnostic in diagnostics:
        print(diagnostic.format_located(), file=sys.stderr)
    if any(diagnostic.severity == "error" for diagnostic in diagnostics):
        return 1
    if report_ok:
        print(f"{path}: ok", file=sys.stderr)
    return 0


def list_models(path: str, as_json: bool) -> int:
    """`agentscript models FILE`: where each llm import goes and whether its key is set."""

    def show() -> int:
        reports = programs.models(programs.load(path))
        if as_json:
            print(render.to_json([report.to_json() for report in reports]))
        else:
            print(render.model_table(reports))
        return 0

    return reporting_errors(show)


def parse_file(path: str) -> int:
    def show_tree() -> int:
        print(render.to_json(programs.load(path).to_json()))
        return 0

    return reporting_errors(show_tree)
