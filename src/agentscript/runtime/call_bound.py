"""The most model calls one run of a program can make, read from its source alone.

Every loop of the language has a bound (`for … < N`, `loop until … < N`, `repeat * N`,
`parallel for … max N`) and every `generate` a number of attempts, so a run's model calls are
bounded before it starts: a generate costs its attempts, a loop multiplies its body, a branch
costs its dearer side, a call to a function or an agent costs what that function can cost.
What an optimizer or an eval will spend at most is this bound times its runs.

Only recursion has no bound (a function that can reach itself); `CallBoundError` says which.
Calls to tools and memory cost no model call here (a tool may call a model of its own: that
is the tool's cost, not the program's).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import fields, is_dataclass

from agentscript.lang import ast
from agentscript.runtime.errors import AgentScriptError
from agentscript.runtime.generate import GenerateSettings


class CallBoundError(AgentScriptError):
    """The program has no static bound on its model calls (recursion)."""


def max_model_calls(
    program: ast.Program, agent: str | None = None, function: str | None = None
) -> int:
    """The most model calls a run of `agent.function` (the main agent's main func by
    default) can make, its agent-level `use` statements included."""
    return _Bounds(program).of_entry(agent, function)


class _Bounds:
    def __init__(self, program: ast.Program) -> None:
        self.agents = {decl.name: decl for decl in program.agents}
        self.memo: dict[tuple[str, str], int] = {}
        self.active: list[tuple[str, str]] = []

    def of_entry(self, agent_name: str | None, function_name: str | None) -> int:
        agent = self._agent(agent_name)
        return self.of_function(agent, self._function(agent, function_name))

    def of_function(self, agent: ast.AgentDecl, function: ast.FuncDecl) -> int:
        key = (agent.name, function.name)
        if key in self.memo:
            return self.memo[key]
        if key in self.active:
            path = " -> ".join(f"{a}.{f}" for a, f in [*self.active, key])
            raise CallBoundError(f"No bound on model calls: {path} is recursive")
        self.active.append(key)
        try:
            agent_level = sum(self.of_node(use, agent) for use in agent.uses or ())
            total = agent_level + self.of_body(function.body, agent)
        finally:
            self.active.pop()
        self.memo[key] = total
        return total

    def of_body(self, body: Iterable[ast.Stmt], agent: ast.AgentDecl) -> int:
        return sum(self.of_node(stmt, agent) for stmt in body)

    def of_node(self, node: object, agent: ast.AgentDecl) -> int:
        if isinstance(node, ast.GenerateExpr):
            own = GenerateSettings.from_options(node.options).attempts
            return own + self._children(node, agent)
        if isinstance(node, ast.IfStmt):
            then = self.of_body(node.then_body, agent)
            otherwise = self.of_body(node.else_body or [], agent)
            return self.of_node(node.condition, agent) + max(then, otherwise)
        if isinstance(node, ast.ForInStmt):
            body = self.of_body(node.body, agent)
            return self.of_node(node.iterable, agent) + node.max_iterations * body
        if isinstance(node, ast.LoopUntilStmt):
            rounds = self.of_body(node.body, agent) + self.of_node(node.condition, agent)
            return node.max_iterations * rounds
        if isinstance(node, ast.RepeatStmt):
            return node.max_attempts * self.of_body(node.body, agent)
        if isinstance(node, ast.ParallelForExpr):
            body = self.of_body(node.body, agent)
            return self.of_node(node.iterable, agent) + node.max_items * body
        if isinstance(node, ast.UseOneOfStmt):
            # One candidate is chosen: the dearest is what it can cost.
            return max((self.of_node(c.value, agent) for c in node.candidates), default=0)
        if isinstance(node, ast.CallExpr):
            return self._children(node, agent) + self._callee(node.callee, agent)
        return self._children(node, agent)

    def _children(self, node: object, agent: ast.AgentDecl) -> int:
        return sum(self.of_node(child, agent) for child in _child_nodes(node))

    def _callee(self, callee: ast.Expr, agent: ast.AgentDecl) -> int:
        """What calling `callee` costs: a function of this agent, or another agent's."""
        if isinstance(callee, ast.IdentifierExpr):
            own = agent.function(callee.name)
            if own is not None:
                return self.of_function(agent, own)
            other = self.agents.get(callee.name)
            if other is not None:
                return self.of_function(other, self._function(other, None))
            return 0
        if isinstance(callee, ast.MemberExpr) and isinstance(callee.object, ast.IdentifierExpr):
            other = self.agents.get(callee.object.name)
            if other is not None:
                target = other.function(callee.property)
                return self.of_function(other, target) if target is not None else 0
        return self.of_node(callee, agent)

    def _agent(self, name: str | None) -> ast.AgentDecl:
        if name is not None:
            if name not in self.agents:
                raise CallBoundError(f"No agent named {name!r}")
            return self.agents[name]
        main = [decl for decl in self.agents.values() if decl.is_main]
        if not main and not self.agents:
            raise CallBoundError("The program has no agent")
        return main[0] if main else next(iter(self.agents.values()))

    def _function(self, agent: ast.AgentDecl, name: str | None) -> ast.FuncDecl:
        if name is not None:
            found = agent.function(name)
            if found is None:
                raise CallBoundError(f"Agent {agent.name} has no function {name!r}")
            return found
        main = agent.main_function()
        if main is None and not agent.functions:
            raise CallBoundError(f"Agent {agent.name} has no function")
        return main or agent.functions[0]


def _child_nodes(node: object) -> Iterator[object]:
    """The AST nodes directly inside `node` (in lists too), ranges and plain values left out."""
    if not is_dataclass(node):
        return
    for item in fields(node):
        value = getattr(node, item.name)
        if isinstance(value, list):
            yield from (entry for entry in value if isinstance(entry, ast.Node))
        elif isinstance(value, ast.Node):
            yield value
