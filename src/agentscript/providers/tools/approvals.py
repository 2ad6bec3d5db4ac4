"""Approvals: a gate in front of every host tool that decides whether a call runs.

A policy maps each call (by scheme, tool, method and the tool's own risk rating) to run, ask or
deny. By default reads run and everything that changes something asks. The mode says what
"ask" means: `ask` asks the user in a terminal (yes / no / always for this tool method) and
refuses when there is no terminal; `auto` approves; `deny` refuses. `autonomous` is for runs
nobody watches (agentscript.learn.autonomy): only reads the policy lets run are allowed; every
other call is refused without asking, whatever the policy says. Every call that is not a
plain read leaves two `approval` trace events with one approval id: the request (`pending`)
and the decision (`approved` or `refused`, and by whom).

Starting an MCP server is an action of its own, approved before the server runs (its process
runs whatever the configuration says). A policy's `servers` rules pin a server by name and by
its whole launch (command and arguments, env and cwd, or URL); a pinned server starts in every
mode, a server whose launch differs from its pin never starts, and any other start is decided
by the mode: `auto` starts it, `ask` asks, `deny` and `autonomous` refuse.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentscript.providers.tools.base import Risk
from agentscript.providers.tools.mcp_launch import ServerLaunch, StartRefused
from agentscript.providers.tools.registry import ToolRegistry
from agentscript.providers.tools.tool_uris import scheme_of
from agentscript.runtime.bounded_input import USER_FILE_LIMIT, UnusableInput, read_regular_text
from agentscript.runtime.errors import ExecutionError, LoadError
from agentscript.runtime.jsjson import parse
from agentscript.runtime.ports import ToolCall
from agentscript.runtime.uris import scrub_uri
from agentscript.runtime.values import sanitize

ApprovalMode = Literal["auto", "ask", "deny", "autonomous"]
Decision = Literal["run", "ask", "deny"]
Answer = Literal["yes", "no", "always"]

DEFAULT_DECISIONS: dict[str, Decision] = {"read": "run", "effect": "ask", "destructive": "ask"}


@dataclass(frozen=True, slots=True)
class ApprovalRule:
    """One rule of a policy; unset fields match anything."""

    decision: Decision
    scheme: str | None = None
    tool: str | None = None
    method: str | None = None
    risk: Risk | None = None

    def matches(self, request: ToolCall, risk: Risk) -> bool:
        return (
            (self.scheme is None or self.scheme == scheme_of(request.uri))
            and (self.tool is None or self.tool == request.tool_name)
            and (self.method is None or self.method == request.method)
            and (self.risk is None or self.risk == risk)
        )


@dataclass(frozen=True, slots=True)
class ServerRule:
    """A pin: server `server` may start (or never, with decision "deny") when its configured
    launch is exactly this one. For stdio, `command` is the command then its arguments, and
    `env` and `cwd` must match as well (an env such as LD_PRELOAD changes what a command does);
    for http, `url`."""

    server: str
    decision: Decision
    command: tuple[str, ...] | None = None
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None

    def pins(self, launch: ServerLaunch) -> bool:
        if launch.transport == "http":
            return self.url is not None and self.url == launch.url
        return self.command == launch.command and self.env == launch.env and self.cwd == launch.cwd


@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    """Rules (first match wins), then the default decision for the call's risk; server pins;
    grants of other workspaces' memory."""

    mode: ApprovalMode | None = None
    defaults: dict[Risk, Decision] = field(default_factory=dict)
    rules: tuple[ApprovalRule, ...] = ()
    servers: tuple[ServerRule, ...] = ()
    # Workspaces (absolute paths) besides the run's own whose memory `memory://` may reach.
    memory_scopes: tuple[str, ...] = ()

    def decide(self, request: ToolCall, risk: Risk) -> Decision:
        for rule in self.rules:
            if rule.matches(request, risk):
                return rule.decision
        return self.defaults.get(risk, DEFAULT_DECISIONS[risk])

    def decide_start(self, launch: ServerLaunch) -> Decision | Literal["mismatch"] | None:
        """The pin's decision for this launch; "mismatch" when the server is pinned to another
        launch; None when no rule names the server."""
        named = [rule for rule in self.servers if rule.server == launch.server]
        for rule in named:
            if rule.pins(launch):
                return rule.decision
        return "mismatch" if named else None

    @classmethod
    def from_data(cls, data: Any, source: str = "Approval policy") -> ApprovalPolicy:
        """A policy from parsed YAML/JSON, validated field by field; a mistake (an unknown
        key, a wrong decision) is a LoadError naming `source` and the field."""
        from agentscript.providers.tools.approval_files import parse_policy

        return parse_policy(data, source)

    @classmethod
    def load(cls, path: str | Path) -> ApprovalPolicy:
        """Read a policy from YAML or JSON; any mistake is an error naming the file and field."""
        import yaml

        file = Path(path)
        try:
            text = read_regular_text(file, USER_FILE_LIMIT, "Approval policy")
        except UnusableInput as problem:
            raise LoadError(str(problem)) from None
        try:
            data = parse(text) if file.suffix == ".json" else yaml.safe_load(text)
        except (ValueError, RecursionError, yaml.YAMLError) as problem:
            raise LoadError(f"Approval policy {file} is not valid: {_short(problem)}") from None
        return cls.from_data(data or {}, f"Approval policy {file}")


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What the user is asked about."""

    approval_id: str
    tool: str
    method: str
    uri: str
    risk: Risk
    args: list[Any]
    # Set when what is asked is starting an MCP server, not a tool call.
    launch: ServerLaunch | None = None
    # Why the user is asked although the mode or policy would not ask (see `ask_again`).
    note: str | None = None

    @property
    def label(self) -> str:
        return f"{self.tool}.{self.method}"


AskUser = Callable[[ApprovalRequest], Answer]


class ApprovalGate:
    """A ToolProvider that puts the policy in front of a ToolRegistry."""

    def __init__(
        self,
        registry: ToolRegistry,
        policy: ApprovalPolicy | None = None,
        mode: ApprovalMode | None = None,
        ask_user: AskUser | None = None,
    ) -> None:
        self.registry = registry
        self.policy = policy or ApprovalPolicy()
        self.mode: ApprovalMode = mode or self.policy.mode or "ask"
        self.ask_user = ask_user
        self._always: set[tuple[str, str, str]] = set()
        # Launches approved once in this run: a server that died may start again.
        self._started: set[ServerLaunch] = set()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def call(self, request: ToolCall) -> Any:
        risk = self.registry.risk(request)
        request.risk = risk
        decision = self.policy.decide(request, risk)
        if decision == "run" and risk == "read":
            return self.registry.call(request)
        approval = ApprovalRequest(
            approval_id=f"approval-{next(self._ids)}",
            tool=request.tool_name,
            method=request.method,
            uri=scrub_uri(request.uri),  # shown to the user and traced: no password
            risk=risk,
            args=sanitize(request.args),
        )
        self._report(request, approval, "pending", None)
        approved, by = self._decide(approval, decision)
        self._report(request, approval, "approved" if approved else "refused", by)
        if not approved:
            raise ExecutionError(_refusal(approval, by))
        return self.registry.call(request)

    def ask_again(self, request: ToolCall, note: str) -> bool:
        """Whether the person at the terminal allows a call with effects to run again although
        it may have run already (`note` says why; a resume found it started but unfinished).
        Asked in every mode: "auto" approved the call once, not twice. A policy rule that
        denies it, an unattended run, or nobody to ask is a no."""
        approval = ApprovalRequest(
            approval_id=f"approval-{next(self._ids)}",
            tool=request.tool_name,
            method=request.method,
            uri=scrub_uri(request.uri),
            risk=self.registry.risk(request),
            args=sanitize(request.args),
            note=note,
        )
        self._report(request, approval, "pending", None)
        if self.policy.decide(request, approval.risk) == "deny":
            approved, by = False, "policy"
        elif self.mode == "autonomous":
            approved, by = False, "autonomous"
        elif self.ask_user is None:
            approved, by = False, "no-terminal"
        else:
            with self._lock:
                approved, by = self.ask_user(approval) != "no", "user"
        self._report(request, approval, "approved" if approved else "refused", by)
        return approved

    def approve_start(self, request: ToolCall, launch: ServerLaunch) -> None:
        """The StartApprover of `mcp://`: returns when the server may start, else raises
        StartRefused. Leaves the same pair of `approval` events as a call, with the launch."""
        with self._lock:
            if launch in self._started:
                return
        approval = ApprovalRequest(
            approval_id=f"approval-{next(self._ids)}",
            tool=request.tool_name,
            method=request.method,
            uri=request.uri,
            risk="destructive",
            args=[],
            launch=launch,
        )
        self._report(request, approval, "pending", None)
        pinned = self.policy.decide_start(launch)
        if pinned == "mismatch":
            approved, by = False, "pin"
        elif pinned is not None:
            approved, by = self._decide_pinned(approval, pinned)
        elif self.mode == "autonomous":
            approved, by = False, "autonomous"
        else:
            approved, by = self._decide(approval, "ask")
        self._report(request, approval, "approved" if approved else "refused", by)
        if not approved:
            raise StartRefused(_refusal(approval, by))
        with self._lock:
            self._started.add(launch)

    def _decide_pinned(self, approval: ApprovalRequest, decision: Decision) -> tuple[bool, str]:
        """A pin is the user's own word on this exact launch, so "run" and "deny" hold in every
        mode; a pin that says "ask" asks whoever can answer (nobody, in autonomous runs)."""
        if decision != "ask":
            return decision == "run", "policy"
        if self.mode == "autonomous":
            return False, "autonomous"
        return self._decide(approval, "ask")

    def _decide(self, approval: ApprovalRequest, decision: Decision) -> tuple[bool, str]:
        if self.mode == "autonomous":
            # Reads the policy lets run never get here. An unattended run may change nothing and
            # has nobody to ask, so a policy that would run or ask is overruled too.
            return False, "policy" if decision == "deny" else "autonomous"
        if decision == "run":
            return True, "policy"
        if decision == "deny":
            return False, "policy"
        if self.mode == "auto":
            return True, "auto"
        if self.mode == "deny":
            return False, "mode"
        # "always" for a server start approves that start, never the calls that follow it.
        key = (
            (approval.tool, approval.method, approval.uri)
            if approval.launch is None
            else ("start", approval.launch.server, approval.uri)
        )
        with self._lock:
            if key in self._always:
                return True, "always"
            if self.ask_user is None:
                return False, "no-terminal"
            answer = self.ask_user(approval)
            if answer == "always":
                self._always.add(key)
        return answer != "no", "user"

    def _report(
        self, request: ToolCall, approval: ApprovalRequest, decision: str, by: str | None
    ) -> None:
        data: dict[str, Any] = {
            "approval_id": approval.approval_id,
            "tool": approval.tool,
            "method": approval.method,
            "uri": approval.uri,
            "risk": approval.risk,
            "decision": decision,
            "mode": self.mode,
        }
        if by is not None:
            data["by"] = by
        if approval.launch is not None:
            data["start"] = approval.launch.to_json()
        request.report("approval", data)

    def close(self) -> None:
        self.registry.close()


def _refusal(approval: ApprovalRequest, by: str) -> str:
    if approval.launch is not None:
        return _start_refusal(approval.launch, by)
    label = approval.label
    if by == "autonomous":
        if approval.risk == "read":
            return f"{label} needs approval, and asking is not allowed in autonomous runs"
        return (
            f"{label} is not allowed in autonomous runs: they may only read, "
            f"and this call's risk is {approval.risk}"
        )
    if by == "no-terminal":
        return (
            f"{label} needs approval and there is no terminal to ask; "
            "run with --approve auto or allow it in an approval policy"
        )
    if by == "mode":
        return f"{label} was refused (--approve deny)"
    if by == "policy":
        return f"{label} was refused by the approval policy"
    return f"{label} was refused by the user"


def _start_refusal(launch: ServerLaunch, by: str) -> str:
    what = f"MCP server '{launch.server}' ({launch.describe()}) was not started"
    if by == "pin":
        return (
            f"{what}: the approval policy pins '{launch.server}' to another launch, and "
            "agentscript.mcp.json does not match it"
        )
    if by == "autonomous":
        return f"{what}: autonomous runs start only servers the approval policy pins"
    if by == "no-terminal":
        return (
            f"{what}: starting it needs approval and there is no terminal to ask; pin it under "
            "`servers:` in an approval policy, or run with --approve auto"
        )
    if by == "mode":
        return f"{what} (--approve deny)"
    if by == "policy":
        return f"{what}: refused by the approval policy"
    return f"{what}: refused by the user"


def _short(problem: BaseException) -> str:
    """A parser's complaint on one line (YAML's span several, RecursionError's is unhelpful)."""
    if isinstance(problem, RecursionError):
        return "it is nested too deeply"
    return " ".join(str(problem).split())[:300]
