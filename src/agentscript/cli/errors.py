"""How the command line reports problems: one line per problem on stderr, never a traceback.

Library errors already carry their codes and locations; this module only picks their CLI form.
"""

from __future__ import annotations

from agentscript.app.errors import AppError
from agentscript.lang.errors import ParseError, SemanticError
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


def error_lines(error: BaseException) -> list[str]:
    """The lines that describe `error`, naming the file and position when they are known."""
    if isinstance(error, SemanticError):
        return [diagnostic.format_located() for diagnostic in error.diagnostics]
    if isinstance(error, ParseError | ExecutionError):
        return [error.located()]
    if isinstance(error, OSError) and error.strerror:
        return [f"{error.strerror}: {error.filename}" if error.filename else error.strerror]
    return [str(error) or type(error).__name__]
