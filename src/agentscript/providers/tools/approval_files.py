"""Reading approval policies from data: the file format, checked with pydantic.

Kept apart from the gate so runs without a policy file never import pydantic.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from agentscript.providers.tools.approvals import (
    ApprovalMode,
    ApprovalPolicy,
    ApprovalRule,
    Decision,
)
from agentscript.runtime.errors import LoadError

_Risk = Literal["read", "effect", "destructive"]


class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scheme: str | None = None
    tool: str | None = None
    method: str | None = None
    risk: _Risk | None = None
    decision: Decision


class _Policy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: ApprovalMode | None = None
    defaults: dict[_Risk, Decision] = {}
    rules: list[_Rule] = []


def parse_policy(data: Any, source: str) -> ApprovalPolicy:
    try:
        parsed = _Policy.model_validate(data)
    except ValidationError as problem:
        details = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            for error in problem.errors()
        )
        raise LoadError(f"{source} is invalid: {details}") from None
    return ApprovalPolicy(
        mode=parsed.mode,
        defaults=dict(parsed.defaults),
        rules=tuple(
            ApprovalRule(
                decision=rule.decision,
                scheme=rule.scheme,
                tool=rule.tool,
                method=rule.method,
                risk=rule.risk,
            )
            for rule in parsed.rules
        ),
    )
