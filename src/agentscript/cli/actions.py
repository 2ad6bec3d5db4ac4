"""The three things the command does with a file: run it, check it, print its syntax tree.

Both command-line forms (the `run`/`check`/`parse` subcommands and the 0.1.0 flag form) call
these, so they behave alike. Each returns an exit code and reports errors itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscript import api
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
    from agentscript.composition import ModelChoice as ModelChoice
    from agentscript.composition import RunConfig
    from agentscript.providers.tools.approvals import ApprovalMode, AskUser
    from agentscript.runtime.interpreter import RunResult
    from agentscript.runtime.ports import RunJournal
    from agentscript.runtime.trace import TraceSink
from agentscript.runtime.errors import AgentScriptError
from agentscript.runtime.jsjson import parse


@dataclass(frozen=True, slots=True)
class RunOptions:
    """Everything a run was asked for on the command line."""

    path: str
    input_json: str | None = None
    input_file: str | None = None
    agent: str | None = None
    function: str | None = None
    model: ModelChoice = "real"
    responses: str | None = None
    prompt_layout: str | None = None  # "0.1.0" or "compact"; None lets the provider choose
    trace: str | None = None  # a file to write the trace to, or "pretty"
    verbose: bool = False
    quiet: bool = False
    max_tokens: int | None = None
    max_calls: int | None = None
    max_seconds: float | None = None
    record: str | None = None
    replay: str | None = None
    # The `run` subcommand says what a run spent on stderr; the 0.1.0 form stays silent.
    report_usage: bool = False
    workspace: str | None = None
    memory_root: str | None = None
    mock_tools: bool = False
    approve: ApprovalMode | None = None
    approvals: str | None = None
    env_allow: str | None = None  # comma-separated names
    concurrency: int = 4
    variants: tuple[str, ...] = ()  # SITE=NAME
    journal: bool = True
    otel: bool | None = None
    learn: bool | None = None  # None: only when a real model answers
    learn_model: str | None = None
    memory_db: str | None = None
    # After the run, let its agent reflect on it (agentscript.cli.reflect.reflect_after_run).
    reflect: bool = False
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


def run_program(options: RunOptions) -> int:
    return reporting_errors(partial(_run, options))


def _run(options: RunOptions) -> int:
    if not options.draws_tree:
        check_output_flags(options.quiet, options.verbose, options.trace)
    check_input_flags(options.input_json, options.input_file)
    from agentscript.composition import RunConfig

    input_value = read_input(options.input_json, options.input_file)
    program = api.load(options.path)
    stream = _streams(options)
    sinks = _live_sinks(options, stream)
    # Questions at the terminal (missing input, approvals) pause the live progress.
    pause = next((sink.pausing for sink in sinks if isinstance(sink, LiveProgress)), _unpaused)
    approver = _terminal_approver()
    config = RunConfig(
        model=options.model,
        responses=options.responses,
        agent=options.agent,
        function=options.function,
        input_provider=PromptedInput(pause(input)) if at_terminal() else None,
        debug_stream=sys.stderr,
        on_dry_run_prompt=render.PromptPrinter(sys.stderr) if options.model == "dry-run" else None,
        max_tokens=options.max_tokens,
        max_calls=options.max_calls,
        max_seconds=options.max_seconds,
        record=options.record,
        replay=options.replay,
        workspace=options.workspace,
        memory_root=options.memory_root,
        mock_tools=options.mock_tools,
        approve=options.approve,
        approvals=options.approvals,
        ask_user=pause(approver) if approver is not None else None,
        env_allow=_names(options.env_allow),
        concurrency=options.concurrency,
        variants=_variants(options.variants),
        journal=options.journal,
        otel=options.otel,
        learn=options.learn,
        learn_model=options.learn_model,
        memory_db=options.memory_db,
        stream=stream,
        trace_sinks=list(sinks),
        prompt_layout=options.prompt_layout,
    )
    try:
        with ExitStack() as live:
            for sink in sinks:
                if isinstance(sink, AbstractContextManager):
                    live.enter_context(sink)
            result = api.run(program, input_value, config)
    except AgentScriptError as error:
        # Show how far the run got: the partial trace goes where the full one would have.
        if error.trace is not None and options.trace_file is not None:
            render.write_trace_file(options.trace_file, error.trace)
        if error.trace and options.draws_tree:
            title = _tree_title(options.path, input_value)
            trace_tree.print_tree(trace_tree.run_tree(title, error.trace, error.spent), sys.stderr)
        elif error.trace is not None and options.pretty_trace:
            render.print_trace(error.trace, sys.stderr)
        if error.spent is not None and options.report_usage and not options.quiet:
            print(render.usage_line(error.spent), file=sys.stderr)
        _report_journal(error.journal)
        if options.reflect:
            _reflect(options, config, program.source_path, error.journal)
        raise
    if options.trace_file is not None:
        render.write_trace_file(options.trace_file, result.trace)
    if options.draws_tree:
        _print_value_and_tree(options, input_value, result)
    elif options.quiet:
        print(render.to_json(result.value))
    else:
        print(render.run_output(result.value, result.trace, options.trace_file))
    if options.pretty_trace and not options.draws_tree:
        sys.stdout.flush()
        render.print_trace(result.trace, sys.stdout)
    if options.report_usage and not options.quiet:
        print(render.usage_line(result.usage), file=sys.stderr)
    _report_journal(result.journal)
    if options.reflect:
        _reflect(options, config, program.source_path, result.journal)
    return 0


def _print_value_and_tree(options: RunOptions, input_value: Any, result: RunResult) -> None:
    """`run --trace pretty`: the value (or the whole JSON document with `--json`), then the
    tree of what the run did."""
    if options.json:
        print(render.run_output(result.value, result.trace, options.trace_file))
    else:
        print(render.to_json(result.value))
    sys.stdout.flush()
    title = _tree_title(options.path, input_value)
    trace_tree.print_tree(trace_tree.run_tree(title, result.trace, result.usage), sys.stdout)


def _tree_title(path: str, input_value: Any) -> str:
    shown = trace_tree.brief(input_value, 120, 80) if input_value not in (None, {}) else ""
    return f"{path} {shown}".rstrip()


def _streams(options: RunOptions) -> bool:
    """Stream when asked, and by default when someone watches stderr (not with --quiet)."""
    if options.stream is not None:
        return options.stream
    return not options.quiet and sys.stderr.isatty()


def _unpaused(ask: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return ask


def _live_sinks(options: RunOptions, stream: bool) -> list[TraceSink]:
    """Live progress at a terminal (not with --quiet); without a terminal, an explicit
    `--stream` echoes the answer text to stderr."""
    if options.quiet or options.model == "dry-run":
        return [StreamEcho(sys.stderr)] if options.stream else []
    if sys.stderr.isatty():
        return [LiveProgress(sys.stderr)]
    return [StreamEcho(sys.stderr)] if stream else []


def _report_journal(journal: RunJournal | None, timeout: float = 10.0) -> None:
    """Wait for the run's journal record and warn about anything that kept it incomplete."""
    if journal is None:
        return
    for problem in journal.wait(timeout):
        print(f"warning: run journal: {problem}", file=sys.stderr)


def _reflect(
    options: RunOptions, config: RunConfig, program_path: str | None, journal: RunJournal | None
) -> None:
    """`run --reflect`; imported only then, since reflection needs the memory service."""
    from agentscript.cli.reflect import reflect_after_run

    reflect_after_run(options, config, program_path, journal)


def _terminal_approver() -> AskUser | None:
    from agentscript.cli.approval import terminal_approver

    return terminal_approver()


def _variants(pairs: tuple[str, ...]) -> dict[str, str]:
    """`--variant SITE=NAME` pairs; the site id itself may contain `=` only before the last."""
    chosen: dict[str, str] = {}
    for pair in pairs:
        site, separator, name = pair.rpartition("=")
        if not separator or not site or not name:
            raise CliError(f"--variant expects SITE=NAME, got '{pair}'")
        chosen[site] = name
    return chosen


def _names(text: str | None) -> list[str] | None:
    """`--env-allow A, B` as a list of names; None when the flag was not given."""
    if text is None:
        return None
    return [name.strip() for name in text.split(",") if name.strip()]


def undo_run(trace_path: str, workspace: str | None, dry_run: bool, force: bool = False) -> int:
    """`agentscript undo TRACE.json`: revert the file effects a run recorded, newest first, in
    `workspace` (the current directory when not given) and nowhere else."""

    from agentscript.providers.tools.effects import undo_trace

    def undo() -> int:
        trace = read_trace_file(trace_path)
        report = undo_trace(trace, workspace or Path.cwd(), dry_run=dry_run, force=force)
        print(render.undo_report(report, dry_run))
        return 0 if report["ok"] else 1

    return reporting_errors(undo)


def read_trace_file(path: str) -> list[Any]:
    from agentscript.runtime.bounded_input import MIB, UnusableInput, read_regular_text

    try:
        text = read_regular_text(Path(path), 64 * MIB, "Trace")
    except UnusableInput as problem:
        raise CliError(str(problem)) from None
    try:
        trace = parse(text)
    except ValueError as problem:
        raise CliError(f"Trace {path} is not valid JSON: {problem}") from None
    if isinstance(trace, dict) and isinstance(trace.get("trace"), list):
        trace = trace["trace"]  # the whole `run` output was saved
    if not isinstance(trace, list):
        raise CliError(f"Trace {path} must be a JSON list of events")
    return trace


def list_tools(path: str, workspace: str | None, as_json: bool, start_servers: bool = True) -> int:
    """`agentscript tools FILE`: each tool import, and for MCP servers the tools they offer."""

    def show() -> int:
        program = api.load(path)
        listing = api.tools(program, Path(workspace) if workspace else None, start_servers)
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
    diagnostics = api.check(api.load(path))
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
        reports = api.models(api.load(path))
        if as_json:
            print(render.to_json([report.to_json() for report in reports]))
        else:
            print(render.model_table(reports))
        # Exit 1 when a model cannot be used as configured (bad URI, required key missing).
        return 1 if any(report.problem is not None for report in reports) else 0

    return reporting_errors(show)


def parse_file(path: str) -> int:
    def show_tree() -> int:
        print(render.to_json(api.load(path).to_json()))
        return 0

    return reporting_errors(show_tree)
