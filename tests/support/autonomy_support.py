"""Support for the autonomy tests: a model that reports usage, a clock that ticks, programs.

Everything is deterministic: the model answers from a script and reports the tokens it is told
to, and the clock advances a fixed step per reading, so durations and start times are exact.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentscript.learn.autonomy_ledger import AutonomyRun, Kind, Outcome
from agentscript.runtime.ports import GenerateRequest, GenerateResponse
from agentscript.runtime.usage import Usage

# 2027-01-15 08:00:00 UTC: the tests' "now".
NOW = 1_800_000_000.0

# A program that answers with whatever the model says (free-form generate passes it through).
ECHO = """
import llm M from "openai://m"

main agent Idler {
  model M
  role "reflector"
  description "Reflects on the day."
  main func(input) {
    return generate({ input: "Reflect on the day." })
  }
}
"""

# A program that tries to change a file after asking the model what to write.
WRITER = """
import llm M from "openai://m"
import tool File from "file://workspace"

main agent Scribe {
  model M
  role "scribe"
  description "Keeps notes."
  main func(input) {
    seen = File.read({ path: "notes.md" })
    use seen
    note = generate({ input: "Write the next note." })
    File.write({ path: "notes.md", content: note })
    return note
  }
}
"""

# A program that pursues the desire it is given and says which one it worked on.
PURSUER = """
import llm M from "openai://m"

main agent Lisa {
  model M
  role "curious assistant"
  description "Pursues its own interests."
  main func(input) {
    use input.desire
    answer = generate({ input: "Take one step towards this desire." })
    return { desire: input.desire.slug, step: answer }
  }
}
"""

# A program that reads the recap it is given and answers from it.
REVIEWER = """
import llm M from "openai://m"

main agent Reviewer {
  model M
  role "reviewer"
  description "Reviews recent runs."
  main func(input) {
    use input.recap
    return generate({ input: "What stands out in these runs?" })
  }
}
"""


class MeteredModel:
    """Answers from a script of (value, input tokens, output tokens); the last answer repeats,
    and an answer whose value is an exception raises it. Every request is kept, so a test can
    see what the program was given."""

    def __init__(self, answers: Iterable[tuple[Any, int, int]]) -> None:
        self.answers = list(answers)
        self.requests: list[GenerateRequest] = []

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        self.requests.append(request)
        value, input_tokens, output_tokens = (
            self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        )
        if isinstance(value, BaseException):
            raise value
        return GenerateResponse(value=value, usage=Usage(input_tokens, output_tokens))


class Ticker:
    """A clock that starts at `start` and moves `step` seconds every time it is read."""

    def __init__(self, start: float = NOW, step: float = 0.25) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> float:
        current = self.now
        self.now += self.step
        return current


def write_program(workspace: Path, source: str, name: str = "agent.as") -> Path:
    path = workspace / name
    path.write_text(source, encoding="utf-8")
    return path


def ledger_run(
    kind: Kind = "idle",
    outcome: Outcome = "done",
    *,
    at: float = NOW,
    tokens: tuple[int, int] = (100, 20),
    tool_calls: int = 0,
    note: str = "",
    task: str | None = None,
    duration_ms: int = 1500,
) -> AutonomyRun:
    return AutonomyRun(
        kind=kind,
        started_at=at,
        duration_ms=duration_ms,
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        tool_calls=tool_calls,
        outcome=outcome,
        note=note,
        task=task,
    )
