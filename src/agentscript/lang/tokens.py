"""Token kinds, keywords and symbols of AgentScript (0.1.0 plus the later forms we accept)."""

from __future__ import annotations

from enum import Enum


class TokenKind(Enum):
    IDENTIFIER = "identifier"
    KEYWORD = "keyword"
    STRING = "string"
    NUMBER = "number"
    SYMBOL = "symbol"
    EOF = "eof"


# The 0.1.0 keyword set. `max` and `parallel` became keywords later; we keep them identifiers
# so that 0.1.0 programs using them as names still parse. Keywords are accepted wherever a name
# is expected, so the set only decides how a statement starts.
KEYWORDS = frozenset(
    """import main agent func use loop until repeat for in return if else and or not
    generate from true false none string number boolean json list""".split()
)

SHAPE_TYPE_NAMES = frozenset({"string", "number", "boolean", "json", "list"})

CONFIG_KEYS = frozenset({"model", "role", "description"})

IMPORT_KINDS = ("tool", "llm", "file", "agent", "memory")

# Binary operators by precedence, loosest first: or < and < equality < comparison < sum < product.
BINARY_PRECEDENCE = {
    "or": 1,
    "and": 2,
    "==": 3,
    "!=": 3,
    "<": 4,
    "<=": 4,
    ">": 4,
    ">=": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
}


class Token:
    """One token: its kind, text and code-point offsets. `symbol` repeats the value for symbol
    tokens (None otherwise) so the parser can test for punctuation with one comparison."""

    __slots__ = ("end", "kind", "start", "symbol", "value")

    def __init__(self, kind: TokenKind, value: str, start: int, end: int) -> None:
        self.kind = kind
        self.value = value
        self.start = start
        self.end = end
        self.symbol = value if kind is TokenKind.SYMBOL else None

    def __repr__(self) -> str:
        return f"Token({self.kind.value}, {self.value!r}, @{self.start})"

    def is_symbol(self, symbol: str) -> bool:
        return self.symbol == symbol

    def is_word(self, word: str) -> bool:
        """True for an identifier or keyword spelled `word`."""
        return self.value == word and self.kind in (TokenKind.IDENTIFIER, TokenKind.KEYWORD)

    @property
    def is_name(self) -> bool:
        """Identifiers and keywords both serve as names (0.1.0 rule)."""
        return self.kind in (TokenKind.IDENTIFIER, TokenKind.KEYWORD)
