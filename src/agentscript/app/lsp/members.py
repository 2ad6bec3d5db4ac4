"""What follows a dot: an agent's functions, a tool's methods, a shaped value's fields, a list's
properties. Hover, completion and definition all read members through here."""

from __future__ import annotations

from dataclasses import dataclass

from agentscript.app.lsp.index import (
    AGENT,
    FUNCTION,
    LIST_METHODS,
    LOCAL,
    MEMORY,
    PARAM,
    TOOL,
    Symbol,
)
from agentscript.app.lsp.tool_methods import MEMORY_RESOURCE_METHODS, ToolCatalog
from agentscript.lang import ast
from agentscript.lang.shape_types import ListType, ObjectType, ValueType, member_type, members
from agentscript.lang.shape_types import type_text as value_type_text

METHOD = "method"
FIELD = "field"
PROPERTY = "property"


@dataclass(frozen=True, slots=True)
class Member:
    name: str
    kind: str  # function, method, field, property
    detail: str
    # The declaration, for an agent's function.
    symbol: Symbol | None = None


def members_of(root: Symbol, chain: tuple[str, ...], tools: ToolCatalog) -> list[Member]:
    """The members of `root.chain…` (chain empty: of `root` itself)."""
    origin = root.origin
    if not chain:
        if origin.kind == AGENT:
            return [
                Member(name, FUNCTION, signature(function), function)
                for name, function in origin.functions.items()
                if not function.name.startswith("__")
            ]
        if origin.kind == TOOL:
            return [
                Member(method.name, METHOD, method.summary)
                for method in tools.methods(origin.uri or "")
            ]
        if origin.kind == MEMORY:
            return [
                Member(method.name, METHOD, method.summary) for method in MEMORY_RESOURCE_METHODS
            ]
    if origin.kind not in (PARAM, LOCAL):
        return []
    value_type = origin.shape
    for name in chain:
        value_type = member_type(value_type, name) if value_type is not None else None
        if value_type is None:
            return []
    return _value_members(value_type) if value_type is not None else []


def resolve_member(root: Symbol, chain: tuple[str, ...], tools: ToolCatalog) -> Member | None:
    """The member the last name of `chain` names."""
    for member in members_of(root, chain[:-1], tools):
        if member.name == chain[-1]:
            return member
    return None


def _value_members(value_type: ValueType) -> list[Member]:
    if isinstance(value_type, ObjectType):
        return [
            Member(name, FIELD, value_type_text(field_type))
            for name, field_type in value_type.fields
        ]
    owner = "list" if isinstance(value_type, ListType) else value_type_text(value_type)
    found: list[Member] = []
    for name in members(value_type):
        if name in LIST_METHODS:
            found.append(Member(name, METHOD, "append an item"))
        else:
            found.append(Member(name, PROPERTY, f"the {owner}'s {name}"))
    return found


def type_text(shape_type: ast.ShapeType) -> str:
    if isinstance(shape_type, ast.ListShapeType):
        return f"list[{type_text(shape_type.item_type)}]"
    if isinstance(shape_type, ast.ChoiceShapeType):
        return " | ".join(
            f'"{value}"' if isinstance(value, str) else f"{value:g}" for value in shape_type.values
        )
    return shape_type.name


def shape_text(shape: ast.ShapeObjectExpr | ast.ShapeType) -> str:
    if not isinstance(shape, ast.ShapeObjectExpr):
        return type_text(shape)
    fields = ", ".join(f"{item.name} {type_text(item.type)}" for item in shape.fields)
    return "{ " + fields + " }" if fields else "{}"


def signature(function: Symbol) -> str:
    """`func name(a, input { q string })` for a function symbol."""
    declaration = function.declaration
    if not isinstance(declaration, ast.FuncDecl):
        return f"func {function.name}"
    params = ", ".join(
        param.name + (" " + shape_text(param.shape) if param.shape is not None else "")
        for param in declaration.params
    )
    head = "main func" if declaration.is_main else "func"
    name = "" if declaration.name.startswith("__") else f" {declaration.name}"
    return f"{head}{name}({params})"
