"""AgentScript: a small language for LLM agents whose prompt context is explicit.

The library is the product; the `agentscript` command is one client of it. See `api` for the
calls below and README.md for a tour.
"""

from agentscript.api import check, load, load_source, run
from agentscript.composition import RunConfig
from agentscript.lang.errors import Diagnostic, ParseError, SemanticError
from agentscript.runtime.errors import AgentScriptError, ExecutionError, LoadError
from agentscript.runtime.interpreter import RunResult
from agentscript.runtime.trace import TraceEvent, TraceSink, format_trace

__version__ = "0.1.0"

__all__ = [
    "AgentScriptError",
    "Diagnostic",
    "ExecutionError",
    "LoadError",
    "ParseError",
    "RunConfig",
    "RunResult",
    "SemanticError",
    "TraceEvent",
    "TraceSink",
    "__version__",
    "check",
    "format_trace",
    "load",
    "load_source",
    "run",
]
