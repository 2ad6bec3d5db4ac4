"""How the command line reports problems: one line per problem on stderr, never a traceback.

Library errors already carry their codes and locations; this module only picks their CLI form.
"""

from __future__ import annotations

import os
import sys

from agentscript.app.errors import AppError
from agentscript.cli.source_excerpt import excerpt
from agentscript.lang.errors import Diagnostic, ParseError, SemanticError
from agentscript.runtime.errors import AgentScriptError, ExecutionError


class CliError(Exception):
    """A mistake in how the command was called or in its input (flags, JSON, files).

    Raised by the CLI's own code so it is reported exactly like a library error: message, exit 1.
    """


# The errors a command reports and survives; anything else is a bug and should show its traceback.
REPORTED_ERRORS = (
    CliError,
    AppError,
    ParseError,
    SemanticError,
    AgentScriptError,
    OSError,
    ValueError,
)


def error_lines(error: BaseException, with_source: bool = False) -> list[str]:
    """The lines that describe `error`, naming the file and position when they are known;
    `with_source` adds the source line with a caret under the column (for a terminal)."""
    if isinstance(error, SemanticError):
        lines: list[str] = []
        for diagnostic in error.diagnostics:
            lines += diagnostic_lines(diagnostic, with_source)
        return lines
    if isinstance(error, ParseError | ExecutionError):
        position = error.position
        if with_source and position is not None:
            return [error.located(), *excerpt(error.path, position.line, position.column)]
        return [error.located()]
    if isinstance(error, OSError) and error.strerror:
        return [f"{error.strerror}: {error.filename}" if error.filename else error.strerror]
    return [str(error) or type(error).__name__]


def diagnostic_lines(diagnostic: Diagnostic, with_source: bool = False) -> list[str]:
    """A diagnostic as `ERROR CODE at file:L:C: message`, with its source line when asked."""
    start = diagnostic.range.start
    source = excerpt(diagnostic.path, start.line, start.column) if with_source else []
    return [diagnostic.format_located(), *source]


def reader_gone() -> int:
    """The reader of stdout went away (`agentscript … | head`): end quietly with exit 0, as
    other command-line tools do. stdout is pointed at /dev/null, so the interpreter's final
    flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 0
