"""`host://architect`: the AgentSpec steps as a tool, for programs that design programs.

    import tool Architect from "host://architect"

- `validateSpec({spec})` → `{ok, diagnostics}`;
- `compileSpec({spec})` → `{ok: true, source}` or `{ok: false, code: "validation_required",
  diagnostics}`;
- `analyzeSource({source})` → `{ok, diagnostics, summary}`, or `{ok: false, code:
  "parse_error", message, diagnostics: []}`.

As in the original, a spec that is not an object answers `{ok: false, code: "invalid_input"}`
and a URI with a path `{ok: false, code: "invalid_uri"}`, so the calling program can react; a
call without its one object argument, or an unknown method, is a mistake in the program and
stops the run. Every method only computes: nothing is read or written, so each is a read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from agentscript.app.architect.analyze import analyze_source
from agentscript.app.architect.compile import compile_spec
from agentscript.app.architect.spec import as_draft
from agentscript.app.architect.validate import validate_spec
from agentscript.providers.tools.base import Risk, object_argument, required_string
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall

INVALID_INPUT = {"ok": False, "code": "invalid_input", "message": "spec must be a JSON object"}


class ArchitectTool:
    def risk(self, request: ToolCall) -> Risk:
        return "read"

    def call(self, request: ToolCall) -> Any:
        if urlsplit(request.uri).path not in ("", "/"):
            return {
                "ok": False,
                "code": "invalid_uri",
                "message": "host://architect does not accept a path",
            }
        methods: dict[str, Callable[[dict[str, Any], str], Any]] = {
            "validateSpec": _on_spec(validate_spec),
            "compileSpec": _on_spec(compile_spec),
            "analyzeSource": _analyze,
        }
        method = methods.get(request.method)
        if method is None:
            raise ExecutionError(
                f"Unknown Architect method '{request.method}'. Supported: " + ", ".join(methods)
            )
        label = f"Architect.{request.method}"
        return method(object_argument(request, label), label)


def _on_spec(
    step: Callable[[dict[str, Any]], dict[str, Any]],
) -> Callable[[dict[str, Any], str], Any]:
    def answer(arguments: dict[str, Any], label: str) -> Any:
        draft = as_draft(arguments.get("spec"))
        return dict(INVALID_INPUT) if draft is None else step(draft)

    return answer


def _analyze(arguments: dict[str, Any], label: str) -> Any:
    analysis = analyze_source(required_string(arguments, "source", label))
    parse_errors = [item for item in analysis["diagnostics"] if item["code"] == "parse_error"]
    if parse_errors:
        return {
            "ok": False,
            "code": "parse_error",
            "message": parse_errors[0]["message"],
            "diagnostics": [],
        }
    return analysis
