"""`agentscript generate python PROGRAM -o PACKAGE/`: write a typed Python client.

Parses the options, makes one call to `agentscript.app.python_client` and says what it
wrote. Exit codes: 0 written; 2 when nothing was written (the program does not check, cannot
become a client, or the folder is not one to write into).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import click

from agentscript.cli.actions import reporting_errors

# The exit code when no client was written (reporting_errors says 1 for every reported error).
NOT_GENERATED = 2


@click.group(name="generate")
def generate_group() -> None:
    """Generate code from a program."""


@generate_group.command(name="python")
@click.argument("program")
@click.option(
    "-o",
    "--out",
    "package",
    required=True,
    metavar="PACKAGE/",
    help="The package folder (its name is the import name); replaced if generated before.",
)
@click.pass_context
def python_command(ctx: click.Context, /, program: str, package: str) -> None:
    """A typed client: Pydantic models for the inputs and results, a sync and an async
    function per agent entry point. See docs/python.md."""
    code = reporting_errors(partial(_generate, program, package))
    ctx.exit(NOT_GENERATED if code == 1 else code)


def _generate(program: str, package: str) -> int:
    from agentscript.app.python_client import generate_python_client

    written = generate_python_client(program, package)
    print(f"wrote {len(written)} files to {Path(package)}/ (import {Path(package).name})")
    return 0
