"""The options several commands share, declared once: `--workspace`, `--db`, `--mock`, `--json`,
the run budgets.

Each is a decorator factory, so a command states what its option means for it (`--workspace`
is "whose journal to read" for one and "where tools are confined" for another) while the flag,
its value name and its parsing stay the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

Command = TypeVar("Command", bound=Callable[..., Any])
Decorator = Callable[[Command], Command]

DB_HELP = (
    "The memory database, a SQLite file or a postgresql:// URI (default: "
    "$AGENTSCRIPT_MEMORY_DB, else ~/.agentscript/memory.db)."
)


def workspace_option(help: str, default: str | None = None) -> Decorator[Any]:
    """`--workspace DIR`; with a `default` (".") the help shows it."""
    return click.option(
        "--workspace", metavar="DIR", default=default, show_default=default is not None, help=help
    )


def db_option(name: str = "db") -> Decorator[Any]:
    """`--db PATH`, the memory database, passed to the command as `name`."""
    return click.option("--db", name, metavar="PATH", help=DB_HELP)


def mock_option(help: str) -> Decorator[Any]:
    """`--mock [FILE]`: the mock model, with scripted answers from FILE when one is given;
    the command receives `responses`: None without the flag, "" for the bare flag."""
    return click.option(
        "--mock",
        "responses",
        is_flag=False,
        flag_value="",
        default=None,
        metavar="[FILE]",
        help=help,
    )


def json_option(help: str = "Print JSON.") -> Decorator[Any]:
    return click.option("--json", "as_json", is_flag=True, help=help)


def run_budget_options(command: Command) -> Command:
    """`--max-tokens N`, `--max-calls N`, `--max-seconds N`: the budgets of one run (`run`,
    `runs resume`), received as `max_tokens`, `max_calls`, `max_seconds`."""
    for option in reversed(
        (
            click.option(
                "--max-tokens", type=click.IntRange(min=1), help="Stop the run past N tokens."
            ),
            click.option(
                "--max-calls", type=click.IntRange(min=1), help="Stop the run past N model calls."
            ),
            click.option(
                "--max-seconds",
                type=click.FloatRange(min=0, min_open=True),
                help="Stop the run after N s.",
            ),
        )
    ):
        command = option(command)
    return command
