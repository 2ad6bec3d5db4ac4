"""The syntax tree. Node and field names follow the original's AST so `parse` prints the same JSON.

Every node has a source range. Fields that are absent (None) are left out of the JSON, as the
original's `undefined` fields were. Later-form additions (labels, compound assignment, comparison
operators, later generate options) only appear when a program uses them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from agentscript.lang.errors import SourceRange


@dataclass(slots=True)
class Budget:
    """A budget literal such as `2k` or `300`: an amount and an optional unit."""

    amount: float
    unit: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"amount": _number(self.amount)}
        if self.unit is not None:
            data["unit"] = self.unit
        return data

    def character_limit(self) -> int:
        """Characters allowed by this budget: thousands for unit `k`; other units are ignored."""
        if self.unit == "k":
            return int(self.amount * 1000 // 1)
        return int(self.amount // 1)

    def text(self) -> str:
        """The budget as written (`2k`, `300`)."""
        amount = _number(self.amount)
        return f"{amount}{self.unit or ''}"


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


@dataclass(slots=True, eq=False)
class Node:
    """Base of all syntax nodes. `kind` in JSON is the class name."""

    range: SourceRange

    # Attributes kept on the node for our own use but never printed by `parse`.
    HIDDEN: ClassVar[frozenset[str]] = frozenset()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": type(self).__name__}
        for item in fields(self):
            name = item.name
            if name == "range" or name in self.HIDDEN:
                continue
            value = getattr(self, name)
            if value is None:
                continue
            data[_camel(name)] = _json_value(value)
        data["range"] = self.range.to_json()
        return data


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _json_value(value: Any) -> Any:
    if isinstance(value, Node | Budget):
        return value.to_json()
    if isinstance(value, list):
        return [_json_value(item) for item in value]
    if isinstance(value, SourceRange):
        return value.to_json()
    if isinstance(value, float):
        return _number(value)
    return value


# ----------------------------------------------------------------------------- shapes


@dataclass(slots=True, eq=False)
class NamedShapeType(Node):
    name: str


@dataclass(slots=True, eq=False)
class ListShapeType(Node):
    item_type: ShapeType


@dataclass(slots=True, eq=False)
class ChoiceShapeType(Node):
    """A closed choice, `"billing" | "bug" | "feature"`: the field's value is one of these
    literals (strings or numbers). An extension of the original's shapes."""

    values: list[str | float]


ShapeType = NamedShapeType | ListShapeType | ChoiceShapeType


@dataclass(slots=True, eq=False)
class ShapeField(Node):
    name: str
    type: ShapeType
    # True when the field was written without a type (a later form meaning `string`).
    implicit: bool | None = None


@dataclass(slots=True, eq=False)
class ShapeObjectExpr(Node):
    fields: list[ShapeField]


# ----------------------------------------------------------------------------- expressions


@dataclass(slots=True, eq=False)
class IdentifierExpr(Node):
    name: str


@dataclass(slots=True, eq=False)
class StringExpr(Node):
    value: str


@dataclass(slots=True, eq=False)
class NumberExpr(Node):
    value: float
    raw: str


@dataclass(slots=True, eq=False)
class BooleanExpr(Node):
    value: bool


@dataclass(slots=True, eq=False)
class NullExpr(Node):
    pass


@dataclass(slots=True, eq=False)
class ListExpr(Node):
    items: list[Expr]


@dataclass(slots=True, eq=False)
class ObjectProperty(Node):
    key: str
    value: Expr


@dataclass(slots=True, eq=False)
class ObjectExpr(Node):
    properties: list[ObjectProperty]


@dataclass(slots=True, eq=False)
class MemberExpr(Node):
    object: Expr
    property: str


@dataclass(slots=True, eq=False)
class IndexExpr(Node):
    object: Expr
    index: Expr


@dataclass(slots=True, eq=False)
class CallExpr(Node):
    callee: Expr
    args: list[Expr]


@dataclass(slots=True, eq=False)
class UnaryExpr(Node):
    operator: str  # "not" (0.1.0) or "-" (later form)
    value: Expr


@dataclass(slots=True, eq=False)
class BinaryExpr(Node):
    operator: str  # == != and or (0.1.0); + - * / < <= > >= (later forms)
    left: Expr
    right: Expr


@dataclass(slots=True, eq=False)
class GenerateOptionsExpr(Node):
    properties: list[ObjectProperty]
    input: Expr | None = None
    attempts: float | None = None
    limit: Budget | None = None
    debug: bool | None = None
    # Later options (0.1.4): captured only when written as literals, like attempts and debug.
    max_output: Budget | None = None
    temperature: float | None = None
    think: bool | str | None = None
    strict: bool | None = None


@dataclass(slots=True, eq=False)
class GenerateExpr(Node):
    options: GenerateOptionsExpr
    # None for a free-form generate (later form): the model's text is the result.
    return_shape: ShapeObjectExpr | None = None


@dataclass(slots=True, eq=False)
class ParallelForExpr(Node):
    """`parallel for x in xs max N { … final expression }` (later form): the list of each
    iteration's final value, in input order."""

    item_name: str
    item_range: SourceRange
    iterable: Expr
    max_items: int
    body: list[Stmt]


Expr = (
    IdentifierExpr
    | StringExpr
    | NumberExpr
    | BooleanExpr
    | NullExpr
    | ListExpr
    | ObjectExpr
    | MemberExpr
    | IndexExpr
    | CallExpr
    | UnaryExpr
    | BinaryExpr
    | GenerateExpr
    | ParallelForExpr
)


def operand_expressions(expr: Expr) -> Iterator[Expr]:
    """The direct sub-expressions of a member, index, call, list, object, unary or binary
    expression; none for a leaf. A generate and a `parallel for` hold options, shapes and a
    scope of their own, which each walker (checker, language server index) treats itself."""
    if isinstance(expr, MemberExpr):
        yield expr.object
    elif isinstance(expr, IndexExpr):
        yield expr.object
        yield expr.index
    elif isinstance(expr, CallExpr):
        yield expr.callee
        yield from expr.args
    elif isinstance(expr, ListExpr):
        yield from expr.items
    elif isinstance(expr, ObjectExpr):
        for prop in expr.properties:
            yield prop.value
    elif isinstance(expr, UnaryExpr):
        yield expr.value
    elif isinstance(expr, BinaryExpr):
        yield expr.left
        yield expr.right


# ----------------------------------------------------------------------------- statements


@dataclass(slots=True, eq=False)
class ConfigStmt(Node):
    key: str
    value: Expr


@dataclass(slots=True, eq=False)
class UseStmt(Node):
    value: Expr
    budget: Budget | None = None
    label: str | None = None


@dataclass(slots=True, eq=False)
class UseCandidate(Node):
    """One candidate of `use one of`: a named source (or `empty`), an optional budget, and
    whether it is the `selected` default."""

    name: str
    value: Expr | None
    budget: Budget | None = None
    selected: bool | None = None


@dataclass(slots=True, eq=False)
class UseOneOfStmt(Node):
    """`use one of { a: x max 1k  b: y selected  none: empty } as label` (later form): one
    candidate is chosen per run at this site; only it (under the label) reaches the prompt."""

    candidates: list[UseCandidate]
    label: str


@dataclass(slots=True, eq=False)
class AssignStmt(Node):
    target: Expr
    value: Expr
    operator: str | None = None  # "+=" or "-=" (later form); None for plain `=`


@dataclass(slots=True, eq=False)
class ExprStmt(Node):
    expr: Expr


@dataclass(slots=True, eq=False)
class IfStmt(Node):
    condition: Expr
    then_body: list[Stmt]
    else_body: list[Stmt] | None = None


@dataclass(slots=True, eq=False)
class ForInStmt(Node):
    item_name: str
    item_range: SourceRange
    iterable: Expr
    max_iterations: int
    body: list[Stmt]


@dataclass(slots=True, eq=False)
class LoopUntilStmt(Node):
    condition: Expr
    max_iterations: int
    body: list[Stmt]


@dataclass(slots=True, eq=False)
class RepeatStmt(Node):
    max_attempts: int
    body: list[Stmt]


@dataclass(slots=True, eq=False)
class ReturnStmt(Node):
    value: Expr


Stmt = (
    ConfigStmt
    | UseStmt
    | UseOneOfStmt
    | AssignStmt
    | ExprStmt
    | IfStmt
    | ForInStmt
    | LoopUntilStmt
    | RepeatStmt
    | ReturnStmt
)


# ----------------------------------------------------------------------------- declarations


@dataclass(slots=True, eq=False)
class ImportDecl(Node):
    resource_kind: str
    name: str
    uri: str
    # The file this import was written in; relative URIs resolve against its directory.
    source_path: str | None = None

    HIDDEN: ClassVar[frozenset[str]] = frozenset({"source_path"})


@dataclass(slots=True, eq=False)
class ConfigDecl(Node):
    key: str
    value: Expr


@dataclass(slots=True, eq=False)
class FuncParam(Node):
    name: str
    shape: ShapeObjectExpr | None = None


@dataclass(slots=True, eq=False)
class FuncDecl(Node):
    name: str
    is_main: bool
    params: list[FuncParam]
    body: list[Stmt]


@dataclass(slots=True, eq=False)
class AgentDecl(Node):
    name: str
    is_main: bool
    config: list[ConfigDecl]
    functions: list[FuncDecl]
    # Agent-level `use` (later form): declared afresh in every function call of the agent.
    uses: list[UseStmt | UseOneOfStmt] | None = None
    # The file the agent was declared in (imported agents keep their own file).
    source_path: str | None = None

    HIDDEN: ClassVar[frozenset[str]] = frozenset({"source_path"})

    def function(self, name: str) -> FuncDecl | None:
        for func in self.functions:
            if func.name == name:
                return func
        return None

    def main_function(self) -> FuncDecl | None:
        for func in self.functions:
            if func.is_main:
                return func
        return None


@dataclass(slots=True, eq=False)
class Program(Node):
    imports: list[ImportDecl]
    agents: list[AgentDecl]
    source_path: str | None = field(default=None)

    HIDDEN: ClassVar[frozenset[str]] = frozenset({"source_path"})

    def agent(self, name: str) -> AgentDecl | None:
        for agent in self.agents:
            if agent.name == name:
                return agent
        return None
