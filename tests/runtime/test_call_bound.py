"""The static bound on a run's model calls: exact on small programs, never below what a run
makes on every example and tutorial, and an error for recursion."""

from __future__ import annotations

import pytest

import agentscript
from agentscript.runtime.call_bound import CallBoundError, max_model_calls

HEAD = 'import llm M from "openai://x"\n'


def agent(body: str, functions: str = "", name: str = "A", main: bool = True) -> str:
    return (
        f'{"main " if main else ""}agent {name} {{\n  model M\n  role "r"\n  description "d"\n'
        f"  main func(input) {{\n{body}\n  }}\n{functions}}}\n"
    )


def bound(source: str) -> int:
    return max_model_calls(agentscript.load_source(source))


def test_a_generate_costs_its_attempts() -> None:
    assert bound(HEAD + agent('generate({ input: "a" }) -> { x }')) == 1
    assert bound(HEAD + agent('generate({ input: "a", attempts: 3 }) -> { x }')) == 3


def test_loops_multiply_and_branches_cost_their_dearer_side() -> None:
    body = """
    for item in input.items < 4 {
      if item {
        generate({ input: "a", attempts: 2 }) -> { x }
      } else {
        generate({ input: "b" }) -> { x }
      }
    }
    loop until false < 3 {
      generate({ input: "c" }) -> { x }
    }
    found = parallel for item in input.items max 5 {
      generate({ input: "d" }) -> { x }
    }
    """
    assert bound(HEAD + agent(body)) == 4 * 2 + 3 * 1 + 5 * 1


def test_calls_to_functions_and_agents_cost_what_they_can() -> None:
    helper = """  func twice(x) {
    generate({ input: "a" }) -> { x }
    generate({ input: "b" }) -> { x }
  }
"""
    other = agent('generate({ input: "z", attempts: 2 }) -> { x }', name="B", main=False)
    source = HEAD + agent("twice(input)\ntwice(input)\nB(input)", helper) + other
    assert bound(source) == 2 + 2 + 2


def test_recursion_has_no_bound() -> None:
    loop = "  func again(x) {\n    again(x)\n  }\n"
    with pytest.raises(CallBoundError, match=r"A\.again -> A\.again is recursive"):
        bound(HEAD + agent("again(input)", loop))
