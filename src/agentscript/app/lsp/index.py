"""The names of one document: what each identifier refers to, and what is in scope where.

The walk mirrors the checker's scoping (an agent sees the imports, every agent and its own
functions; a function adds its parameters; an assignment binds a new local in the block it is
in; `for` binds its item in the body), so hover, definition and completion agree with the
diagnostics. An `import agent` links to the agent's own index in the other file, which the
caller supplies, so definitions and references cross files.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from agentscript.lang import ast
from agentscript.lang.errors import SourceRange
from agentscript.lang.shape_types import ProgramTypes, ValueType

TOOL = "tool"
LLM = "llm"
FILE = "file"
MEMORY = "memory"
AGENT = "agent"
FUNCTION = "function"
PARAM = "param"
LOCAL = "local"

# Names the interpreter gives every list (and `length` every string).
LIST_PROPERTIES = ("length", "summary")
LIST_METHODS = ("add",)


@dataclass(eq=False)
class Symbol:
    """A declared name: an import, an agent, a function, a parameter or a local variable."""

    name: str
    kind: str
    path: str | None
    # Code-point offsets of where the name is written in its file.
    start: int
    end: int
    declaration: ast.Node | None = None
    # The value's type where the checker knows it (lang/shape_types.py: a contract, a generate
    # shape, a literal, a function's return, followed through assignments and calls).
    shape: ValueType | None = None
    # Imports: the URI as written.
    uri: str | None = None
    # Functions: the agent they belong to.
    agent: str | None = None
    # An imported agent: the agent's symbol in its own file, when that file could be read.
    target: Symbol | None = None
    # An agent's functions, by name.
    functions: dict[str, Symbol] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str | None, ...]:
        """The same declaration across re-analyses and files (agents and their functions)."""
        origin = self.target or self
        if origin.kind == AGENT:
            return (origin.path, AGENT, origin.name)
        if origin.kind == FUNCTION:
            return (origin.path, FUNCTION, origin.agent, origin.name)
        return (origin.path, origin.kind, str(origin.start), origin.name)

    @property
    def origin(self) -> Symbol:
        """Where the name is really declared: the other file's agent for an agent import."""
        return self.target or self


@dataclass(eq=False)
class AgentInfo:
    symbol: Symbol
    declaration: ast.AgentDecl
    functions: dict[str, Symbol] = field(default_factory=dict)
    # Where this agent's functions read their names from (imports, agents, its functions).
    scope: Scope | None = None


@dataclass(frozen=True, slots=True)
class Occurrence:
    """An identifier written in the document, and the symbol it names (None: unknown)."""

    start: int
    end: int
    name: str
    symbol: Symbol | None
    is_declaration: bool = False


@dataclass(frozen=True, slots=True)
class MemberOccurrence:
    """`.name` after an expression: the chain of names from the root identifier
    (`plan.steps.length` → root `plan`, chain (`steps`, `length`))."""

    start: int
    end: int
    root: Symbol | None
    chain: tuple[str, ...]


@dataclass(eq=False)
class Scope:
    start: int
    end: int
    parent: Scope | None
    # Each name with the offset from which it is visible.
    names: dict[str, tuple[Symbol, int]] = field(default_factory=dict)

    def bind(self, symbol: Symbol, visible_from: int) -> None:
        self.names.setdefault(symbol.name, (symbol, visible_from))

    def lookup(self, name: str) -> Symbol | None:
        scope: Scope | None = self
        while scope is not None:
            found = scope.names.get(name)
            if found is not None:
                return found[0]
            scope = scope.parent
        return None

    def visible(self, offset: int) -> dict[str, Symbol]:
        """Every name in scope at `offset`, innermost first."""
        names: dict[str, Symbol] = {}
        scope: Scope | None = self
        while scope is not None:
            for name, (symbol, since) in scope.names.items():
                if since <= offset:
                    names.setdefault(name, symbol)
            scope = scope.parent
        return names


@dataclass(eq=False)
class DocumentIndex:
    path: str | None
    text: str
    imports: dict[str, Symbol] = field(default_factory=dict)
    agents: dict[str, AgentInfo] = field(default_factory=dict)
    occurrences: list[Occurrence] = field(default_factory=list)
    members: list[MemberOccurrence] = field(default_factory=list)
    scopes: list[Scope] = field(default_factory=list)
    uses: list[ast.UseStmt | ast.UseOneOfStmt] = field(default_factory=list)
    shapes: list[ast.ShapeObjectExpr] = field(default_factory=list)
    generates: list[ast.GenerateExpr] = field(default_factory=list)

    def occurrence_at(self, offset: int) -> Occurrence | None:
        """The identifier under `offset` (the cursor may sit just after its last character)."""
        return _spanning(self.occurrences, offset)

    def member_at(self, offset: int) -> MemberOccurrence | None:
        return _spanning(self.members, offset)

    def scope_at(self, offset: int) -> Scope | None:
        """The innermost scope around `offset`."""
        best: Scope | None = None
        for scope in self.scopes:
            if scope.start <= offset <= scope.end and (
                best is None or scope.end - scope.start <= best.end - best.start
            ):
                best = scope
        return best


_Spanned = TypeVar("_Spanned", Occurrence, MemberOccurrence)


def _spanning(spans: list[_Spanned], offset: int) -> _Spanned | None:
    """The span of `spans` (sorted by start, not overlapping) that holds `offset`."""
    position = bisect_right([span.start for span in spans], offset) - 1
    if position >= 0 and spans[position].start <= offset <= spans[position].end:
        return spans[position]
    return None


ImportedAgents = Callable[[ast.ImportDecl], "DocumentIndex | None"]


def build_index(
    program: ast.Program,
    text: str,
    path: str | None,
    imported: ImportedAgents,
    around: int | None = None,
) -> DocumentIndex:
    """The document's index. With `around`, only the bodies of the agent holding that offset
    are walked (enough to know the names in scope there, for a fraction of the work)."""
    return _Indexer(program, text, path, imported, around).run()


_IMPORT_NAME = re.compile(r"import\s+\w+\s+([A-Za-z_][\w-]*)")
_AGENT_NAME = re.compile(r"(?:main\s+)?agent\s+([A-Za-z_][\w-]*)?")
_FUNC_NAME = re.compile(r"(?:main\s+)?func\s*([A-Za-z_][\w-]*)?")


class _Indexer:
    def __init__(
        self,
        program: ast.Program,
        text: str,
        path: str | None,
        imported: ImportedAgents,
        around: int | None,
    ) -> None:
        self.program = program
        self.index = DocumentIndex(path=path, text=text)
        self.imported = imported
        self.around = around
        self.types = ProgramTypes(program)
        self.func: ast.FuncDecl | None = None

    def name_span(self, pattern: re.Pattern[str], node: ast.Node) -> tuple[int, int]:
        """Where a declaration writes its name (its keyword when it has none)."""
        start = node.range.start_offset
        matched = pattern.match(self.index.text, start)
        if matched is None:
            return start, start
        if matched.group(1) is None:
            return start, matched.end()
        return matched.start(1), matched.end(1)

    def declare(self, symbol: Symbol) -> None:
        self.index.occurrences.append(
            Occurrence(symbol.start, symbol.end, symbol.name, symbol, is_declaration=True)
        )

    def run(self) -> DocumentIndex:
        index = self.index
        for decl in self.program.imports:
            start, end = self.name_span(_IMPORT_NAME, decl)
            symbol = Symbol(
                decl.name, decl.resource_kind, index.path, start, end, decl, uri=decl.uri
            )
            if decl.resource_kind == AGENT:
                other = self.imported(decl)
                info = other.agents.get(decl.name) if other is not None else None
                symbol.target = info.symbol if info is not None else None
            index.imports.setdefault(decl.name, symbol)
            self.declare(symbol)
        for agent in self.program.agents:
            start, end = self.name_span(_AGENT_NAME, agent)
            symbol = Symbol(agent.name, AGENT, index.path, start, end, agent)
            info = AgentInfo(symbol, agent)
            index.agents.setdefault(agent.name, info)
            self.declare(symbol)
            for func in agent.functions:
                start, end = self.name_span(_FUNC_NAME, func)
                function = Symbol(
                    func.name, FUNCTION, index.path, start, end, func, agent=agent.name
                )
                info.functions.setdefault(func.name, function)
                symbol.functions.setdefault(func.name, function)
                self.declare(function)
        program_scope = self.program_scope()
        for info in list(index.agents.values()):
            where = info.declaration.range
            if self.around is None or where.start_offset <= self.around <= where.end_offset:
                self.agent(info, program_scope)
        index.occurrences.sort(key=lambda occurrence: occurrence.start)
        index.members.sort(key=lambda member: member.start)
        return index

    def program_scope(self) -> Scope:
        """Imports and agents, which every agent sees (an agent's name hides an import's)."""
        scope = Scope(0, len(self.index.text), None)
        for symbol in self.index.imports.values():
            scope.bind(symbol, 0)
        for other in self.index.agents.values():
            scope.names[other.symbol.name] = (other.symbol, 0)
        return scope

    def agent(self, info: AgentInfo, program_scope: Scope) -> None:
        agent = info.declaration
        scope = Scope(agent.range.start_offset, agent.range.end_offset, program_scope)
        for function in info.functions.values():
            scope.bind(function, 0)
        info.scope = scope
        self.index.scopes.append(scope)
        for config in agent.config:
            self.expr(config.value, scope)
        for use in agent.uses or []:
            self.statement(use, scope)
        for func in agent.functions:
            self.function(func, scope)

    def function(self, func: ast.FuncDecl, agent_scope: Scope) -> None:
        scope = Scope(func.range.start_offset, func.range.end_offset, agent_scope)
        self.func = func
        self.index.scopes.append(scope)
        for param in func.params:
            start = param.range.start_offset
            symbol = Symbol(
                param.name, PARAM, self.index.path, start, start + len(param.name), param
            )
            symbol.shape = self.types.variable(func, param.name)
            if param.shape is not None:
                self.index.shapes.append(param.shape)
            scope.bind(symbol, 0)
            self.declare(symbol)
        self.block(func.body, scope)

    def child(self, parent: Scope, body: list[ast.Stmt], fallback: ast.Node) -> Scope:
        start = body[0].range.start_offset if body else fallback.range.start_offset
        end = body[-1].range.end_offset if body else fallback.range.end_offset
        # The braces belong to the block too: widen to the statement that owns them.
        scope = Scope(min(start, fallback.range.start_offset), fallback.range.end_offset, parent)
        scope.end = max(scope.end, end)
        self.index.scopes.append(scope)
        return scope

    def block(self, body: list[ast.Stmt], scope: Scope) -> None:
        for stmt in body:
            self.statement(stmt, scope)

    def statement(self, stmt: ast.Stmt, scope: Scope) -> None:
        if isinstance(stmt, ast.ExprStmt | ast.ReturnStmt):
            self.expr(stmt.expr if isinstance(stmt, ast.ExprStmt) else stmt.value, scope)
        elif isinstance(stmt, ast.AssignStmt):
            self.assignment(stmt, scope)
        elif isinstance(stmt, ast.UseStmt):
            self.index.uses.append(stmt)
            self.expr(stmt.value, scope)
        elif isinstance(stmt, ast.UseOneOfStmt):
            self.index.uses.append(stmt)
            for candidate in stmt.candidates:
                if candidate.value is not None:
                    self.expr(candidate.value, scope)
        elif isinstance(stmt, ast.IfStmt):
            self.expr(stmt.condition, scope)
            self.block(stmt.then_body, self.child(scope, stmt.then_body, stmt))
            if stmt.else_body is not None:
                self.block(stmt.else_body, self.child(scope, stmt.else_body, stmt))
        elif isinstance(stmt, ast.ForInStmt):
            self.expr(stmt.iterable, scope)
            body = self.child(scope, stmt.body, stmt)
            self.bind_item(stmt.item_name, stmt.item_range, stmt, body)
            self.block(stmt.body, body)
        elif isinstance(stmt, ast.LoopUntilStmt):
            self.expr(stmt.condition, scope)
            self.block(stmt.body, self.child(scope, stmt.body, stmt))
        elif isinstance(stmt, ast.RepeatStmt):
            self.block(stmt.body, self.child(scope, stmt.body, stmt))
        elif isinstance(stmt, ast.ConfigStmt):
            self.expr(stmt.value, scope)

    def bind_item(self, name: str, where: SourceRange, node: ast.Node, scope: Scope) -> None:
        symbol = Symbol(name, LOCAL, self.index.path, where.start_offset, where.end_offset, node)
        symbol.shape = self.variable_type(name)
        scope.bind(symbol, where.end_offset)
        self.declare(symbol)

    def assignment(self, stmt: ast.AssignStmt, scope: Scope) -> None:
        self.expr(stmt.value, scope)
        target = stmt.target
        if not isinstance(target, ast.IdentifierExpr):
            self.expr(target, scope)
            return
        existing = scope.lookup(target.name)
        if existing is not None and existing.kind in (PARAM, LOCAL):
            self.refer(target, existing)
            return
        if stmt.operator is not None:
            self.refer(target, None)
            return
        symbol = Symbol(
            target.name,
            LOCAL,
            self.index.path,
            target.range.start_offset,
            target.range.end_offset,
            stmt,
        )
        symbol.shape = self.variable_type(target.name)
        scope.bind(symbol, stmt.range.end_offset)
        self.declare(symbol)

    def variable_type(self, name: str) -> ValueType | None:
        return self.types.variable(self.func, name) if self.func is not None else None

    def refer(self, expr: ast.IdentifierExpr, symbol: Symbol | None) -> None:
        self.index.occurrences.append(
            Occurrence(expr.range.start_offset, expr.range.end_offset, expr.name, symbol)
        )

    def expr(self, expr: ast.Expr, scope: Scope) -> None:
        if isinstance(expr, ast.IdentifierExpr):
            self.refer(expr, scope.lookup(expr.name))
        elif isinstance(expr, ast.MemberExpr):
            self.member(expr, scope)
        elif isinstance(expr, ast.GenerateExpr):
            self.index.generates.append(expr)
            for prop in expr.options.properties:
                self.expr(prop.value, scope)
            if expr.return_shape is not None:
                self.index.shapes.append(expr.return_shape)
        elif isinstance(expr, ast.ParallelForExpr):
            self.expr(expr.iterable, scope)
            body = self.child(scope, expr.body, expr)
            self.bind_item(expr.item_name, expr.item_range, expr, body)
            self.block(expr.body, body)
        else:
            for child in ast.operand_expressions(expr):
                self.expr(child, scope)

    def member(self, expr: ast.MemberExpr, scope: Scope) -> None:
        chain: list[str] = [expr.property]
        receiver = expr.object
        while isinstance(receiver, ast.MemberExpr):
            chain.append(receiver.property)
            receiver = receiver.object
        root = scope.lookup(receiver.name) if isinstance(receiver, ast.IdentifierExpr) else None
        end = expr.range.end_offset
        self.index.members.append(
            MemberOccurrence(end - len(expr.property), end, root, tuple(reversed(chain)))
        )
        self.expr(expr.object, scope)
