"""The first half of AgentSpec validation: is each field there, of the right JSON kind, and
within the vocabulary (version, pattern, identifiers, types, budgets)? The codes and messages
are the original's (MISSING_FIELD, INVALID_SHAPE, EMPTY_VALUE, INVALID_IDENTIFIER, …); every
problem is reported, never only the first."""

from __future__ import annotations

from typing import Any, TypeGuard

from agentscript.app.architect.diagnostics import SpecDiagnostic, error, pointer
from agentscript.app.architect.spec import (
    AGENT_NAME,
    BUDGET,
    IDENTIFIER,
    PATTERNS,
    SPEC_TYPES,
    pattern_of,
)

REQUIRED = (
    "version",
    "agent",
    "model",
    "inputs",
    "tools",
    "locals",
    "model_context",
    "generation",
    "output",
)
BUDGET_RULE = "must match /^\\d+k?$/."


def check_pattern(draft: dict[str, Any]) -> list[SpecDiagnostic]:
    """The pattern is linear or react, and only react has (and needs) a `react` block."""
    if "pattern" in draft and not isinstance(draft["pattern"], str):
        return [error("INVALID_SHAPE", "/pattern", "pattern must be a string when present.")]
    pattern = pattern_of(draft)
    if pattern not in PATTERNS:
        return [error("UNSUPPORTED_PATTERN", "/pattern", f"Unsupported pattern '{pattern}'.")]
    if pattern == "react" and "react" not in draft:
        return [error("MISSING_PATTERN_BLOCK", "/react", "pattern 'react' requires a react block.")]
    if pattern == "linear" and "react" in draft:
        return [
            error(
                "UNEXPECTED_PATTERN_BLOCK", "/react", "linear specs must not include a react block."
            )
        ]
    return []


def check_shape(draft: dict[str, Any]) -> list[SpecDiagnostic]:
    found = _Findings()
    for name in REQUIRED:
        if name not in draft:
            found.add("MISSING_FIELD", pointer(name), f"Missing required field '{name}'.")
    if "version" in draft and draft["version"] != "0.1":
        found.add("INVALID_VERSION", "/version", "AgentSpec version must be '0.1'.")
    if "agent" in draft:
        found.agent(draft["agent"])
    if "model" in draft:
        found.model(draft["model"])
    if "inputs" in draft:
        found.inputs(draft["inputs"])
    if "tools" in draft:
        found.tools(draft["tools"])
    if "locals" in draft:
        found.locals(draft["locals"])
    if "model_context" in draft:
        found.model_context(draft["model_context"])
    if "generation" in draft:
        found.generation(draft["generation"], "/generation")
    if "output" in draft:
        found.output(draft["output"], "/output")
    found.assumptions(draft.get("assumptions"), "assumptions" in draft)
    if pattern_of(draft) == "react" and "react" in draft:
        found.react(draft["react"])
    return found.items


class _Findings:
    """The shape checks of each part of a draft, collecting what they find."""

    def __init__(self) -> None:
        self.items: list[SpecDiagnostic] = []

    def add(self, code: str, path: str, message: str) -> None:
        self.items.append(error(code, path, message))

    # ------------------------------------------------------------------ the parts

    def agent(self, value: Any) -> None:
        if not self.is_object(value, "/agent", "agent"):
            return
        for key in ("name", "role", "description"):
            self.required_string(value, key, f"/agent/{key}")
        name = value.get("name")
        if isinstance(name, str) and not AGENT_NAME.fullmatch(name):
            self.add(
                "INVALID_IDENTIFIER",
                "/agent/name",
                "Agent name must start with an uppercase letter and contain only letters, "
                "digits, and underscores.",
            )

    def model(self, value: Any) -> None:
        if not self.is_object(value, "/model", "model"):
            return
        self.required_string(value, "import_name", "/model/import_name")
        self.required_string(value, "uri", "/model/uri")
        self.identifier(value.get("import_name"), "/model/import_name")

    def inputs(self, value: Any) -> None:
        if not self.is_object(value, "/inputs", "inputs"):
            return
        if not value:
            self.add("EMPTY_VALUE", "/inputs", "inputs must contain at least one field.")
        for name, field in value.items():
            where = pointer("inputs", name)
            self.identifier(name, where)
            if not self.is_object(field, where, f"inputs.{name}"):
                continue
            self.type_field(field, pointer("inputs", name, "type"))
            if "required" in field and not isinstance(field["required"], bool):
                self.add(
                    "INVALID_TYPE",
                    pointer("inputs", name, "required"),
                    "required must be a boolean when present.",
                )

    def tools(self, value: Any) -> None:
        if not self.is_list(value, "/tools", "tools"):
            return
        for index, tool in enumerate(value):
            base = pointer("tools", index)
            if not self.is_object(tool, base, f"tools[{index}]"):
                continue
            self.required_string(tool, "import_name", f"{base}/import_name")
            self.required_string(tool, "uri", f"{base}/uri")
            self.identifier(tool.get("import_name"), f"{base}/import_name")
            methods = tool.get("methods")
            if not isinstance(methods, list):
                self.add("INVALID_SHAPE", f"{base}/methods", "tool methods must be an array.")
                continue
            if not methods:
                self.add(
                    "EMPTY_VALUE",
                    f"{base}/methods",
                    "tool methods must contain at least one method.",
                )
            for number, method in enumerate(methods):
                where = f"{base}/methods/{number}"
                if not self.is_object(method, where, f"tools[{index}].methods[{number}]"):
                    continue
                self.required_string(method, "name", f"{where}/name")
                self.required_string(method, "purpose", f"{where}/purpose")
                self.identifier(method.get("name"), f"{where}/name")

    def locals(self, value: Any) -> None:
        if not self.is_list(value, "/locals", "locals"):
            return
        for index, local in enumerate(value):
            base = pointer("locals", index)
            if not self.is_object(local, base, f"locals[{index}]"):
                continue
            self.required_string(local, "name", f"{base}/name")
            self.identifier(local.get("name"), f"{base}/name")
            if "source" not in local:
                self.add("MISSING_FIELD", f"{base}/source", "Missing required field 'source'.")
            source = local.get("source")
            if not self.is_object(source, f"{base}/source", f"locals[{index}].source"):
                continue
            if source.get("kind") != "tool_call":
                self.add(
                    "UNSUPPORTED_KIND",
                    f"{base}/source/kind",
                    "locals source.kind must be 'tool_call'.",
                )
            self.tool_call(source, f"{base}/source", f"locals[{index}].source")

    def model_context(self, value: Any) -> None:
        if not self.is_list(value, "/model_context", "model_context"):
            return
        for index, entry in enumerate(value):
            base = pointer("model_context", index)
            if not self.is_object(entry, base, f"model_context[{index}]"):
                continue
            self.required_string(entry, "source", f"{base}/source")
            self.required_string(entry, "label", f"{base}/label")
            if "max" in entry:
                self.budget(entry["max"], f"{base}/max", "max")

    def generation(self, value: Any, base: str) -> None:
        if not self.is_object(value, base, base[1:].replace("/", ".")):
            return
        self.required_string(value, "input", f"{base}/input")
        if "max_output" in value and not is_positive_integer(value["max_output"]):
            self.add(
                "INVALID_VALUE", f"{base}/max_output", "max_output must be a positive integer."
            )

    def output(self, value: Any, base: str) -> None:
        if not self.is_object(value, base, base[1:].replace("/", ".")):
            return
        if "fields" not in value:
            self.add("MISSING_FIELD", f"{base}/fields", "Missing required field 'fields'.")
            return
        fields = value["fields"]
        if not isinstance(fields, dict):
            self.add("INVALID_SHAPE", f"{base}/fields", "output.fields must be an object.")
            return
        if not fields:
            self.add(
                "EMPTY_VALUE", f"{base}/fields", "output.fields must contain at least one field."
            )
        for name, field in fields.items():
            where = f"{base}/fields/{pointer(name)[1:]}"
            self.identifier(name, where)
            if self.is_object(field, where, f"output.fields.{name}"):
                self.type_field(field, f"{where}/type")

    def react(self, value: Any) -> None:
        if not self.is_object(value, "/react", "react"):
            return
        if not is_positive_integer(value.get("max_iterations")):
            self.add(
                "INVALID_VALUE",
                "/react/max_iterations",
                "react.max_iterations must be a positive integer.",
            )
        for part in ("scratch", "reason", "act"):
            if part not in value:
                self.add("MISSING_FIELD", f"/react/{part}", f"Missing required field '{part}'.")
        scratch = value.get("scratch")
        if self.is_object(scratch, "/react/scratch", "react.scratch"):
            self.required_string(scratch, "label", "/react/scratch/label")
            self.budget(scratch.get("max"), "/react/scratch/max", "react.scratch.max")
        reason = value.get("reason")
        if self.is_object(reason, "/react/reason", "react.reason"):
            self.generation(reason, "/react/reason")
            self.output(reason.get("output"), "/react/reason/output")
        act = value.get("act")
        if self.is_object(act, "/react/act", "react.act"):
            self.tool_call(act, "/react/act", "react.act")
        self.required_string(value, "stop_when", "/react/stop_when")

    def assumptions(self, value: Any, present: bool) -> None:
        if not present:
            return
        if not isinstance(value, list):
            self.add("INVALID_SHAPE", "/assumptions", "assumptions must be an array when present.")
            return
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item:
                self.add(
                    "EMPTY_VALUE",
                    pointer("assumptions", index),
                    "assumptions entries must be non-empty strings.",
                )

    # ------------------------------------------------------------------ the rules

    def tool_call(self, call: dict[str, Any], base: str, label: str) -> None:
        """`tool`, `method` and `args` of a local's source or of the ReAct act."""
        self.required_string(call, "tool", f"{base}/tool")
        self.required_string(call, "method", f"{base}/method")
        if "args" not in call:
            self.add("MISSING_FIELD", f"{base}/args", "Missing required field 'args'.")
        args = call.get("args")
        if not self.is_object(args, f"{base}/args", f"{label}.args"):
            return
        for name, expression in args.items():
            where = f"{base}/args/{pointer(name)[1:]}"
            self.identifier(name, where)
            if not isinstance(expression, str):
                self.add("INVALID_TYPE", where, "arg values must be strings.")

    def required_string(self, value: dict[str, Any], key: str, path: str) -> None:
        if key not in value:
            self.add("MISSING_FIELD", path, f"Missing required field '{key}'.")
        elif not isinstance(value[key], str) or not value[key]:
            self.add("EMPTY_VALUE", path, f"{key} must be a non-empty string.")

    def identifier(self, name: Any, path: str) -> None:
        if isinstance(name, str) and not IDENTIFIER.fullmatch(name):
            self.add(
                "INVALID_IDENTIFIER", path, "Identifier must match /^[A-Za-z_][A-Za-z0-9_]*$/."
            )

    def type_field(self, field: dict[str, Any], path: str) -> None:
        if "type" not in field:
            self.add("MISSING_FIELD", path, "Missing required field 'type'.")
        elif not isinstance(field["type"], str):
            self.add("INVALID_SHAPE", path, "type must be a string.")
        elif field["type"] not in SPEC_TYPES:
            self.add("UNSUPPORTED_TYPE", path, f"Unsupported AgentSpec type '{field['type']}'.")

    def budget(self, value: Any, path: str, label: str) -> None:
        if not isinstance(value, str) or not BUDGET.fullmatch(value):
            self.add("INVALID_BUDGET_FORMAT", path, f"{label} {BUDGET_RULE}")

    def is_object(self, value: Any, path: str, label: str) -> TypeGuard[dict[str, Any]]:
        if isinstance(value, dict):
            return True
        self.add("INVALID_SHAPE", path, f"{label} must be an object.")
        return False

    def is_list(self, value: Any, path: str, label: str) -> TypeGuard[list[Any]]:
        if isinstance(value, list):
            return True
        self.add("INVALID_SHAPE", path, f"{label} must be an array.")
        return False


def is_positive_integer(value: Any) -> bool:
    """A JSON integer above zero (`true` is not one, `3.0` is, as in JavaScript)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return float(value).is_integer() and value > 0
