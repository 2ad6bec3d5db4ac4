"""The `@agentscript.tool(risk=...)` decorator: how a Python function says what calling it risks.

Kept free of imports so that `import agentscript` stays light and a user's module can import
the decorator without loading the runtime. The `python:` tool scheme reads the mark; a function
without one is effectful (risk "effect"): approved before it runs, refused in `parallel for`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

MARK = "__agentscript_tool__"
RISKS = ("read", "effect", "destructive")

Function = TypeVar("Function", bound=Callable[..., Any])


def tool(
    *, risk: Literal["read", "effect", "destructive"] = "effect"
) -> Callable[[Function], Function]:
    """Mark a function's risk: `read` observes only (no approval needed, allowed in
    `parallel for` at run time), `effect` changes something local or undoable, `destructive`
    something that cannot be undone."""
    if risk not in RISKS:
        raise ValueError(f"risk must be one of {', '.join(RISKS)}, got {risk!r}")

    def mark(function: Function) -> Function:
        setattr(function, MARK, {"risk": risk})
        return function

    return mark


def marked_risk(function: object) -> str:
    """The risk `function` was marked with, or "effect" when it carries no mark."""
    mark = getattr(function, MARK, None)
    if isinstance(mark, dict) and mark.get("risk") in RISKS:
        return str(mark["risk"])
    return "effect"
