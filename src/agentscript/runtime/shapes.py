"""Output and input shapes: JSON schema, default values, coercion and validation (reference §3.7).

Coercion only turns obviously-meant strings into numbers and booleans; validation then insists on
the declared shape. Both are pure functions; errors carry the location of the field at fault.
"""

from __future__ import annotations

import re
from typing import Any

from agentscript.lang import ast
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.jsjson import stringify
from agentscript.runtime.values import BINDING_TYPES, is_number, normalise_number

_NUMBER_TEXT = re.compile(r"^-?(0|[1-9]\d*)(\.\d+)?$")

_TYPE_SCHEMAS: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "number": {"type": "number"},
    "boolean": {"type": "boolean"},
    "json": {},
    "list": {"type": "array"},
}


def type_schema(shape_type: ast.ShapeType) -> dict[str, Any]:
    if isinstance(shape_type, ast.ListShapeType):
        return {"type": "array", "items": type_schema(shape_type.item_type)}
    if isinstance(shape_type, ast.ChoiceShapeType):
        values = choice_values(shape_type)
        kind = "string" if all(isinstance(value, str) for value in values) else "number"
        return {"type": kind, "enum": values}
    return dict(_TYPE_SCHEMAS[shape_type.name])


def choice_values(shape_type: ast.ChoiceShapeType) -> list[Any]:
    """The values of a closed choice as JSON has them (whole numbers as integers)."""
    return [
        value if isinstance(value, str) else normalise_number(value) for value in shape_type.values
    ]


def shape_schema(shape: ast.ShapeObjectExpr) -> dict[str, Any]:
    """The JSON-Schema-like object sent with a shaped generate, keys in the 0.1.0 order."""
    return {
        "type": "object",
        "properties": {field.name: type_schema(field.type) for field in shape.fields},
        "required": [field.name for field in shape.fields],
        "additionalProperties": False,
    }


def default_value(shape_type: ast.ShapeType) -> Any:
    """What the mock model answers for a field: "" / 0 / true / {} / [] / [default(T)]."""
    if isinstance(shape_type, ast.ListShapeType):
        return [default_value(shape_type.item_type)]
    if isinstance(shape_type, ast.ChoiceShapeType):
        return choice_values(shape_type)[0]
    return {"string": "", "number": 0, "boolean": True, "json": {}, "list": []}[shape_type.name]


def default_object(shape: ast.ShapeObjectExpr) -> dict[str, Any]:
    return {field.name: default_value(field.type) for field in shape.fields}


# ----------------------------------------------------------------------------- coercion


def coerce(value: Any, shape: ast.ShapeObjectExpr) -> Any:
    """A copy of `value` with declared number/boolean fields converted from obvious strings."""
    if not isinstance(value, dict):
        return value
    declared = {field.name: field.type for field in shape.fields}
    result: dict[str, Any] = {}
    for key, item in value.items():
        field_type = declared.get(key)
        result[key] = item if field_type is None else _coerce_value(item, field_type)
    return result


def _coerce_value(value: Any, shape_type: ast.ShapeType) -> Any:
    if isinstance(shape_type, ast.ListShapeType):
        if isinstance(value, list):
            return [_coerce_value(item, shape_type.item_type) for item in value]
        return value
    if not isinstance(value, str):
        return value
    if isinstance(shape_type, ast.ChoiceShapeType):
        # A number choice takes "2" for 2, as a number field does; a string choice is exact.
        if all(isinstance(choice, float) for choice in shape_type.values):
            text = value.strip()
            if _NUMBER_TEXT.match(text):
                return normalise_number(float(text))
        return value
    if shape_type.name == "number":
        text = value.strip()
        if _NUMBER_TEXT.match(text):
            return normalise_number(float(text)) if "." in text else int(text)
    elif shape_type.name == "boolean":
        lowered = value.strip().lower()
        if lowered in ("true", "false"):
            return lowered == "true"
    return value


# ----------------------------------------------------------------------------- validation


def validate_output(
    value: Any,
    shape: ast.ShapeObjectExpr,
    generate: ast.GenerateExpr,
    path: str | None,
    reject_extra_fields: bool,
) -> None:
    """Raise ExecutionError unless `value` matches the generate return shape."""
    where = generate.range.start
    if not isinstance(value, dict):
        raise ExecutionError(
            "LLM result must be an object matching the generate return shape", where, path
        )
    if reject_extra_fields:
        declared = {field.name for field in shape.fields}
        for key in value:
            if key not in declared:
                raise ExecutionError(f"LLM result contains unexpected field '{key}'", where, path)
    for field in shape.fields:
        if field.name not in value:
            raise ExecutionError(
                f"LLM result is missing required field '{field.name}'", field.range.start, path
            )
        check_type(value[field.name], field.type, "LLM result field", field, path)


def check_type(
    value: Any, shape_type: ast.ShapeType, prefix: str, field: ast.ShapeField, path: str | None
) -> None:
    """Type rules shared by generate output and entry input (`prefix` names which). The error
    names the field and shows what came, e.g. `LLM result field 'total' must be a number,
    got "many"`."""
    _check_type(value, shape_type, prefix, field, field.name, path)


def _check_type(
    value: Any,
    shape_type: ast.ShapeType,
    prefix: str,
    field: ast.ShapeField,
    name: str,
    path: str | None,
) -> None:
    if isinstance(shape_type, ast.ListShapeType):
        if not isinstance(value, list):
            raise _wrong_type(f"{prefix} '{name}' must be a list", value, field, path)
        for index, item in enumerate(value):
            _check_type(item, shape_type.item_type, prefix, field, f"{name}[{index}]", path)
        return
    if isinstance(shape_type, ast.ChoiceShapeType):
        allowed = choice_values(shape_type)
        if isinstance(value, bool) or value not in allowed:
            listed = ", ".join(stringify(choice) for choice in allowed)
            raise _wrong_type(f"{prefix} '{name}' must be one of {listed}", value, field, path)
        return
    type_name = shape_type.name
    if type_name == "json":
        if _contains_binding(value):
            raise ExecutionError(
                f"{prefix.replace(' field', '')} json field '{name}' cannot contain runtime "
                "resource bindings",
                field.range.start,
                path,
            )
        return
    valid = {
        "string": isinstance(value, str),
        "number": is_number(value),
        "boolean": isinstance(value, bool),
        "list": isinstance(value, list),
    }[type_name]
    if not valid:
        raise _wrong_type(f"{prefix} '{name}' must be a {type_name}", value, field, path)


_SHOWN = 40


def _wrong_type(
    message: str, value: Any, field: ast.ShapeField, path: str | None
) -> ExecutionError:
    shown = "a runtime binding" if isinstance(value, BINDING_TYPES) else stringify(value)
    if len(shown) > _SHOWN:
        shown = shown[: _SHOWN - 3] + "..."
    return ExecutionError(f"{message}, got {shown}", field.range.start, path)


def _contains_binding(value: Any) -> bool:
    if isinstance(value, BINDING_TYPES):
        return True
    if isinstance(value, list):
        return any(_contains_binding(item) for item in value)
    if isinstance(value, dict):
        return any(_contains_binding(item) for item in value.values())
    return False
