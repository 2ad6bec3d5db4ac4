"""The options several commands share, declared once: `--workspace`, `--db`, `--mock`, `--json`,
the run budgets.

Each is a decorator factory, so a command states what its option means for it (`--workspace`
is "whose journal to read" for one and "where tools are confined" for another) while the flag,
its value name and its parsing stay the same everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

Command = TypeVar("Command", bound=Callable[..., Any])
Decorator = Callable[[Command], Command]

DB_HELP = (
    "The memory database, a SQLite file or a postgresql:// URI (default: "
    "$AGENTSCRIPT_MEMORY_DB, else ~/.agentscript/memory.db)."
)


def approve_option(
    help: str, choices: tuple[str, ...] = ("auto", "ask", "deny"), default: str | None = None
) -> Decorator[Any]:
    """`--approve MODE`: what calls that need approval get (agentscript.providers.tools
    .approvals); a command where nobody can be asked offers only `auto` and `deny`."""
    return click.option(
        "--approve",
        type=click.Choice(choices),
        default=default,
        show_default=default is not None,
        help=help,
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
    `runs resume`, each run of `submit`), received as `max_tokens`, `max_calls`, `max_seconds`."""
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


def timeout_option(command: Command) -> Command:
    """`--timeout SECONDS`: how long to wait for a model's answer (for each piece of a streamed
    one), received as `timeout`; the command passes it on with `timeout_environ`."""
    return click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True),
        metavar="SECONDS",
        help="Wait this long for a model's answer, or for each piece of a streamed one "
        "(default 300, or $AGENTSCRIPT_LLM_TIMEOUT_MS).",
    )(command)


def timeout_environ(seconds: float | None) -> Mapping[str, str] | None:
    """The environment a run reads its model settings from, with `--timeout` in it as the
    providers read it (AGENTSCRIPT_LLM_TIMEOUT_MS); None (the process's own) without it."""
    if seconds is None:
        return None
    from agentscript.providers.llm.endpoints import TIMEOUT_VARIABLE

    return {**os.environ, TIMEOUT_VARIABLE: str(max(1, round(seconds * 1000)))}


def case_options(command: Command) -> Command:
    """`--data CASES.jsonl`, `--metric`, `--field`, `--tolerance`: the cases a program is scored
    on and how (`eval`, `optimize`), received as `data`, `metric`, `field`, `tolerance`."""
    for option in reversed(
        (
            click.option("--data", required=True, metavar="CASES.jsonl", help="One case per line."),
            click.option(
                "--metric",
                default="exact",
                show_default=True,
                metavar="exact|contains|regex|number|json|JUDGE.as",
                help="How an answer is scored, or a judge program.",
            ),
            click.option(
                "--field", metavar="PATH", help="Score this part of the value (items[0].name)."
            ),
            click.option(
                "--tolerance", type=click.FloatRange(min=0), help="Relative tolerance (number)."
            ),
        )
    ):
        command = option(command)
    return command
