"""The `agentscript` entry point: pick the REPL, a subcommand, or the 0.1.0 flag form.

Only the dispatch lives here; click is imported only for the subcommands (each subcommand's
module only when it is named), prompt_toolkit only for the REPL, the 0.1.0 parser only for its
form, so `agentscript check FILE` starts as fast as the library allows.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

# The words that select a subcommand; anything else is a file of the 0.1.0 form.
SUBCOMMANDS = frozenset(
    {
        "architect",
        "run",
        "check",
        "parse",
        "repl",
        "models",
        "tools",
        "undo",
        "memory",
        "runs",
        "feedback",
        "reflect",
        "profile",
        "autonomy",
        "learn",
        "lsp",
        "fmt",
        "eval",
        "generate",
        "optimize",
        "submit",
        "worker",
    }
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on `argv` (default: `sys.argv[1:]`) and return the exit code.

    A reader that goes away (`agentscript … | head`) ends the command quietly with exit 0, as
    other command-line tools do, instead of a "Broken pipe" message.
    """
    try:
        code = _dispatch(list(sys.argv[1:] if argv is None else argv))
        if not sys.stdout.closed:  # the language server closes it at the end of a session
            sys.stdout.flush()
    except BrokenPipeError:
        from agentscript.cli.errors import reader_gone

        return reader_gone()
    return code


def _dispatch(args: list[str]) -> int:
    if not args:
        from agentscript.cli.repl import run_repl

        return run_repl()
    if args[0] == "check" and _plain_check(args[1:]):
        from agentscript.cli.actions import check_files

        files = [arg for arg in args[1:] if arg != "--quiet"]
        return check_files(files, report_ok="--quiet" not in args)
    if args[0] in SUBCOMMANDS:
        from agentscript.cli.app import invoke

        return invoke(args)
    return _flag_form(args)


def _plain_check(rest: list[str]) -> bool:
    """`check FILE... [--quiet]` with nothing click has to explain (no other option, no help):
    checked without loading click, the way an editor or a pre-commit hook calls it often.
    Anything else goes to the click command, which answers the same for these."""
    files = [arg for arg in rest if arg != "--quiet"]
    return bool(files) and not any(arg.startswith("-") for arg in files)


def _flag_form(args: list[str]) -> int:
    from agentscript.cli import legacy, optimizer_mode
    from agentscript.cli.errors import CliError

    if optimizer_mode.applies(args):
        return optimizer_mode.run(args)
    try:
        parsed = legacy.parse_args(args)
    except CliError as error:
        print(error, file=sys.stderr)
        return 1
    if parsed.request == "version":
        from agentscript import __version__

        print(__version__)
        return 0
    if parsed.request == "help":
        from agentscript.cli.app import invoke

        return invoke(["--help"])
    if parsed.file is None:
        # Options without a file: say how to call the command instead of guessing.
        from agentscript.cli.app import usage_text

        print(usage_text(), file=sys.stderr)
        return 1
    return legacy.act(parsed)
