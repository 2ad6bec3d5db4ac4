"""`validateSpec`: every problem of an AgentSpec draft, `{ok, diagnostics}` as the original
answers it (ok when no diagnostic is an error)."""

from __future__ import annotations

from typing import Any

from agentscript.app.architect.diagnostics import SpecDiagnostic, passed, unique
from agentscript.app.architect.reference_check import check_references
from agentscript.app.architect.shape_check import check_pattern, check_shape
from agentscript.app.architect.spec import AgentSpec


def validate_spec(draft: dict[str, Any]) -> dict[str, Any]:
    diagnostics = spec_diagnostics(draft)
    return {"ok": passed(diagnostics), "diagnostics": diagnostics}


def spec_diagnostics(draft: dict[str, Any]) -> list[SpecDiagnostic]:
    return unique([*check_pattern(draft), *check_shape(draft), *check_references(draft)])


def typed_spec(draft: dict[str, Any]) -> AgentSpec:
    """The spec of a draft that passed validation (unknown fields dropped)."""
    return AgentSpec.model_validate(draft)
