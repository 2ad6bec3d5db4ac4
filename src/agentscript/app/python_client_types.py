"""How a program's shapes and names become Python in a generated client (`python_client.py`).

Pure functions of the syntax tree, so a generated client depends on the program's text only:

- shape types become annotations: `string` → `str`, `number` → `float`, `boolean` → `bool`,
  `json` and `list` → JSON data, `list[T]` → `list[T]`, a closed choice → `Literal[…]` (a
  choice with a fractional number, which `Literal` cannot hold, widens to `float`);
- a shape field keeps its name unless Python or Pydantic cannot use it (a keyword such as
  `from`, a `BaseModel` attribute such as `json` or `schema`, or a name the function itself
  takes): then it gets a trailing `_` and the program's name as its alias;
- an agent's name becomes a snake_case function name (`TicketTriage` → `ticket_triage`);
- a description becomes a docstring literal that stays one whatever the text holds.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import BaseModel

from agentscript.app.errors import AppError
from agentscript.lang import ast

# Names a field cannot have: a Pydantic model's own attributes, and the names the generated
# annotations use (a field named `str` would hide the type `str` from the fields after it).
_UNUSABLE_NAMES = frozenset(name for name in dir(BaseModel) if not name.startswith("_")) | {
    "BaseModel", "ConfigDict", "Field", "JsonValue", "Literal", "bool", "float", "list", "str",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class PythonField:
    """A shape field in the client: its name in the program (the JSON key) and in Python."""

    source_name: str
    python_name: str
    annotation: str

    @property
    def aliased(self) -> bool:
        return self.python_name != self.source_name


def python_fields(
    shape: ast.ShapeObjectExpr, where: str, taken: Iterable[str] = ()
) -> list[PythonField]:
    """The shape's fields in source order, renamed where Python needs it; `taken` holds names
    the field may not have (a generated function's own parameters). Two fields that end up
    with the same Python name, or a name Python cannot hold at all, are refused naming `where`."""
    unusable = _UNUSABLE_NAMES | set(taken)
    fields: list[PythonField] = []
    for field in shape.fields:
        name = field.name
        if name.startswith("_") or not name.isidentifier():
            raise AppError(
                f"{where}: field {name!r} cannot be a Python field (a leading underscore makes "
                "it private to Pydantic): rename it to generate a client"
            )
        python_name = f"{name}_" if keyword.iskeyword(name) or name in unusable else name
        fields.append(PythonField(name, python_name, python_type(field.type)))
    _refuse_duplicates([field.python_name for field in fields], where, "field")
    return fields


def python_type(shape_type: ast.ShapeType) -> str:
    """The annotation for a shape type."""
    if isinstance(shape_type, ast.ChoiceShapeType):
        return _choice_type(shape_type.values)
    if isinstance(shape_type, ast.ListShapeType):
        return f"list[{python_type(shape_type.item_type)}]"
    return {
        "string": "str",
        "number": "float",
        "boolean": "bool",
        "json": "JsonValue",
        "list": "list[JsonValue]",
    }.get(shape_type.name, "JsonValue")


def _choice_type(values: list[str | float]) -> str:
    if any(isinstance(value, float) and not value.is_integer() for value in values):
        return "float"
    return f"Literal[{', '.join(_literal(value) for value in values)}]"


def _literal(value: str | float) -> str:
    if isinstance(value, float):
        return str(int(value))
    return repr(value)


def function_name(agent: ast.AgentDecl) -> str:
    """The agent's name in snake_case (`HTTPFetcher` → `http_fetcher`), the name of its sync
    function (the async one adds an `a` in front)."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", agent.name)
    snake = words.lower()
    if snake.startswith("_"):
        raise AppError(
            f"Agent {agent.name}: a name starting with '_' cannot be a public Python function: "
            "rename it to generate a client"
        )
    return f"{snake}_" if keyword.iskeyword(snake) else snake


def refuse_clashing_functions(names: dict[str, str]) -> None:
    """`names` maps each agent to its function name; two agents may not share one."""
    by_function: dict[str, list[str]] = {}
    for agent, function in names.items():
        by_function.setdefault(function, []).append(agent)
    for function, agents in sorted(by_function.items()):
        if len(agents) > 1:
            raise AppError(
                f"Agents {' and '.join(sorted(agents))} would both become the Python function "
                f"{function}(): rename one to generate a client"
            )


def _refuse_duplicates(names: list[str], where: str, what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise AppError(
                f"{where}: two {what}s would both be {name!r} in Python: rename one to "
                "generate a client"
            )
        seen.add(name)


def docstring(text: str) -> str:
    """`text` as a triple-quoted literal: backslashes and quotes escaped (a text ending in `"`
    cannot end the literal early) and control characters other than newlines written as
    escapes."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    visible = "".join(
        char if char == "\n" or char.isprintable() else repr(char)[1:-1] for char in escaped
    )
    return f'"""{visible}"""'
