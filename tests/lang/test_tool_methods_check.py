"""A method a built-in tool does not have: a warning where the tool ignores the method name
(`sh://`, as the original), an error where the tool refuses it at run time (`file://`,
`env://`), nothing where the name is free (`http(s)://` verbs, `mcp://` tools)."""

from __future__ import annotations

import pytest

from agentscript.lang.checker import check_program
from agentscript.lang.parser import parse_program

PROGRAM = """import tool T from "{uri}"
agent A {{
  main func(input {{ q string }}) {{
    return T.{method}({{ path: "." }})
  }}
}}
"""


def findings(uri: str, method: str) -> list[tuple[str, str, str]]:
    program = parse_program(PROGRAM.format(uri=uri, method=method), "p.as")
    return [(d.severity, d.code, d.message) for d in check_program(program)]


def test_a_shell_tool_method_it_does_not_have_is_a_warning() -> None:
    assert findings("sh://grep", "bogus_method") == [
        (
            "warning",
            "UNKNOWN_TOOL_METHOD",
            "Tool 'T' (sh://grep) has no method 'bogus_method'; the method name is ignored and "
            "the command runs all the same (write T.run)",
        )
    ]


def test_a_file_tool_method_it_does_not_have_is_an_error_with_a_suggestion() -> None:
    assert findings("file://workspace", "raed") == [
        (
            "error",
            "UNKNOWN_TOOL_METHOD",
            "Tool 'T' (file://workspace) has no method 'raed' (did you mean 'read'?); it has: "
            "read, list, write, patch, undo",
        )
    ]


@pytest.mark.parametrize(
    ("uri", "method"),
    [
        ("sh://grep", "run"),
        ("file://workspace", "read"),
        ("env://process", "get"),
        ("https://example.com", "query"),
        ("mcp://tools/search", "search"),
    ],
)
def test_known_or_free_methods_say_nothing(uri: str, method: str) -> None:
    assert findings(uri, method) == []
