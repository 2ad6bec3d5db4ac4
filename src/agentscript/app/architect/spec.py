"""The AgentSpec model: what the compiler reads once the validator has passed a draft.

A draft is any JSON object; the validator (validate.py) reports every problem of a draft at its
JSON pointer with the original's codes, which pydantic's own errors could not name. Only a draft
without errors becomes an `AgentSpec`, so the compiler never meets a missing field. Fields the
original does not know are ignored, as it ignores them; JSON key order is kept, and the compiler
emits inputs, arguments and output fields in the author's order.
"""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict

SpecType = Literal[
    "string",
    "number",
    "boolean",
    "json",
    "list[string]",
    "list[number]",
    "list[boolean]",
    "list[json]",
]
Pattern = Literal["linear", "react"]
SPEC_TYPES: tuple[str, ...] = get_args(SpecType)
PATTERNS: tuple[str, ...] = get_args(Pattern)

AGENT_NAME = re.compile(r"[A-Z][A-Za-z0-9_]*")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
BUDGET = re.compile(r"\d+k?")
# The bindings the ReAct lowering introduces in the entry function.
REACT_BINDINGS = frozenset({"thought", "obs", "scratch", "done"})


def as_draft(value: Any) -> dict[str, Any] | None:
    """`value` as an AgentSpec draft: any JSON object is one; anything else is not."""
    return value if isinstance(value, dict) else None


def pattern_of(draft: dict[str, Any]) -> str:
    """The draft's pattern; a spec without one is linear."""
    pattern = draft.get("pattern")
    return pattern if isinstance(pattern, str) else "linear"


class _Part(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class AgentHeader(_Part):
    name: str
    role: str
    description: str


class ModelImport(_Part):
    import_name: str
    uri: str


class InputField(_Part):
    type: SpecType
    # Accepted and not lowered: every input of the generated contract is required.
    required: bool = True


class ToolMethod(_Part):
    name: str
    purpose: str


class ToolImport(_Part):
    import_name: str
    uri: str
    methods: list[ToolMethod]


class ToolCallSource(_Part):
    kind: Literal["tool_call"]
    tool: str
    method: str
    args: dict[str, str]


class Local(_Part):
    name: str
    source: ToolCallSource


class ContextEntry(_Part):
    source: str
    label: str
    max: str | None = None


class OutputField(_Part):
    type: SpecType


class Output(_Part):
    fields: dict[str, OutputField]


class Generation(_Part):
    input: str
    max_output: int | None = None


class Reason(Generation):
    output: Output


class Scratch(_Part):
    label: str
    max: str


class Act(_Part):
    tool: str
    method: str
    args: dict[str, str]


class ReactBlock(_Part):
    max_iterations: int
    scratch: Scratch
    reason: Reason
    act: Act
    stop_when: str


class AgentSpec(_Part):
    version: Literal["0.1"]
    pattern: Pattern = "linear"
    agent: AgentHeader
    model: ModelImport
    inputs: dict[str, InputField]
    tools: list[ToolImport]
    locals: list[Local]
    model_context: list[ContextEntry]
    generation: Generation
    output: Output
    react: ReactBlock | None = None
    assumptions: list[str] = []
