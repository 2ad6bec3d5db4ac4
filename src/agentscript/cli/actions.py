"""The three things the command does with a file: run it, check it, print its syntax tree.

Both command-line forms (the `run`/`check`/`parse` subcommands and the 0.1.0 flag form) call
these, so they behave alike. Each returns an exit code and reports errors itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscript.app import programs
from agentscript.cli import render, trace_tree
from agentscript.cli.errors import (
    REPORTED_ERRORS,
    CliError,
    diagnostic_lines,
    error_lines,
    reader_gone,
)
from agentscript.cli.input import PromptedInput, read_input
from agentscript.cli.progress import LiveProgress, StreamEcho

if TYPE_CHECKING:
    from agentscript.app.configuration import ModelChoice as ModelChoice
    from agentscript.app.configuration import RunConfig
    from agentscript.runtime.interpreter import RunResult
    from agentscript.runtime.ports import RunJournal
    from agentscript.runtime.trace import TraceSink
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
    # The `run` subcommand's `--trace pretty`: the value, then the tree (cli/trace_tree), and
    # JSON only with `--json`; the 0.1.0 form keeps JSON followed by the plain trace lines.
    tree: bool = False
    json: bool = False
    # `--trace-file F` (the original's later flag): write the trace to F.
    trace_path: str | None = None
    # Stream answers where the provider can: None means "when stderr is a terminal".
    stream: bool | None = None

    @property
    def trace_file(self) -> str | None:
        if self.trace_path is not None:
            return self.trace_path
        return self.trace if self.trace not in (None, "pretty") else None

    @property
    def pretty_trace(self) -> bool:
        return self.verbose or self.trace == "pretty"

    @property
    def draws_tree(self) -> bool:
        return self.tree and self.trace == "pretty"


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
    except BrokenPipeError:
        return reader_gone()  # before click, which would make it exit 1
    except REPORTED_ERRORS as error:
        for line in error_lines(error, with_source=sys.stderr.isatty()):
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
    if not output.draws_tree:
        check_output_flags(output.quiet, output.verbose, output.trace)
    check_input_flags(input_json, input_file)
    from agentscript.app.run import run

    input_value = read_input(input_json, input_file)
    program = programs.load(path)
    title = _tree_title(path, input_value)
    return _show_run(
        config,
        output,
        title,
        lambda config: run(program, input_value, config),
        program.source_path if reflect else None,
    )


def resume_program(run: str, config: RunConfig, output: RunOutput) -> int:
    """`agentscript runs resume RUN`: finish RUN from its journal, then go on live, shown as
    `run` shows a run."""

    def resume() -> int:
        if not output.draws_tree:
            check_output_flags(output.quiet, output.verbose, output.trace)
        from agentscript.app.resume import resume

        return _show_run(config, output, f"resume of {run}", lambda config: resume(run, config))

    return reporting_errors(resume)


def _show_run(
    config: RunConfig,
    output: RunOutput,
    title: str,
    start: Callable[[RunConfig], RunResult],
    reflect_on: str | None = None,
) -> int:
    """Run with the terminal's hooks and live sinks, then show the result (or how far a failed
    run got) as `output` says; with `reflect_on` (the program's path), reflect afterwards."""
    stream = _streams(output)
    sinks = _live_sinks(output, config, stream)
    # Questions at the terminal (missing input, approvals) pause the live progress.
    pause = next((sink.pausing for sink in sinks if isinstance(sink, LiveProgress)), _unpaused)
    config = at_the_terminal(config, pause)
    config = replace(config, stream=stream, trace_sinks=[*config.trace_sinks, *sinks])
    try:
        with ExitStack() as live:
            for sink in sinks:
                if isinstance(sink, AbstractContextManager):
                    live.enter_context(sink)
            result = start(config)
    except AgentScriptError as error:
        # Show how far the run got: the partial trace goes where the full one would have.
        if error.trace is not None and output.trace_file is not None:
            render.write_trace_file(output.trace_file, error.trace)
        if error.trace and output.draws_tree:
            trace_tree.print_tree(trace_tree.run_tree(title, error.trace, error.spent), sys.stderr)
        elif error.trace is not None and output.pretty_trace:
            render.print_trace(error.trace, sys.stderr)
        if error.spent is not None and output.report_usage and not output.quiet:
            print(render.usage_line(error.spent), file=sys.stderr)
        _after_run(error.journal, config, reflect_on)
        raise
    if output.trace_file is not None:
        render.write_trace_file(output.trace_file, result.trace)
    if output.draws_tree:
        _print_value_and_tree(output, title, result)
    elif output.quiet:
        print(render.to_json(result.value))
    else:
        print(render.run_output(result.value, result.trace, output.trace_file))
    if output.pretty_trace and not output.draws_tree:
        sys.stdout.flush()
        render.print_trace(result.trace, sys.stdout)
    if output.report_usage and not output.quiet:
        print(render.usage_line(result.usage), file=sys.stderr)
    _after_run(result.journal, config, reflect_on)
    return 0


def _unpaused(ask: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return ask


def at_the_terminal(
    config: RunConfig, pause: Callable[[Callable[[Any], Any]], Callable[[Any], Any]] = _unpaused
) -> RunConfig:
    """`config` with the terminal's hooks: missing input is asked for when a person is
    there, approvals are asked at the terminal (both `pause` the live progress while they
    ask), debug output and dry-run prompts go to stderr."""
    from agentscript.cli.approval import terminal_approver

    dry_run = config.model == "dry-run"
    approver = terminal_approver()
    return replace(
        config,
        input_provider=PromptedInput(pause(input)) if at_terminal() else None,
        debug_stream=sys.stderr,
        on_dry_run_prompt=render.PromptPrinter(sys.stderr) if dry_run else None,
        ask_user=pause(approver) if approver is not None else None,
    )


def _print_value_and_tree(output: RunOutput, title: str, result: RunResult) -> None:
    """`run --trace pretty`: the value (or the whole JSON document with `--json`), then the
    tree of what the run did."""
    if output.json:
        print(render.run_output(result.value, result.trace, output.trace_file))
    else:
        print(render.to_json(result.value))
    sys.stdout.flush()
    trace_tree.print_tree(trace_tree.run_tree(title, result.trace, result.usage), sys.stdout)


def _tree_title(path: str, input_value: Any) -> str:
    shown = trace_tree.brief(input_value, 120, 80) if input_value not in (None, {}) else ""
    return f"{path} {shown}".rstrip()


def _streams(output: RunOutput) -> bool:
    """Stream when asked, and by default when someone watches stderr (not with --quiet)."""
    if output.stream is not None:
        return output.stream
    return not output.quiet and sys.stderr.isatty()


def _live_sinks(output: RunOutput, config: RunConfig, stream: bool) -> list[TraceSink]:
    """Live progress at a terminal (not with --quiet); without a terminal, an explicit
    `--stream` echoes the answer text to stderr."""
    if output.quiet or config.model == "dry-run":
        return [StreamEcho(sys.stderr)] if output.stream else []
    if sys.stderr.isatty():
        return [LiveProgress(sys.stderr)]
    return [StreamEcho(sys.stderr)] if stream else []


def _after_run(journal: RunJournal | None, config: RunConfig, reflect_on: str | None) -> None:
    """Wait for the run's journal record, warn about anything that kept it incomplete, then
    reflect on the program at `reflect_on` when asked (imported only then: reflection needs
    the memory service)."""
    if journal is None:
        return
    for problem in journal.wait(10.0):
        print(f"warning: run journal: {problem}", file=sys.stderr)
    if reflect_on is not None:
        from agentscript.cli.reflect import reflect_after_run

        reflect_after_run(config, reflect_on, journal.run_id)


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
        for line in diagnostic_lines(diagnostic, with_source=sys.stderr.isatty()):
            print(line, file=sys.stderr)
    if any(diagnostic.severity == "error" for diagnostic in diagnostics):
        return 1
    if report_ok:
        print(f"{path}: ok", file=sys.stderr)
    return 0


def list_models(path: str, as_json: bool) -> int:
    """`agentscript models FILE`: where each llm import goes and whether its key is set; exit 1
    when one of them cannot be used."""

    def show() -> int:
        reports = programs.models(programs.load(path))
        if as_json:
            print(render.to_json([report.to_json() for report in reports]))
        else:
            print(render.model_table(reports))
        # Exit 1 when a model cannot be used as configured (bad URI, required key missing).
        return 1 if any(report.problem is not None for report in reports) else 0

    return reporting_errors(show)


def parse_file(path: str) -> int:
    def show_tree() -> int:
        print(render.to_json(programs.load(path).to_json()))
        return 0

    return reporting_errors(show_tree)
