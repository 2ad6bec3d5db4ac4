"""The entry input contract (reference §3.8): how the run's input reaches the entry function.

A shaped `input` parameter makes the input a checked object: missing fields are asked for
interactively when an input provider exists, present ones must have the declared type. Input
is never coerced, and fields the shape does not name are passed through.
"""

from __future__ import annotations

from typing import Any

from agentscript.lang import ast
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import InputProvider
from agentscript.runtime.shapes import check_type
from agentscript.runtime.trace import Tracer
from agentscript.runtime.values import sanitize


def resolve_entry_input(
    function: ast.FuncDecl,
    input_value: Any,
    provider: InputProvider | None,
    tracer: Tracer,
    path: str | None,
) -> list[Any]:
    """The argument list for the entry function: none, or the (completed) input object."""
    if not function.params:
        return []
    shape = function.params[0].shape
    if shape is None:
        return [input_value]
    if not isinstance(input_value, dict):
        raise ExecutionError("Entry input must be a JSON object", function.range.start, path)
    completed = dict(input_value)
    for field in shape.fields:
        field_path = f"input.{field.name}"
        value = completed.get(field.name)
        if value is None:
            if provider is None:
                raise ExecutionError(
                    f"Missing input '{field_path}' and no interactive input provider is available",
                    field.range.start,
                    path,
                )
            value = provider.read(field.name, field_path)
            tracer.emit("input", {"path": field_path, "value": sanitize(value)})
            completed[field.name] = value
        check_type(value, field.type, "Input field", field, path)
    return [completed]
