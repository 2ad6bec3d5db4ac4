"""`agentscript fmt FILE…`: lay programs out canonically (see docs/editors.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command(name="fmt")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--check", is_flag=True, help="Change nothing; exit 1 if a file would change.")
@click.pass_context
def fmt_command(ctx: click.Context, files: tuple[str, ...], check: bool) -> None:
    """Format AgentScript files in place (comments kept; refused if the meaning would change)."""
    from agentscript.app.format_files import format_file
    from agentscript.cli.errors import REPORTED_ERRORS, error_lines
    from agentscript.lang.source_formatter import FormatRefused

    failed = False
    for name in files:
        try:
            outcome = format_file(Path(name), write=not check)
        except FormatRefused as refused:
            print(f"{name}: not formatted: {refused}", file=sys.stderr)
            failed = True
            continue
        except REPORTED_ERRORS as error:
            for line in error_lines(error):
                print(line, file=sys.stderr)
            failed = True
            continue
        if outcome.changed:
            print(f"{'would reformat' if check else 'reformatted'} {name}", file=sys.stderr)
            failed |= check
    ctx.exit(1 if failed else 0)
