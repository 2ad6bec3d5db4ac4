"""Asking the person at the terminal whether a tool call may run.

Used only when stdin and stderr are terminals; otherwise there is nobody to ask, and the
approval gate refuses calls that need a yes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from agentscript.providers.tools.approvals import Answer, ApprovalRequest
from agentscript.runtime.jsjson import stringify
from agentscript.runtime.trace import short

_ANSWERS: dict[str, Answer] = {
    "y": "yes",
    "yes": "yes",
    "n": "no",
    "no": "no",
    "": "no",
    "a": "always",
    "always": "always",
}


class TerminalApprover:
    """Shows the call (tool, URI, risk, arguments), or the command an MCP server start would
    run, and reads y / n / always; anything unclear is asked again, and end of input means no."""

    def __init__(self, ask: Callable[[str], str] = input) -> None:
        self._ask = ask

    def __call__(self, request: ApprovalRequest) -> Answer:
        if request.launch is not None:
            sys.stderr.write(
                f"\nMCP server '{request.launch.server}' wants to start for "
                f"{request.tool}.{request.method} ({request.uri}):\n"
                f"  {request.launch.describe()}\n"
            )
        else:
            sys.stderr.write(
                f"\n{request.label} ({request.uri}) wants to run; risk: {request.risk}\n"
                f"  arguments: {short(stringify(request.args))}\n"
            )
        if request.note is not None:
            sys.stderr.write(f"  note: {request.note}\n")
        while True:
            try:
                reply = self._ask("Allow? [y]es / [n]o / [a]lways for this tool: ")
            except EOFError:
                return "no"
            answer = _ANSWERS.get(reply.strip().lower())
            if answer is not None:
                return answer


def terminal_approver() -> TerminalApprover | None:
    """An approver when a person can see and answer the question, else None."""
    return TerminalApprover() if sys.stdin.isatty() and sys.stderr.isatty() else None
