"""Reading approval policies from data: the file format, checked with pydantic.

Kept apart from the gate so runs without a policy file never import pydantic.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentscript.providers.tools.approvals import (
    ApprovalMode,
    ApprovalPolicy,
    ApprovalRule,
    Decision,
    ServerRule,
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


class _Server(BaseModel):
    """A server pin: its name and its whole launch, as agentscript.mcp.json writes it."""

    model_config = ConfigDict(extra="forbid")

    server: str = Field(min_length=1)
    command: list[str] | None = Field(default=None, min_length=1)
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str | None = None
    decision: Decision = "run"

    @model_validator(mode="after")
    def _one_launch(self) -> _Server:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                "a server pin needs either command (the command then its arguments) or url"
            )
        return self


class _Policy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: ApprovalMode | None = None
    defaults: dict[_Risk, Decision] = {}
    rules: list[_Rule] = []
    servers: list[_Server] = []
    memory_scopes: list[str] = []


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
        servers=tuple(
            ServerRule(
                server=pin.server,
                decision=pin.decision,
                command=tuple(pin.command) if pin.command is not None else None,
                env=tuple(sorted(pin.env.items())),
                cwd=pin.cwd,
                url=pin.url,
            )
            for pin in parsed.servers
        ),
        memory_scopes=tuple(parsed.memory_scopes),
    )
