"""The scope chain: variables, scoped configuration and pending `use` declarations.

Each function call starts from a fresh root scope (nothing of the caller is visible); blocks get
child scopes. Assignment updates a local or parameter found anywhere up the chain, otherwise it
defines a new local in the current scope, so names first assigned in a block die with the block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentscript.lang import ast


class _Missing:
    """Marks a failed lookup (None is a valid AgentScript value)."""


MISSING: Any = _Missing()


@dataclass(frozen=True, slots=True)
class CallFrame:
    """Which agent function a scope belongs to: the prompt identity and the file for errors."""

    agent: ast.AgentDecl
    function: ast.FuncDecl
    path: str | None


@dataclass(slots=True)
class UseDeclaration:
    """One `use`: evaluated lazily, when a generate runs, in the scope that declared it."""

    statement: ast.UseStmt
    source: str
    scope: Scope


class Scope:
    __slots__ = ("config", "fixed", "frame", "locals", "parent", "uses")

    def __init__(
        self,
        parent: Scope | None = None,
        fixed: dict[str, Any] | None = None,
        frame: CallFrame | None = None,
    ) -> None:
        self.parent = parent
        self.frame: CallFrame | None = parent.frame if parent is not None else frame
        # Imports, agents and functions: visible, shadowable by locals, never reassigned.
        self.fixed: dict[str, Any] = fixed if fixed is not None else {}
        # Parameters and locals: what assignment updates.
        self.locals: dict[str, Any] = {}
        self.config: dict[str, Any] = {}
        self.uses: list[UseDeclaration] = []

    def child(self) -> Scope:
        return Scope(self)

    def lookup(self, name: str) -> Any:
        """The value of `name`, or MISSING."""
        scope: Scope | None = self
        while scope is not None:
            local = scope.locals
            if name in local:
                return local[name]
            fixed = scope.fixed
            if name in fixed:
                return fixed[name]
            scope = scope.parent
        return MISSING

    def assign(self, name: str, value: Any) -> None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.locals:
                scope.locals[name] = value
                return
            scope = scope.parent
        self.locals[name] = value

    def config_value(self, key: str) -> Any:
        """The innermost configuration value for `key` (model, role, description), or MISSING."""
        scope: Scope | None = self
        while scope is not None:
            if key in scope.config:
                return scope.config[key]
            scope = scope.parent
        return MISSING

    def visible_uses(self) -> list[UseDeclaration]:
        """Uses visible here: outermost scope first, each scope in declaration order."""
        chain: list[Scope] = []
        scope: Scope | None = self
        while scope is not None:
            chain.append(scope)
            scope = scope.parent
        visible: list[UseDeclaration] = []
        for owner in reversed(chain):
            visible.extend(owner.uses)
        return visible
