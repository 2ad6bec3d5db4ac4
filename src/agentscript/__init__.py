"""AgentScript: a small language for LLM agents whose prompt context is explicit.

The library is the product; the `agentscript` command is one client of it. See `api` for the
calls below and README.md for a tour. Names are imported on first use, so commands that only
check a program do not pay for the runtime's imports.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name → the module that defines it.
_EXPORTS = {
    "check": "agentscript.app.programs",
    "load": "agentscript.app.programs",
    "load_source": "agentscript.app.programs",
    "run": "agentscript.app.run",
    "arun": "agentscript.app.async_run",
    "stream": "agentscript.app.async_run",
    "RunStream": "agentscript.app.async_run",
    "StepStarted": "agentscript.app.async_run",
    "StepDone": "agentscript.app.async_run",
    "TextDelta": "agentscript.app.async_run",
    "PartialValue": "agentscript.app.async_run",
    "Finished": "agentscript.app.async_run",
    "RunCancelled": "agentscript.app.async_run",
    "resume": "agentscript.app.resume",
    "evaluate": "agentscript.app.evals.runner",
    "EvalConfig": "agentscript.app.evals.runner",
    "EvalReport": "agentscript.app.evals.report_data",
    "RunConfig": "agentscript.app.configuration",
    "Diagnostic": "agentscript.lang.errors",
    "ParseError": "agentscript.lang.errors",
    "SemanticError": "agentscript.lang.errors",
    "AgentScriptError": "agentscript.runtime.errors",
    "ExecutionError": "agentscript.runtime.errors",
    "LoadError": "agentscript.runtime.errors",
    "RunResult": "agentscript.runtime.interpreter",
    "TraceEvent": "agentscript.runtime.trace",
    "TraceSink": "agentscript.runtime.trace",
    "format_trace": "agentscript.runtime.trace",
    "tool": "agentscript.providers.tools.python_marks",
}

__all__ = [
    "AgentScriptError",
    "Diagnostic",
    "EvalConfig",
    "EvalReport",
    "ExecutionError",
    "Finished",
    "LoadError",
    "ParseError",
    "PartialValue",
    "RunCancelled",
    "RunConfig",
    "RunResult",
    "RunStream",
    "SemanticError",
    "StepDone",
    "StepStarted",
    "TextDelta",
    "TraceEvent",
    "TraceSink",
    "__version__",
    "arun",
    "check",
    "evaluate",
    "format_trace",
    "load",
    "load_source",
    "resume",
    "run",
    "stream",
    "tool",
]

if TYPE_CHECKING:
    from agentscript.app.async_run import (
        Finished,
        PartialValue,
        RunCancelled,
        RunStream,
        StepDone,
        StepStarted,
        TextDelta,
        arun,
        stream,
    )
    from agentscript.app.configuration import RunConfig
    from agentscript.app.evals.report_data import EvalReport
    from agentscript.app.evals.runner import EvalConfig, evaluate
    from agentscript.app.programs import check, load, load_source
    from agentscript.app.resume import resume
    from agentscript.app.run import run
    from agentscript.lang.errors import Diagnostic, ParseError, SemanticError
    from agentscript.providers.tools.python_marks import tool
    from agentscript.runtime.errors import AgentScriptError, ExecutionError, LoadError
    from agentscript.runtime.interpreter import RunResult
    from agentscript.runtime.trace import TraceEvent, TraceSink, format_trace


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentscript' has no attribute '{name}'")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
