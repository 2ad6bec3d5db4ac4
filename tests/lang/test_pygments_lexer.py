"""The Pygments lexer: registered for `pygmentize -l agentscript`, and every character of the
examples and tutorials lexed without an error token."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.token import Comment, Error, Keyword, Name, String

from agentscript.lang.pygments_lexer import AgentScriptLexer

ROOT = Path(__file__).resolve().parents[2]


def test_the_lexer_is_found_by_name_and_by_file_name() -> None:
    assert isinstance(get_lexer_by_name("agentscript"), AgentScriptLexer)
    assert isinstance(get_lexer_for_filename("react.as"), AgentScriptLexer)


def test_pygmentize_highlights_a_program(tmp_path: Path) -> None:
    program = tmp_path / "hello.as"
    program.write_text('agent A {\n    role "r"\n}\n', encoding="utf-8")
    pygmentize = Path(sys.executable).with_name("pygmentize")
    done = subprocess.run(
        [str(pygmentize), "-l", "agentscript", "-f", "html", str(program)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert '<span class="kd">agent</span>' in done.stdout
    assert '<span class="s2">"r"</span>' in done.stdout


def _kinds(source: str) -> list[tuple[object, str]]:
    return [(kind, text) for kind, text in AgentScriptLexer().get_tokens(source) if text.strip()]


def test_words_get_the_roles_the_grammar_gives_them() -> None:
    tokens = _kinds(
        'import tool Search from "sh://grep"\n'
        "main agent Boss {\n"
        "    model Model\n"
        "    func step(x) {\n"
        "        use x.notes < 2k as the notes  // why\n"
        "        return generate({ input: x }) -> { a list[string] }\n"
        "    }\n"
        "}\n"
    )
    assert (Keyword.Type, "tool") in tokens
    assert (Name.Namespace, "Search") in tokens
    assert (Name.Class, "Boss") in tokens
    assert (Name.Function, "step") in tokens
    assert (Keyword.Reserved, "model") in tokens
    assert (Name.Label, "the notes") in tokens and (Comment.Single, "// why") in tokens
    assert (Keyword.Type, "list") in tokens and (Keyword.Type, "string") in tokens
    assert (String.Double, '"sh://grep"') in tokens


def _programs() -> list[Path]:
    return sorted([*ROOT.glob("examples/**/*.as"), *ROOT.glob("tutorials/**/*.as")])


@pytest.mark.parametrize("path", _programs(), ids=lambda path: path.name)
def test_examples_lex_without_error_tokens(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    tokens = list(AgentScriptLexer().get_tokens(source))
    assert [text for kind, text in tokens if kind is Error] == []
    assert "".join(text for _, text in tokens) == source.rstrip("\n") + "\n"
    assert any(kind in Comment for kind, _ in tokens) == ("//" in source)
