"""The `agentscript` entry point: pick the REPL, a subcommand, or the 0.1.0 flag form.

Only the dispatch lives here; click is imported only for the subcommands, prompt_toolkit only
for the REPL, so `agentscript FILE --check` starts as fast as the library allows.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from agentscript.cli import legacy
from agentscript.cli.errors import CliError, reader_gone

# The words that select a subcommand; anything else is a file of the 0.1.0 form.
SUBCOMMANDS = frozenset(
    {
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
        "eval",
    }
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on `argv` (default: `sys.argv[1:]`) and return the exit code.

    A reader that goes away (`agentscript … | head`) ends the command quietly with exit 0, as
    other command-line tools do, instead of a "Broken pipe" message.
    """
    try:
        code = _dispatch(list(sys.argv[1:] if argv is None else argv))
        sys.stdout.flush()
    except BrokenPipeError:
        return reader_gone()
    return code


def _dispatch(args: list[str]) -> int:
    if not args:
        from agentscript.cli.repl import run_repl

        return run_repl()
    if args[0] in SUBCOMMANDS:
        from agentscript.cli.app import invoke

        return invoke(args)
    return _flag_form(args)


def _flag_form(args: list[str]) -> int:
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
