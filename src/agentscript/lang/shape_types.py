"""Shapes as types at check time: what the checker (and the language server) knows about a
value's fields, from an input contract, a generate's output shape, an object literal, or what a
function or agent returns, followed through assignments, loops and calls.

Knowing nothing is always allowed: a json field, an unshaped parameter, a tool or memory result,
a file import, or a variable assigned values of different shapes has no type, and nothing is
said about it. A variable's type is the one type all its assignments in the function agree on
(`none` agrees with anything: reading a field of `none` fails anyway).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentscript.lang import ast


@dataclass(frozen=True, slots=True)
class ObjectType:
    fields: tuple[tuple[str, ValueType | None], ...]
    # Where the shape comes from, for messages ("the input contract at 3:18"); not compared.
    origin: str = field(default="", compare=False)

    def field_type(self, name: str) -> ValueType | None:
        return dict(self.fields).get(name)

    def names(self) -> list[str]:
        return [name for name, _ in self.fields]


@dataclass(frozen=True, slots=True)
class ListType:
    item: ValueType | None


@dataclass(frozen=True, slots=True)
class ScalarType:
    name: str  # string, number, boolean


ValueType = ObjectType | ListType | ScalarType


class _Nothing:
    """No information yet (`none`, or a variable not yet assigned in the fixed point)."""


NOTHING: Any = _Nothing()
LIST_MEMBERS = ("length", "summary")


def members(value_type: ValueType) -> list[str]:
    """The names that may follow a dot on a value of this type."""
    if isinstance(value_type, ObjectType):
        return value_type.names()
    if isinstance(value_type, ListType):
        return [*LIST_MEMBERS, "add"]
    return ["length"] if value_type.name == "string" else []


def member_type(value_type: ValueType, name: str) -> ValueType | None:
    if isinstance(value_type, ObjectType):
        return value_type.field_type(name)
    if name == "length":
        return ScalarType("number")
    return None


def type_text(value_type: ValueType | None) -> str:
    if value_type is None:
        return "json"
    if isinstance(value_type, ObjectType):
        return "{ " + ", ".join(f"{n} {type_text(t)}" for n, t in value_type.fields) + " }"
    if isinstance(value_type, ListType):
        return "list" if value_type.item is None else f"list[{type_text(value_type.item)}]"
    return value_type.name


def shape_type(shape: ast.ShapeObjectExpr, origin: str) -> ObjectType:
    return ObjectType(tuple((f.name, _field_type(f.type)) for f in shape.fields), origin)


def _field_type(declared: object) -> ValueType | None:
    if isinstance(declared, ast.ListShapeType):
        return ListType(_field_type(declared.item_type))
    if isinstance(declared, ast.NamedShapeType):
        if declared.name == "list":
            return ListType(None)
        if declared.name in ("string", "number", "boolean"):
            return ScalarType(declared.name)
    return None  # json, and any type this module does not know


def _join(left: Any, right: Any) -> Any:
    if left is NOTHING:
        return right
    if right is NOTHING or left == right:
        return left
    return None


def _where(node: ast.Node) -> str:
    start = node.range.start
    return f"{start.line}:{start.column}"


class ProgramTypes:
    """The types of one program's expressions, computed once, read by id of the node."""

    _MAX_ROUNDS = 8

    def __init__(self, program: ast.Program) -> None:
        self.program = program
        self.agents = {agent.name: agent for agent in program.agents}
        self.returns: dict[int, Any] = {}
        self.envs: dict[int, dict[str, Any]] = {}
        self.pending: set[int] = set()
        self.expressions: dict[int, ValueType | None] = {}
        # Fields some assignment writes (`x.f = …`): a value may have gained them.
        self.written: set[str] = set()
        for agent in program.agents:
            for func in agent.functions:
                self._collect_written(func.body)
        for agent in program.agents:
            for func in agent.functions:
                env = self.env(agent, func)
                self._record(agent, func.body, env)

    def type_of(self, expr: ast.Expr) -> ValueType | None:
        return self.expressions.get(id(expr))

    def variable(self, func: ast.FuncDecl, name: str) -> ValueType | None:
        found = self.envs.get(id(func), {}).get(name)
        return None if found is NOTHING else found

    # ------------------------------------------------------------------ inference

    def env(self, agent: ast.AgentDecl, func: ast.FuncDecl) -> dict[str, Any]:
        known = self.envs.get(id(func))
        if known is not None:
            return known
        bindings: list[tuple[str, Any]] = []
        for param in func.params:
            if param.shape is not None:
                origin = f"the input contract at {_where(param.shape)}"
                bindings.append((param.name, shape_type(param.shape, origin)))
            else:
                bindings.append((param.name, None))
        self._bindings(func.body, bindings)
        env: dict[str, Any] = {name: NOTHING for name, _ in bindings}
        for _ in range(self._MAX_ROUNDS):
            following: dict[str, Any] = {name: NOTHING for name in env}
            for name, source in bindings:
                following[name] = _join(following[name], self._binding(agent, source, env))
            if following == env:
                break
            env = following
        else:
            env = {name: None for name in env}
        self.envs[id(func)] = env
        return env

    def _bindings(self, body: list[ast.Stmt], out: list[tuple[str, Any]]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.AssignStmt) and isinstance(stmt.target, ast.IdentifierExpr):
                out.append((stmt.target.name, None if stmt.operator else stmt.value))
            elif isinstance(stmt, ast.ForInStmt):
                out.append((stmt.item_name, ("item", stmt.iterable)))
            for block in _blocks(stmt):
                self._bindings(block, out)
            for expr in _statement_expressions(stmt):
                for inner in _parallel_fors(expr):
                    out.append((inner.item_name, ("item", inner.iterable)))
                    self._bindings(inner.body, out)

    def _binding(self, agent: ast.AgentDecl, source: Any, env: dict[str, Any]) -> Any:
        if source is None or isinstance(source, ObjectType):
            return source
        if isinstance(source, tuple):
            iterable = self._expr(agent, source[1], env)
            if isinstance(iterable, ListType):
                return iterable.item
            return NOTHING if iterable is NOTHING else None
        return self._expr(agent, source, env)

    def function_return(self, agent: ast.AgentDecl, func: ast.FuncDecl) -> Any:
        key = id(func)
        if key in self.returns:
            return self.returns[key]
        if key in self.pending:
            return None
        self.pending.add(key)
        env = self.env(agent, func)
        result: Any = NOTHING
        for value in _returned(func.body):
            result = _join(result, self._expr(agent, value, env))
        self.pending.discard(key)
        self.returns[key] = result
        return result

    def _expr(self, agent: ast.AgentDecl, expr: ast.Expr, env: dict[str, Any]) -> Any:
        if isinstance(expr, ast.IdentifierExpr):
            return env.get(expr.name)
        if isinstance(expr, ast.StringExpr):
            return ScalarType("string")
        if isinstance(expr, ast.NumberExpr):
            return ScalarType("number")
        if isinstance(expr, ast.BooleanExpr):
            return ScalarType("boolean")
        if isinstance(expr, ast.NullExpr):
            return NOTHING
        if isinstance(expr, ast.ListExpr):
            return ListType(None)
        if isinstance(expr, ast.ObjectExpr):
            fields = {p.key: self._expr(agent, p.value, env) for p in expr.properties}
            return ObjectType(
                tuple((k, None if v is NOTHING else v) for k, v in fields.items()),
                f"the object at {_where(expr)}",
            )
        if isinstance(expr, ast.GenerateExpr):
            if expr.return_shape is None:
                return None
            return shape_type(expr.return_shape, f"the output shape at {_where(expr.return_shape)}")
        if isinstance(expr, ast.MemberExpr):
            owner = self._expr(agent, expr.object, env)
            if owner is NOTHING:
                return NOTHING
            return member_type(owner, expr.property) if owner is not None else None
        if isinstance(expr, ast.IndexExpr):
            owner = self._expr(agent, expr.object, env)
            return owner.item if isinstance(owner, ListType) else None
        if isinstance(expr, ast.UnaryExpr) and expr.operator == "not":
            return ScalarType("boolean")
        if isinstance(expr, ast.CallExpr):
            return self._call(agent, expr, env)
        return None

    def _call(self, agent: ast.AgentDecl, call: ast.CallExpr, env: dict[str, Any]) -> Any:
        callee = call.callee
        if isinstance(callee, ast.IdentifierExpr) and callee.name not in env:
            func = agent.function(callee.name)
            if func is not None:
                return self.function_return(agent, func)
            other = self.agents.get(callee.name)
            main = other.main_function() if other is not None else None
            if other is not None and main is not None:
                return self.function_return(other, main)
        if (
            isinstance(callee, ast.MemberExpr)
            and isinstance(callee.object, ast.IdentifierExpr)
            and callee.object.name not in env
        ):
            other = self.agents.get(callee.object.name)
            func = other.function(callee.property) if other is not None else None
            if other is not None and func is not None:
                return self.function_return(other, func)
        return None

    # ------------------------------------------------------------------ recording

    def _record(self, agent: ast.AgentDecl, body: list[ast.Stmt], env: dict[str, Any]) -> None:
        for stmt in body:
            for expr in _statement_expressions(stmt):
                self._record_expr(agent, expr, env)
            for block in _blocks(stmt):
                self._record(agent, block, env)

    def _record_expr(self, agent: ast.AgentDecl, expr: ast.Expr, env: dict[str, Any]) -> None:
        found = self._expr(agent, expr, env)
        self.expressions[id(expr)] = None if found is NOTHING else found
        if isinstance(expr, ast.ParallelForExpr):
            self._record_expr(agent, expr.iterable, env)
            self._record(agent, expr.body, env)
            return
        if isinstance(expr, ast.GenerateExpr):
            for prop in expr.options.properties:
                self._record_expr(agent, prop.value, env)
            return
        for child in ast.operand_expressions(expr):
            self._record_expr(agent, child, env)

    def _collect_written(self, body: list[ast.Stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.AssignStmt) and isinstance(stmt.target, ast.MemberExpr):
                self.written.add(stmt.target.property)
            for block in _blocks(stmt):
                self._collect_written(block)
            for expr in _statement_expressions(stmt):
                for inner in _parallel_fors(expr):
                    self._collect_written(inner.body)


def _blocks(stmt: ast.Stmt) -> list[list[ast.Stmt]]:
    if isinstance(stmt, ast.IfStmt):
        return [stmt.then_body, *([stmt.else_body] if stmt.else_body is not None else [])]
    if isinstance(stmt, ast.ForInStmt | ast.LoopUntilStmt | ast.RepeatStmt):
        return [stmt.body]
    return []


def _statement_expressions(stmt: ast.Stmt) -> list[ast.Expr]:
    if isinstance(stmt, ast.ExprStmt):
        return [stmt.expr]
    if isinstance(stmt, ast.ReturnStmt | ast.UseStmt | ast.ConfigStmt):
        return [stmt.value]
    if isinstance(stmt, ast.AssignStmt):
        return [stmt.value, stmt.target]
    if isinstance(stmt, ast.IfStmt | ast.LoopUntilStmt):
        return [stmt.condition]
    if isinstance(stmt, ast.ForInStmt):
        return [stmt.iterable]
    if isinstance(stmt, ast.UseOneOfStmt):
        return [c.value for c in stmt.candidates if c.value is not None]
    return []


def _parallel_fors(expr: ast.Expr) -> list[ast.ParallelForExpr]:
    if isinstance(expr, ast.ParallelForExpr):
        return [expr]
    found: list[ast.ParallelForExpr] = []
    for child in ast.operand_expressions(expr):
        found.extend(_parallel_fors(child))
    return found


def _returned(body: list[ast.Stmt]) -> list[ast.Expr]:
    """Every value a function body may return: its `return`s and a final expression."""
    values: list[ast.Expr] = []

    def walk(block: list[ast.Stmt]) -> None:
        for stmt in block:
            if isinstance(stmt, ast.ReturnStmt):
                values.append(stmt.value)
            for inner in _blocks(stmt):
                walk(inner)

    walk(body)
    if body and type(body[-1]) is ast.ExprStmt:
        values.append(body[-1].expr)
    return values
