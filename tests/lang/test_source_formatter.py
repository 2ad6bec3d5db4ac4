"""The program formatter: canonical layout, comments kept, meaning never changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscript.lang import ParseError
from agentscript.lang.source_formatter import FormatRefused, format_source

ROOT = Path(__file__).resolve().parents[2]

MESSY = """\
import llm Model from "openai://gpt-4.1-mini"
main agent A {
  model   Model
      role "r"   // the role
  description "d"
  main func(input{q string}) {
    use input.q<2k as the question (raw)


    x=generate({input:"hi",attempts:2})->{ a string,b number }
    n = -x.b+1 - -2
    if not x.a=="y"{ return [ 1,2 ] }
    for i in [1,2] max 3 {
   // inner comment
      n += i
    }
    return {n:n,s:'multi
line'}
  }
}
"""

TIDY = """\
import llm Model from "openai://gpt-4.1-mini"
main agent A {
    model Model
    role "r" // the role
    description "d"
    main func(input { q string }) {
        use input.q < 2k as the question (raw)

        x = generate({ input: "hi", attempts: 2 }) -> { a string, b number }
        n = -x.b + 1 - -2
        if not x.a == "y" { return [1, 2] }
        for i in [1, 2] max 3 {
            // inner comment
            n += i
        }
        return { n: n, s: 'multi
line' }
    }
}
"""


def test_a_messy_program_gets_the_canonical_layout() -> None:
    assert format_source(MESSY) == TIDY


def test_formatting_twice_changes_nothing_more() -> None:
    assert format_source(TIDY) == TIDY


def _programs() -> list[Path]:
    return sorted([*ROOT.glob("examples/**/*.as"), *ROOT.glob("tutorials/**/*.as")])


@pytest.mark.parametrize("path", _programs(), ids=lambda path: path.name)
def test_examples_and_tutorials_format_to_a_fixed_point_with_their_comments(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    formatted = format_source(source)
    assert format_source(formatted) == formatted
    comments = [line.strip() for line in source.splitlines() if line.strip().startswith("//")]
    assert [
        line.strip() for line in formatted.splitlines() if line.strip().startswith("//")
    ] == comments


def test_brackets_opened_on_one_line_indent_once() -> None:
    source = (
        'agent A {\nfunc f() {\nx = generate({\ninput: "a"\n}) -> {\nb string\n}\nreturn x\n}\n}\n'
    )
    assert format_source(source) == (
        "agent A {\n"
        "    func f() {\n"
        "        x = generate({\n"
        '            input: "a"\n'
        "        }) -> {\n"
        "            b string\n"
        "        }\n"
        "        return x\n"
        "    }\n"
        "}\n"
    )


def test_a_label_keeps_its_own_spacing() -> None:
    source = "agent A {\n  func f(x) {\n    use x as step(one) ,  two\n  }\n}\n"
    assert "use x as step(one) ,  two\n" in format_source(source)


def test_a_program_that_does_not_parse_is_refused_with_the_parse_error() -> None:
    with pytest.raises(ParseError):
        format_source("agent A {\n  func f( {\n}\n")


def test_a_layout_that_would_change_the_program_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentscript.lang import source_formatter

    # A layout bug (here: one that drops a line) must never reach the user's file.
    original = source_formatter._squeeze_blank_lines
    monkeypatch.setattr(
        source_formatter, "_squeeze_blank_lines", lambda lines: original(lines[:-2] + lines[-1:])
    )
    with pytest.raises(FormatRefused):
        format_source('agent A {\n    func f() {\n        return "a"\n    }\n}\n')
