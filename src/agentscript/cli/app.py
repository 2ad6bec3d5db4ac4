"""The `run`, `check`, `parse` and `repl` subcommands, declared with click.

Usage errors are reported like every other error: one plain line on stderr and exit code 1
(click's own convention, a usage banner and exit code 2, would break the 0.1.0 contract).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from importlib import import_module
from typing import IO, Any

import click

from agentscript import __version__
from agentscript.cli import actions
from agentscript.cli.options import (
    approve_option,
    json_option,
    mock_option,
    run_budget_options,
    timeout_environ,
    timeout_option,
    workspace_option,
)

# The command groups of their own modules, imported when a command line names them (or asks
# for the full help), so `agentscript check` does not load the memory or learning commands.
LAZY_COMMANDS = {
    "architect": ("agentscript.cli.architect", "architect_command"),
    "autonomy": ("agentscript.cli.autonomy", "autonomy_group"),
    "eval": ("agentscript.cli.eval", "eval_command"),
    "feedback": ("agentscript.cli.feedback", "feedback_command"),
    "learn": ("agentscript.cli.learn", "learn_command"),
    "lsp": ("agentscript.cli.lsp", "lsp_command"),
    "fmt": ("agentscript.cli.fmt", "fmt_command"),
    "generate": ("agentscript.cli.generate", "generate_group"),
    "memory": ("agentscript.cli.memory_service", "memory_commands"),
    "optimize": ("agentscript.cli.optimize", "optimize_command"),
    "submit": ("agentscript.cli.queue", "submit_command"),
    "worker": ("agentscript.cli.queue", "worker_command"),
    "profile": ("agentscript.cli.reflect", "profile_group"),
    "reflect": ("agentscript.cli.reflect", "reflect_command"),
    "runs": ("agentscript.cli.runs", "runs_group"),
}

HELP = """Run, check and explore AgentScript programs.

\b
With no arguments, starts the REPL. The 0.1.0 flag form also works:
  agentscript FILE [--check | --parse] [--input JSON | --input-file F]
                   [--agent A] [--function F] [--real-llm | --mock | --dry-run]
                   [--model URI|NAME=URI]... [--trace [FILE|pretty]] [--trace-file F]
                   [--concurrency N] [--verbose | --quiet]
It answers with the mock model unless --real-llm or --model is given (as 0.1.0 did); in a
workspace of a newer release of the original, with the real model unless --mock (as 0.1.6 on).
"""


class PlainUsageError(click.ClickException):
    """A usage error shown as its bare message, with exit code 1."""

    exit_code = 1

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(self.format_message(), file=file, err=file is None)


@contextmanager
def plain_usage_errors() -> Iterator[None]:
    """Turn click's usage errors into the 0.1.0 messages (`Unknown option '--x'`, …)."""
    try:
        yield
    except click.NoSuchOption as error:
        raise PlainUsageError(f"Unknown option '{error.option_name}'") from None
    except click.BadOptionUsage as error:
        if error.message.endswith("requires an argument."):
            raise PlainUsageError(f"Expected value after {error.option_name}") from None
        raise PlainUsageError(error.format_message()) from None
    except click.UsageError as error:
        raise PlainUsageError(error.format_message()) from None


class _Command(click.Command):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        with plain_usage_errors():
            return super().parse_args(ctx, args)


class _Group(click.Group):
    command_class = _Command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        with plain_usage_errors():
            return super().parse_args(ctx, args)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        with plain_usage_errors():
            return super().resolve_command(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        lazy = LAZY_COMMANDS.get(cmd_name)
        if lazy is None:
            return super().get_command(ctx, cmd_name)
        command = getattr(import_module(lazy[0]), lazy[1])
        assert isinstance(command, click.Command)
        return command


def _variants(ctx: click.Context, param: click.Parameter, pairs: tuple[str, ...]) -> dict[str, str]:
    """`--variant SITE=NAME` pairs; the site id itself may contain `=` only before the last."""
    chosen: dict[str, str] = {}
    for pair in pairs:
        site, separator, name = pair.rpartition("=")
        if not separator or not site or not name:
            raise click.UsageError(f"--variant expects SITE=NAME, got '{pair}'")
        chosen[site] = name
    return chosen


def _names(ctx: click.Context, param: click.Parameter, text: str | None) -> list[str] | None:
    """`--env-allow A, B` as a list of names; None when the flag was not given."""
    if text is None:
        return None
    return [name.strip() for name in text.split(",") if name.strip()]


@click.group(
    cls=_Group,
    help=HELP,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, "-v", "--version", message="%(version)s")
@click.pass_context
def cli(ctx: click.Context) -> None:
    if ctx.invoked_subcommand is None:
        from agentscript.cli.repl import run_repl

        ctx.exit(run_repl())


@cli.command(name="run", context_settings={"allow_extra_args": True})
@click.argument("file", required=False)
@click.option("--input", "input_json", metavar="JSON", help="Input object as JSON.")
@click.option("--input-file", metavar="FILE", help="Read the input object from a JSON file.")
@click.option("--agent", metavar="NAME", help="Entry agent (default: the main agent).")
@click.option("--function", metavar="NAME", help="Entry function (default: its main func).")
@mock_option(
    "Use the mock model: shape defaults, or scripted answers from FILE "
    "(put --mock after the program, or write --mock=FILE)."
)
@click.option(
    "--model",
    "models",
    multiple=True,
    metavar="URI|NAME=URI",
    help="Answer with this model instead of the program's (every `import llm`, or the one "
    "named NAME). Repeatable.",
)
@click.option("--dry-run", is_flag=True, help="Print each prompt to stderr instead of sending it.")
@click.option(
    "--prompt-layout",
    type=click.Choice(["0.1.0", "compact"]),
    help="Prompt layout (default: compact for real providers, 0.1.0 for --mock/--dry-run).",
)
@click.option(
    "--trace",
    is_flag=False,
    flag_value="pretty",
    metavar="[FILE|pretty]",
    help="Write the trace to FILE; `pretty` (or --trace alone) prints the value, then a tree "
    "of what the run did.",
)
@click.option("--trace-file", metavar="FILE", help="Write the trace to FILE (as --trace FILE).")
@click.option(
    "--json", "as_json", is_flag=True, help="With --trace pretty: the JSON document, not the value."
)
@click.option("--verbose", is_flag=True, help="Print the trace after the result.")
@click.option(
    "--quiet", is_flag=True, help="Print only the result value (no progress, no usage line)."
)
@click.option(
    "--stream/--no-stream",
    default=None,
    help="Show model answers as they arrive (default: when stderr is a terminal).",
)
@run_budget_options
@timeout_option
@click.option("--record", metavar="FILE", help="Save every model exchange to FILE (JSONL).")
@click.option(
    "--replay",
    metavar="RUN|FILE",
    help="Answer model, tool and memory calls from a journaled run (id, prefix, last) or a "
    "recording file instead of making them.",
)
@click.option(
    "--replay-tools",
    type=click.Choice(["all", "effects"]),
    default="all",
    show_default=True,
    help="With --replay: answer every tool call from the run, or only those with effects.",
)
@click.option(
    "--replay-lenient",
    is_flag=True,
    help="With --replay: at the first mismatch go live (model, tools behind approvals) "
    "instead of stopping.",
)
@workspace_option("Confine tools to DIR (default: the program's).")
@click.option("--mock-tools", is_flag=True, help="Answer every tool call with the mock tool.")
@approve_option(
    "Calls that need approval: ask at the terminal (default), approve all, or refuse all."
)
@click.option("--approvals", metavar="FILE", help="Approval policy (YAML or JSON).")
@click.option(
    "--env-allow",
    metavar="NAMES",
    callback=_names,
    help="Comma-separated variables env:// may read.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="How many parallel for iterations run at once.",
)
@click.option(
    "--variant",
    "variants",
    multiple=True,
    metavar="SITE=NAME",
    callback=_variants,
    help="Choose a `use one of` candidate, e.g. main.as#Agent.func[label]=name.",
)
@click.option("--no-journal", is_flag=True, help="Do not record this run in the run journal.")
@click.option(
    "--otel",
    is_flag=True,
    default=None,
    help="Send the run's spans over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT, default "
    "localhost:4318); on by itself when that variable is set. Needs the otel extra.",
)
@click.option(
    "--learn/--no-learn",
    default=None,
    help="Distil experiences from this run (default: only when a real model answered; never "
    "for --mock, --dry-run, --replay). The run memory is written for every run a real model "
    "answered, --no-learn or not (memory.yml auto_sink: false turns it off); --learn also "
    "writes it for --mock and --replay.",
)
@click.option(
    "--learn-model", metavar="URI", help="Model that rewrites learned experiences (default: none)."
)
@click.option("--memory-db", metavar="PATH", help="Long-term memory database for this run.")
@click.option(
    "--reflect", is_flag=True, help="After the run, let its agent reflect on it with its model."
)
@click.pass_context
def run_command(
    ctx: click.Context,
    /,
    file: str | None,
    input_json: str | None,
    input_file: str | None,
    responses: str | None,
    dry_run: bool,
    trace: str | None,
    trace_file: str | None,
    as_json: bool,
    verbose: bool,
    quiet: bool,
    stream: bool | None,
    no_journal: bool,
    reflect: bool,
    **settings: Any,
) -> None:
    """Run a program and print its result and trace as JSON.

    The real model answers unless --mock or --dry-run is given.
    """
    if ctx.args:
        raise PlainUsageError("Unexpected positional argument. Use --input to pass input JSON.")
    if file is None:
        hint = (
            f" (--mock took '{responses}' as its answers file)"
            if responses
            else f" (--trace took '{trace}' as its trace file)"
            if trace not in (None, "pretty")
            else ""
        )
        raise PlainUsageError(f"Missing argument 'FILE'{hint}.")
    if responses is not None and dry_run:
        raise PlainUsageError("Use either --mock or --dry-run, not both")
    replaying = settings["replay"] is not None
    if replaying and (dry_run or (responses is not None and not settings["replay_lenient"])):
        raise PlainUsageError(
            "Use either --replay or --mock/--dry-run, not both (--mock may answer what a "
            "--replay-lenient replay cannot)"
        )
    if not replaying and (settings["replay_lenient"] or settings["replay_tools"] != "all"):
        raise PlainUsageError("--replay-lenient and --replay-tools need --replay")
    if reflect and (no_journal or dry_run or (replaying and not settings["replay_lenient"])):
        raise PlainUsageError(
            "--reflect needs the run journaled: not with --no-journal, --dry-run or a strict "
            "--replay"
        )
    from agentscript.app.configuration import RunConfig

    # The other options are named like the RunConfig fields they set.
    config = RunConfig(
        model="dry-run" if dry_run else "mock" if responses is not None else "real",
        responses=responses or None,
        # What --mock mocks besides the model depends on the program's release.
        by_release="mock" if responses is not None else None,
        journal=not no_journal,
        models=list(settings.pop("models")),
        environ=timeout_environ(settings.pop("timeout")),
        **settings,
    )
    output = actions.RunOutput(
        trace=trace,
        verbose=verbose,
        quiet=quiet,
        report_usage=True,
        tree=True,
        json=as_json,
        trace_path=trace_file,
        stream=stream,
    )
    code = actions.run_program(
        file, config, output, input_json=input_json, input_file=input_file, reflect=reflect
    )
    ctx.exit(code)


@cli.command(name="check")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--quiet", is_flag=True, help="Print nothing for files without problems.")
@click.pass_context
def check_command(ctx: click.Context, files: tuple[str, ...], quiet: bool) -> None:
    """Check programs and print their diagnostics."""
    ctx.exit(actions.check_files(files, report_ok=not quiet))


@cli.command(name="undo")
@click.argument("trace_file", metavar="TRACE.json")
@click.option("--dry-run", is_flag=True, help="Say what would be undone; change nothing.")
@workspace_option("The workspace to undo in (default: the current directory).")
@click.option("--force", is_flag=True, help="Also undo records that carry no content hash.")
@click.pass_context
def undo_command(
    ctx: click.Context, trace_file: str, dry_run: bool, workspace: str | None, force: bool
) -> None:
    """Revert the file effects a run recorded in its trace, newest first.

    Only files of one workspace are touched: records of another workspace are refused and
    listed. A file changed since the run is reported as a conflict and left as it is.
    """
    ctx.exit(actions.undo_run(trace_file, workspace, dry_run, force))


@cli.command(name="tools")
@click.argument("file")
@workspace_option("Where agentscript.mcp.json is read.")
@json_option("Print JSON instead of a list.")
@click.option(
    "--dry", is_flag=True, help="Start no MCP server: show only what the configuration says."
)
@click.pass_context
def tools_command(
    ctx: click.Context, file: str, workspace: str | None, as_json: bool, dry: bool
) -> None:
    """List a program's tool imports and the tools each MCP server offers.

    This starts each MCP server the program imports (and stops it again); --dry does not.
    """
    ctx.exit(actions.list_tools(file, workspace, as_json, start_servers=not dry))


@cli.command(name="models")
@click.argument("file")
@json_option("Print JSON instead of a table.")
@click.pass_context
def models_command(ctx: click.Context, file: str, as_json: bool) -> None:
    """List a program's models: endpoint, model, and whether the key is set (never the key)."""
    ctx.exit(actions.list_models(file, as_json))


@cli.command(name="parse")
@click.argument("file")
@click.pass_context
def parse_command(ctx: click.Context, file: str) -> None:
    """Print a program's syntax tree as JSON."""
    ctx.exit(actions.parse_file(file))


@cli.command(name="repl")
@click.pass_context
def repl_command(ctx: click.Context) -> None:
    """Start the interactive REPL (answers with the mock model)."""
    from agentscript.cli.repl import run_repl

    ctx.exit(run_repl())


def invoke(args: list[str]) -> int:
    """Run the click command line on `args` and return its exit code."""
    try:
        code = cli.main(args, prog_name="agentscript", standalone_mode=False)
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except click.Abort:
        click.echo("Interrupted", err=True)
        return 130
    return code if isinstance(code, int) else 0


def usage_text() -> str:
    with click.Context(cli, info_name="agentscript", **cli.context_settings) as ctx:
        return cli.get_help(ctx)
