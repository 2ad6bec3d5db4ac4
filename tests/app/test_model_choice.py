"""agentscript.app.model_choice: `--model` values rewrite a program's `import llm` URIs."""

from __future__ import annotations

import pytest

import agentscript
from agentscript.app.model_choice import parse_model_option, with_models
from agentscript.runtime.errors import LoadError

SOURCE = """
import llm Fast from "openai://fast"
import llm Slow from "anthropic://slow"
import tool echo from "mock://echo"

agent A {
  model Fast
  role "r"
  description "d"
  main func() { return "x" }
}
"""


def uris(program: agentscript.ast.Program) -> dict[str, str]:
    return {decl.name: decl.uri for decl in program.imports}


def test_a_bare_uri_replaces_every_llm_and_nothing_else() -> None:
    program = agentscript.load_source(SOURCE)
    chosen = with_models(program, ["ollama://llama3.2"])
    assert uris(chosen) == {
        "Fast": "ollama://llama3.2",
        "Slow": "ollama://llama3.2",
        "echo": "mock://echo",
    }
    assert uris(program)["Fast"] == "openai://fast"  # the loaded program is left as it was


def test_named_uris_replace_one_each_and_win_over_a_bare_one() -> None:
    program = agentscript.load_source(SOURCE)
    chosen = with_models(program, ["Slow=openai://s", "openai://every"])
    assert uris(chosen)["Fast"] == "openai://every"
    assert uris(chosen)["Slow"] == "openai://s"


def test_a_uri_with_an_equals_sign_in_its_query_is_a_bare_uri() -> None:
    override = parse_model_option("openai://model?x=1")
    assert override.name is None and override.uri == "openai://model?x=1"


def test_a_program_without_llm_imports_says_so() -> None:
    program = agentscript.load_source('agent A {\n  main func() { return "x" }\n}\n')
    with pytest.raises(LoadError, match="has no `import llm` to replace"):
        with_models(program, ["openai://x"])
    assert with_models(program, []) is program
