"""The AgentScript language front end: tokens, lexer, AST, parser and static checker.

This package depends on nothing else in agentscript; everything above it may depend on it.
"""

from agentscript.lang.ast import Program
from agentscript.lang.checker import check_program
from agentscript.lang.errors import Diagnostic, ParseError, Position, SourceRange
from agentscript.lang.parser import parse_program

__all__ = [
    "Diagnostic",
    "ParseError",
    "Position",
    "Program",
    "SourceRange",
    "check_program",
    "parse_program",
]
