"""The second half of AgentSpec validation: do the names fit together? Every tool call names a
declared tool and method, every `input.X` / `local.X` / `thought.X` expression names something
declared (a local only after it is computed), the bindings the compiler emits do not collide,
and a ReAct loop stops on a boolean of its reasoning. Codes and messages are the original's."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentscript.app.architect.diagnostics import SpecDiagnostic, error, pointer
from agentscript.app.architect.spec import REACT_BINDINGS, pattern_of

THOUGHT_FIELD = re.compile(r"thought\.[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class Declared:
    """The names a draft declares: inputs, locals (in order) and each tool's methods."""

    inputs: frozenset[str]
    locals: tuple[str, ...]
    tools: dict[str, frozenset[str]]

    @classmethod
    def of(cls, draft: dict[str, Any]) -> Declared:
        tools = {
            tool["import_name"]: frozenset(
                method["name"]
                for method in _items(tool.get("methods"))
                if isinstance(method, dict) and isinstance(method.get("name"), str)
            )
            for tool in _items(draft.get("tools"))
            if isinstance(tool, dict) and isinstance(tool.get("import_name"), str)
        }
        inputs = draft.get("inputs")
        return cls(
            frozenset(inputs) if isinstance(inputs, dict) else frozenset(),
            tuple(_name(local, "name") or "" for local in _items(draft.get("locals"))),
            tools,
        )


def check_references(draft: dict[str, Any]) -> list[SpecDiagnostic]:
    declared = Declared.of(draft)
    found = _bindings(draft)
    for index, local in enumerate(_items(draft.get("locals"))):
        if not isinstance(local, dict) or not isinstance(local.get("source"), dict):
            continue
        source = local["source"]
        base = pointer("locals", index, "source")
        found += _tool_method(source.get("tool"), source.get("method"), base, declared)
        computed_before = frozenset(declared.locals[:index])
        for name, expression in _entries(source.get("args")):
            if isinstance(expression, str):
                where = pointer("locals", index, "source", "args", name)
                found += _input_or_local(expression, where, declared, computed_before)
    found += _context(draft, declared)
    if pattern_of(draft) == "react" and isinstance(draft.get("react"), dict):
        found += _react(draft, draft["react"], declared)
    return found


def _bindings(draft: dict[str, Any]) -> list[SpecDiagnostic]:
    """The agent, the model and the tools share the program's scope; the locals share the
    entry function's with `input`, and may not hide a program-level name either."""
    found: list[SpecDiagnostic] = []
    program: dict[str, str] = {}
    named = [
        (_name(draft.get("agent"), "name"), "/agent/name"),
        (_name(draft.get("model"), "import_name"), "/model/import_name"),
    ]
    named += [
        (_name(tool, "import_name"), pointer("tools", index, "import_name"))
        for index, tool in enumerate(_items(draft.get("tools")))
    ]
    for name, path in named:
        found += _bind(program, name, path)
    function = {"input": "/inputs"}
    for index, local in enumerate(_items(draft.get("locals"))):
        name = _name(local, "name")
        if name is None:
            continue
        path = pointer("locals", index, "name")
        if name in program:
            found.append(
                error(
                    "DUPLICATE_BINDING",
                    path,
                    f"Local '{name}' conflicts with a top-level binding at {program[name]}.",
                )
            )
        found += _bind(function, name, path)
    return found


def _bind(scope: dict[str, str], name: str | None, path: str) -> list[SpecDiagnostic]:
    if name is None:
        return []
    if name in scope:
        return [error("DUPLICATE_BINDING", path, f"Binding '{name}' conflicts with {scope[name]}.")]
    scope[name] = path
    return []


def _context(draft: dict[str, Any], declared: Declared) -> list[SpecDiagnostic]:
    found: list[SpecDiagnostic] = []
    entries = draft.get("model_context")
    if isinstance(entries, list) and not entries:
        found.append(
            error(
                "EMPTY_MODEL_CONTEXT",
                "/model_context",
                "model_context must contain at least one entry.",
            )
        )
    for index, entry in enumerate(_items(entries)):
        if not isinstance(entry, dict) or not isinstance(entry.get("source"), str):
            continue
        source = entry["source"]
        where = pointer("model_context", index, "source")
        if not source.startswith(("input.", "local.")):
            found.append(
                error(
                    "INVALID_CONTEXT_SOURCE",
                    where,
                    "model_context source must be input.<field> or local.<name>.",
                )
            )
        else:
            found += _input_or_local(source, where, declared, frozenset(declared.locals))
    return found


def _react(
    draft: dict[str, Any], react: dict[str, Any], declared: Declared
) -> list[SpecDiagnostic]:
    found = _reserved(draft, react)
    reason = react.get("reason")
    output = reason.get("output") if isinstance(reason, dict) else None
    thought = _fields(output)
    act = react.get("act")
    if isinstance(act, dict):
        found += _tool_method(act.get("tool"), act.get("method"), "/react/act", declared)
        for name, expression in _entries(act.get("args")):
            if not isinstance(expression, str):
                continue
            where = pointer("react", "act", "args", name)
            if expression.startswith("thought."):
                if expression[len("thought.") :] not in thought:
                    found.append(
                        error(
                            "UNKNOWN_THOUGHT_REF",
                            where,
                            f"Unknown thought reference '{expression}'.",
                        )
                    )
            elif expression.startswith(("scratch.", "done.", "obs.")):
                found.append(
                    error(
                        "RESERVED_IDENTIFIER",
                        where,
                        f"Reserved ReAct identifier used in '{expression}'.",
                    )
                )
            else:
                found += _input_or_local(expression, where, declared, frozenset(declared.locals))
    found += _stop_when(react.get("stop_when"), thought)
    return found


def _stop_when(stop_when: Any, thought: dict[str, Any]) -> list[SpecDiagnostic]:
    if not isinstance(stop_when, str):
        return []
    if not THOUGHT_FIELD.fullmatch(stop_when):
        return [
            error(
                "INVALID_STOP_WHEN",
                "/react/stop_when",
                "stop_when must be the literal form thought.<field>.",
            )
        ]
    field = thought.get(stop_when[len("thought.") :])
    if field is None:
        return [
            error(
                "UNKNOWN_THOUGHT_REF",
                "/react/stop_when",
                f"Unknown thought reference '{stop_when}'.",
            )
        ]
    if not isinstance(field, dict) or field.get("type") != "boolean":
        return [
            error(
                "STOP_WHEN_NOT_BOOLEAN",
                "/react/stop_when",
                "stop_when must reference a boolean thought field.",
            )
        ]
    return []


def _reserved(draft: dict[str, Any], react: dict[str, Any]) -> list[SpecDiagnostic]:
    """The ReAct lowering binds thought, obs, scratch and done: no input or local may take
    those names, nor a contract field (except `done`, the usual stop field)."""
    found: list[SpecDiagnostic] = []
    message = "'{}' is reserved by ReAct lowering."
    for name, _ in _entries(draft.get("inputs")):
        if name in REACT_BINDINGS:
            found.append(
                error("RESERVED_IDENTIFIER", pointer("inputs", name), message.format(name))
            )
    for index, local in enumerate(_items(draft.get("locals"))):
        local_name = _name(local, "name")
        if local_name in REACT_BINDINGS:
            where = pointer("locals", index, "name")
            found.append(error("RESERVED_IDENTIFIER", where, message.format(local_name)))
    reason = react.get("reason")
    contracts = [
        ("/output/fields", draft.get("output")),
        ("/react/reason/output/fields", reason.get("output") if isinstance(reason, dict) else None),
    ]
    for base, output in contracts:
        for name in _fields(output):
            if name != "done" and name in REACT_BINDINGS:
                found.append(
                    error("RESERVED_IDENTIFIER", f"{base}{pointer(name)}", message.format(name))
                )
    return found


def _tool_method(tool: Any, method: Any, base: str, declared: Declared) -> list[SpecDiagnostic]:
    if not isinstance(tool, str):
        return []
    methods = declared.tools.get(tool)
    if methods is None:
        return [error("UNKNOWN_TOOL", f"{base}/tool", f"Unknown tool '{tool}'.")]
    if isinstance(method, str) and method not in methods:
        return [
            error(
                "UNKNOWN_TOOL_METHOD", f"{base}/method", f"Tool '{tool}' has no method '{method}'."
            )
        ]
    return []


def _input_or_local(
    expression: str, where: str, declared: Declared, computed: frozenset[str]
) -> list[SpecDiagnostic]:
    """An `input.X` or `local.X` expression names a declared input, or a local computed
    before it; anything else is a string literal and always fine."""
    if expression.startswith("input."):
        if expression[len("input.") :] not in declared.inputs:
            return [error("UNKNOWN_INPUT_REF", where, f"Unknown input reference '{expression}'.")]
    elif expression.startswith("local."):
        name = expression[len("local.") :]
        if name not in declared.locals:
            return [error("UNKNOWN_LOCAL_REF", where, f"Unknown local reference '{expression}'.")]
        if name not in computed:
            return [
                error(
                    "FORWARD_LOCAL_REF",
                    where,
                    f"Local '{name}' is referenced before it is declared.",
                )
            ]
    return []


def _fields(output: Any) -> dict[str, Any]:
    """An output's fields by name; none when it has no fields object."""
    if isinstance(output, dict) and isinstance(output.get("fields"), dict):
        fields: dict[str, Any] = output["fields"]
        return fields
    return {}


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _entries(value: Any) -> list[tuple[str, Any]]:
    return list(value.items()) if isinstance(value, dict) else []


def _name(value: Any, key: str) -> str | None:
    if isinstance(value, dict) and isinstance(value.get(key), str):
        name: str = value[key]
        return name
    return None
