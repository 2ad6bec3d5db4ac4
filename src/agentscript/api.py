"""The Python API: load, check and run AgentScript programs. The CLI is built on the same calls.

import agentscript
program = agentscript.load("examples/hello.as")
for problem in agentscript.check(program): print(problem.format())
result = agentscript.run(program, {"name": "Ada"}, agentscript.RunConfig(model="mock"))
print(result.value, result.trace)

Everything here is defined in `agentscript.app` (the one composition root) and re-exported.
"""

from agentscript.app.configuration import ModelChoice, RunConfig
from agentscript.app.programs import check, load, load_source, models, tools
from agentscript.app.resume import resume
from agentscript.app.run import run

__all__ = [
    "ModelChoice",
    "RunConfig",
    "check",
    "load",
    "load_source",
    "models",
    "resume",
    "run",
    "tools",
]
