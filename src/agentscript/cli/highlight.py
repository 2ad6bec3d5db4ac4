"""AgentScript source coloured for a terminal, with the Pygments lexer of lang/.

The REPL colours what is typed with it, and a diagnostic's source line is shown with it.
Colour is only for terminals: callers pass `color=False` (or check `isatty`) for pipes.
"""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def _lexer() -> Any:
    from agentscript.lang.pygments_lexer import AgentScriptLexer

    return AgentScriptLexer()


def highlight(source: str) -> str:
    """`source` with ANSI colours (256-colour palette); the text itself is unchanged."""
    from pygments import highlight as render
    from pygments.formatters import Terminal256Formatter

    coloured = render(source, _lexer(), Terminal256Formatter(style="default"))
    # Pygments ends its output with a newline; keep the caller's line endings instead.
    return coloured if source.endswith("\n") else coloured.removesuffix("\n")


def prompt_lexer() -> Any:
    """A prompt_toolkit lexer colouring REPL input as AgentScript."""
    from prompt_toolkit.lexers import PygmentsLexer

    from agentscript.lang.pygments_lexer import AgentScriptLexer

    return PygmentsLexer(AgentScriptLexer)
