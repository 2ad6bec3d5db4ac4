"""Errors raised while running a program. Every one says what went wrong and, when known, where.

`str(error)` is the 0.1.0 text `<message> at <line>:<column>`; `located()` adds the file for the
CLI. All runtime errors derive from AgentScriptError so callers can catch ours and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentscript.lang.errors import Position
from agentscript.runtime.usage import Usage


class AgentScriptError(Exception):
    """Base of every error the runtime raises on purpose.

    When a run fails, `trace` holds the trace up to the failure so it can still be written, and
    `spent` what the run had spent.
    """

    trace: list[dict[str, Any]] | None = None
    # What the run had spent when it failed (model calls, tokens, seconds).
    spent: dict[str, float | int] | None = None
    # The failed run's journal record (a RunJournal), when the run was journaled.
    journal: Any = None

    def redact(self, scrub: Callable[[str], str]) -> None:
        """Rewrite the message with `scrub` (the run's redaction), so no secret is shown."""
        self.args = tuple(scrub(arg) if isinstance(arg, str) else arg for arg in self.args)


class ExecutionError(AgentScriptError):
    """A failure while evaluating a program (the original's RuntimeError)."""

    def __init__(
        self, message: str, position: Position | None = None, path: str | None = None
    ) -> None:
        self.bare_message = message
        self.position = position
        self.path = path
        super().__init__(self._text())

    def _text(self) -> str:
        if self.position is None:
            return self.bare_message
        return f"{self.bare_message} at {self.position.line}:{self.position.column}"

    def redact(self, scrub: Callable[[str], str]) -> None:
        self.bare_message = scrub(self.bare_message)
        self.args = (self._text(),)

    def at(self, position: Position | None, path: str | None) -> ExecutionError:
        """Give the error a location if it has none yet (the innermost location wins)."""
        if self.position is None and position is not None:
            self.position = position
            self.path = path
            self.args = (self._text(),)
        return self

    def located(self) -> str:
        """The message with `file:line:column` when the file is known (CLI form)."""
        if self.position is None or self.path is None:
            return str(self)
        return f"{self.bare_message} at {self.path}:{self.position.line}:{self.position.column}"


class ReplayMismatch(ExecutionError):
    """A replayed run asked for something its recording does not hold: the message names the
    call, the `detail` lines say what changed; both follow the location."""

    def __init__(self, message: str, detail: list[str]) -> None:
        self.detail = detail
        super().__init__(message)

    def _text(self) -> str:
        return "\n".join([super()._text(), *self.detail])

    def located(self) -> str:
        return "\n".join([super().located().split("\n", 1)[0], *self.detail])


class ModelOutputError(ExecutionError):
    """The model answered, but not with usable JSON. The only provider error that is repaired.

    `raw_text` is what the model said and `usage` what the call cost, so both are accounted;
    `details` what the provider said besides (`finish_reason`) for the trace. `cut_off`: the
    answer stopped at the output limit, so asking again with the same limit cannot succeed and
    the generate does not repair it.
    """

    def __init__(
        self,
        message: str,
        raw_text: str | None = None,
        usage: Usage | None = None,
        details: dict[str, Any] | None = None,
        cut_off: bool = False,
    ) -> None:
        super().__init__(message)
        self.raw_text = raw_text
        self.usage = usage
        self.details: dict[str, Any] = dict(details or {})
        self.cut_off = cut_off


class LoadError(AgentScriptError):
    """A program or one of its imports could not be read or resolved."""


class InputError(AgentScriptError):
    """The entry input is not acceptable (not an object, unknown entry, bad field)."""
