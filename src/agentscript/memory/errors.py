"""The one error type of the memory service: a stable code, a message, and the field at fault.

Every refusal the service makes on purpose is a MemoryServiceError, so a CLI, an MCP server or a
program can show the message as is and branch on the code. It never wraps programming errors.
"""

from __future__ import annotations

from typing import Any

from agentscript.runtime.errors import AgentScriptError

# The codes, so callers can match on them without parsing messages.
INVALID_ARGUMENT = "invalid_argument"
TOO_LARGE = "too_large"
NOT_FOUND = "not_found"
DISABLED_KIND = "disabled_kind"
SCOPE_FULL = "scope_full"
DIGEST_FEEDBACK = "digest_feedback"
CONFLICT = "conflict"
INVALID_CONFIG = "invalid_config"
STORE_FAILURE = "store_failure"
CONTAINS_SECRET = "contains_secret"


class MemoryServiceError(AgentScriptError):
    """A refused or failed memory operation.

    `code` is one of the constants above; `field` names the argument or configuration field at
    fault when there is one (`body`, `digest.max_bytes`), so an MCP server can report it.
    """

    def __init__(self, code: str, message: str, field: str | None = None) -> None:
        self.code = code
        self.message = message
        self.field = field
        super().__init__(message)

    def to_dict(self) -> dict[str, Any]:
        """The error as a JSON-able value, the shape tool adapters return to a model."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
        return error
