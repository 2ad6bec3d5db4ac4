"""A Pygments lexer for AgentScript, registered under the `pygments.lexers` entry point.

`pygmentize -l agentscript FILE` uses it, and so do the REPL's input and the source line shown
under a diagnostic. It follows the real lexer (lexer.py) for what a token is, and adds the roles
that only the grammar gives a word: declaration keywords, config keys, shape types, the import
kinds and the later-form words (`max`, `parallel`, `selected`, `as`) that stay identifiers to
the parser but read as keywords to a person.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pygments.lexer import RegexLexer, default, include, words
from pygments.lexer import bygroups as _untyped_bygroups
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

from agentscript.lang.tokens import CONFIG_KEYS, IMPORT_KINDS, SHAPE_TYPE_NAMES

_NAME = r"[A-Za-z_](?:[A-Za-z0-9_]|-(?=[A-Za-z0-9_]))*"
_DECLARATIONS = ("agent", "func", "import", "from", "main")
_CONTROL = (
    "use",
    "loop",
    "until",
    "repeat",
    "for",
    "in",
    "return",
    "if",
    "else",
    "generate",
    "parallel",
    "max",
    "one",
    "of",
    "selected",
    "empty",
)
_WORD_OPERATORS = ("and", "or", "not")
_CONSTANTS = ("true", "false", "none")


def bygroups(*actions: Any) -> Any:
    """Pygments' `bygroups`, which its stubs leave untyped."""
    return _untyped_bygroups(*actions)  # type: ignore[no-untyped-call]


class AgentScriptLexer(RegexLexer):
    """AgentScript source (`.as` files)."""

    name = "AgentScript"
    aliases: ClassVar[list[str]] = ["agentscript", "agent-script"]
    filenames: ClassVar[list[str]] = ["*.as"]
    mimetypes: ClassVar[list[str]] = ["text/x-agentscript"]
    url = "https://www.npmjs.com/package/@rong/agentscript"

    tokens: ClassVar[dict[str, list[Any]]] = {
        "root": [
            (r"[ \t\r\n]+", Whitespace),
            (r"//[^\n]*", Comment.Single),
            include("declarations"),
            (r"\bas\b(?=[ \t])", Keyword, "label"),
            include("values"),
        ],
        "declarations": [
            (
                rf"\b(import)([ \t]+)({'|'.join(IMPORT_KINDS)})([ \t]+)({_NAME})",
                bygroups(Keyword.Namespace, Whitespace, Keyword.Type, Whitespace, Name.Namespace),
            ),
            (
                rf"\b(agent)([ \t]+)({_NAME})",
                bygroups(Keyword.Declaration, Whitespace, Name.Class),
            ),
            (
                rf"\b(func)([ \t]+)({_NAME})",
                bygroups(Keyword.Declaration, Whitespace, Name.Function),
            ),
            (words(_DECLARATIONS, prefix=r"\b", suffix=r"\b"), Keyword.Declaration),
        ],
        "values": [
            (r'"(?:[^"\\]|\\.)*"', String.Double),
            (r"'(?:[^'\\]|\\.)*'", String.Single),
            (r"[0-9]+(?:\.[0-9]+)?(?:[A-Za-z_][A-Za-z0-9_]*)?", Number),
            (words(_CONSTANTS, prefix=r"\b", suffix=r"\b"), Keyword.Constant),
            (words(_WORD_OPERATORS, prefix=r"\b", suffix=r"\b"), Operator.Word),
            (words(_CONTROL, prefix=r"\b", suffix=r"\b"), Keyword),
            (words(tuple(sorted(SHAPE_TYPE_NAMES)), prefix=r"\b", suffix=r"\b"), Keyword.Type),
            (
                rf"(?<![\w.])({'|'.join(sorted(CONFIG_KEYS))})\b(?=[ \t]+[^\s=])",
                Keyword.Reserved,
            ),
            (rf"({_NAME})(?=[ \t]*\()", Name.Function),
            (rf"(?<=\.){_NAME}", Name.Attribute),
            (_NAME, Name),
            (r"->|==|!=|<=|>=|\+=|-=|[=!<>*+\-/|]", Operator),
            (r"[{}()\[\].,:]", Punctuation),
            (r".", Text),
        ],
        # `use x as words to the end of the line`: a label, not code.
        "label": [
            (r"[ \t]+", Whitespace),
            (r'"(?:[^"\\]|\\.)*"', String.Double, "#pop"),
            (r"'(?:[^'\\]|\\.)*'", String.Single, "#pop"),
            (r"(?:(?![ \t]*//)[^\n}])+", Name.Label, "#pop"),
            default("#pop"),
        ],
    }
