"""The scanner: token kinds and values, the 0.1.0 keyword set, numbers, strings, errors, positions."""

from __future__ import annotations

import pytest

from agentscript.lang.errors import ParseError
from agentscript.lang.lexer import tokenize
from agentscript.lang.tokens import TokenKind


def kinds_and_values(source: str) -> list[tuple[str, str]]:
    """The token stream without the final EOF token, as (kind, value) pairs."""
    tokens = tokenize(source)
    assert tokens[-1].kind is TokenKind.EOF
    return [(token.kind.value, token.value) for token in tokens[:-1]]


def test_dense_sample_tokenizes_like_the_original() -> None:
    source = (
        'repeat * 2 { for item in items < 3 { if item == "x" and not done '
        '{ use item < 2k } else { item != "hello" } } }'
    )
    assert kinds_and_values(source) == [
        ("keyword", "repeat"),
        ("symbol", "*"),
        ("number", "2"),
        ("symbol", "{"),
        ("keyword", "for"),
        ("identifier", "item"),
        ("keyword", "in"),
        ("identifier", "items"),
        ("symbol", "<"),
        ("number", "3"),
        ("symbol", "{"),
        ("keyword", "if"),
        ("identifier", "item"),
        ("symbol", "=="),
        ("string", "x"),
        ("keyword", "and"),
        ("keyword", "not"),
        ("identifier", "done"),
        ("symbol", "{"),
        ("keyword", "use"),
        ("identifier", "item"),
        ("symbol", "<"),
        ("number", "2k"),
        ("symbol", "}"),
        ("keyword", "else"),
        ("symbol", "{"),
        ("identifier", "item"),
        ("symbol", "!="),
        ("string", "hello"),
        ("symbol", "}"),
        ("symbol", "}"),
        ("symbol", "}"),
    ]


def test_shape_type_names_are_keywords() -> None:
    assert kinds_and_values("string number boolean json list") == [
        ("keyword", name) for name in ("string", "number", "boolean", "json", "list")
    ]


@pytest.mark.parametrize(
    "word",
    "import main agent func use loop until repeat for in return if else and or not "
    "generate from true false none string number boolean json list".split(),
)
def test_every_0_1_0_keyword_is_a_keyword(word: str) -> None:
    assert kinds_and_values(word) == [("keyword", word)]


@pytest.mark.parametrize(
    "word",
    ["input", "model", "role", "description", "tool", "llm", "file", "memory", "max", "as"],
)
def test_words_that_are_not_0_1_0_keywords_are_identifiers(word: str) -> None:
    assert kinds_and_values(word) == [("identifier", word)]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("step-1", [("identifier", "step-1")]),
        ("a-b", [("identifier", "a-b")]),
        ("plan-and-execute", [("identifier", "plan-and-execute")]),
        ("a - b", [("identifier", "a"), ("symbol", "-"), ("identifier", "b")]),
        ("x -= 1", [("identifier", "x"), ("symbol", "-="), ("number", "1")]),
        ("x-=1", [("identifier", "x"), ("symbol", "-="), ("number", "1")]),
        ("x+=1", [("identifier", "x"), ("symbol", "+="), ("number", "1")]),
    ],
)
def test_hyphen_joins_names_only_when_a_name_character_follows(
    source: str, expected: list[tuple[str, str]]
) -> None:
    assert kinds_and_values(source) == expected


@pytest.mark.parametrize("number", ["2k", "8k", "1.5k", "300", "0", "2.5", "10k"])
def test_numbers_with_unit_letters_are_single_tokens(number: str) -> None:
    assert kinds_and_values(number) == [("number", number)]


def test_a_dot_without_digits_ends_the_number() -> None:
    assert kinds_and_values("2.x") == [("number", "2"), ("symbol", "."), ("identifier", "x")]


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ('"double"', "double"),
        ("'single'", "single"),
        (r'"a\nb\rc\td"', "a\nb\rc\td"),
        (r'"back\\slash"', "back\\slash"),
        (r'"say \"hi\""', 'say "hi"'),
        (r"'it\'s'", "it's"),
        (r'"unknown \q escape"', "unknown q escape"),
        ('"spans\ntwo lines"', "spans\ntwo lines"),
        ('"no // comment inside"', "no // comment inside"),
    ],
)
def test_string_literals_and_escapes(source: str, value: str) -> None:
    assert kinds_and_values(source) == [("string", value)]


@pytest.mark.parametrize(
    "symbol", ["{", "}", "(", ")", "[", "]", ".", ",", ":", "=", "!", "<", "*", "==", "!="]
)
def test_0_1_0_symbols(symbol: str) -> None:
    assert kinds_and_values(symbol) == [("symbol", symbol)]


@pytest.mark.parametrize("symbol", ["->", "<=", ">=", "+=", "-=", "+", "-", ">", "/"])
def test_later_symbols(symbol: str) -> None:
    assert kinds_and_values(symbol) == [("symbol", symbol)]


def test_two_character_symbols_win_over_one_character_ones() -> None:
    assert kinds_and_values("a==b!=c") == [
        ("identifier", "a"),
        ("symbol", "=="),
        ("identifier", "b"),
        ("symbol", "!="),
        ("identifier", "c"),
    ]


def test_comments_and_whitespace_are_skipped() -> None:
    source = "// heading\nuse\t x // trailing\r\n  // only a comment\n"
    assert kinds_and_values(source) == [("keyword", "use"), ("identifier", "x")]


def test_eof_token_has_empty_value_at_the_end_of_the_source() -> None:
    tokens = tokenize("use x")
    assert tokens[-1].kind is TokenKind.EOF
    assert tokens[-1].value == ""
    assert tokens[-1].start == len("use x")


def test_tokens_carry_their_offsets() -> None:
    tokens = tokenize('use  "ab" < 2k')
    assert [(token.start, token.end) for token in tokens] == [
        (0, 3),
        (5, 9),
        (10, 11),
        (12, 14),
        (14, 14),
    ]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("use x # y", "Unexpected character '#' at 1:7"),
        ("use x\n  @", "Unexpected character '@' at 2:3"),
        ("a ; b", "Unexpected character ';' at 1:3"),
        ('x = "abc', "Unterminated string literal at 1:5"),
        ("x = 'abc\n\n", "Unterminated string literal at 1:5"),
        ('x = "abc\\', "Unterminated escape sequence at 1:9"),
        # Columns count UTF-16 units, like the original: the emoji takes two.
        ('"😀" #', "Unexpected character '#' at 1:6"),
    ],
)
def test_lexical_errors_name_the_character_and_its_position(source: str, message: str) -> None:
    with pytest.raises(ParseError) as caught:
        tokenize(source)
    assert str(caught.value) == message


def test_lexical_error_keeps_the_bare_message_position_and_path() -> None:
    with pytest.raises(ParseError) as caught:
        tokenize("\n  $", path="prog.as")
    assert caught.value.bare_message == "Unexpected character '$'"
    assert (caught.value.position.line, caught.value.position.column) == (2, 3)
    assert caught.value.path == "prog.as"
