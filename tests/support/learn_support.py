"""Support for the learning tests: a program that produces every kind of event, a fixed clock,
and runs journaled through a JournalSink the way the composition root wires one.

Runs use the scripted mock model and the real host tools in a temporary workspace (writes
approved with approve="auto"), so effects and approvals reach the journal as in real use.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import agentscript
from agentscript.learn.journal import Journal
from agentscript.runtime.errors import AgentScriptError

# A run with nested agent calls, a parallel for, memory, reads and writes, approvals and a
# repaired generate. Lead -> Worker.write -> Checker.check is three levels of agent calls.
PROGRAM = """import llm Model from "openai://gpt-4.1-mini"
import tool File from "file://workspace"
import tool Search from "sh://grep"
import memory Notes from "file://notes.jsonl"

main agent Lead {
  model Model
  role "lead"
  description "Plans and delegates."

  main func(input { topic string }) {
    use input.topic
    Notes.add({ kind: "note", text: input.topic })
    past = Notes.query({ kind: "note" })
    for name in ["a", "b"] < 2 {
      written = Worker.write(name)
    }
    ideas = parallel for angle in ["x", "y"] max 2 {
      use angle
      idea = generate({ input: "idea" }) -> { text string }
      idea.text
    }
    found = Search.run({ path: ".", pattern: "hello", max: 5 })
    plan = generate({ input: "plan", attempts: 2 }) -> { steps list[string] }
    return { steps: plan.steps, found: found.matches.length, ideas: ideas, past: past.length }
  }
}

agent Worker {
  model Model
  role "writer"
  description "Writes one file."

  func write(name) {
    use name
    draft = generate({ input: "draft" }) -> { text string }
    result = File.write({ path: name + ".md", content: draft.text })
    return Checker.check(result)
  }

  main func() { return 1 }
}

agent Checker {
  model Model
  role "checker"
  description "Checks a result."

  func check(result) { return { ok: result.ok } }

  main func() { return 1 }
}
"""

# Answers for PROGRAM: both parallel iterations get the same idea (they race for the answers);
# the plan's first answer is not JSON, so it is repaired once.
RESPONSES: dict[str, Any] = {
    "Worker.write": [{"text": "hello from a"}, {"text": "hello from b"}],
    "Lead": [{"text": "idea"}, {"text": "idea"}, "not json", {"steps": ["ship"]}],
}
# The same program failing: the plan is never valid JSON, so the final generate fails.
FAILING_RESPONSES: dict[str, Any] = {
    "Worker.write": [{"text": "hello from a"}, {"text": "hello from b"}],
    "Lead": [{"text": "idea"}, {"text": "idea"}, "not json", "still not json"],
}


class FixedClock:
    """A clock that stands still until a test moves it, so times in the journal are known."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass(slots=True)
class JournaledRun:
    run_id: str
    value: Any
    error: AgentScriptError | None
    trace: list[dict[str, Any]]
    problems: list[str]


def journaled_run(
    journal: Journal,
    workspace: Path,
    source: str = PROGRAM,
    input: Any = None,
    responses: Any = None,
    name: str = "program.as",
    **config: Any,
) -> JournaledRun:
    """Run `source` from `workspace` with a JournalSink attached, started and finished the way
    the composition root will do it, then wait until the run is in the task graph."""
    path = workspace / name
    path.write_text(source, encoding="utf-8")
    script = workspace / f"{name}.responses.json"
    script.write_text(json.dumps(RESPONSES if responses is None else responses), encoding="utf-8")
    program = agentscript.load_source(source, path=path)
    given = {"topic": "tides"} if input is None else input
    sink = journal.sink()
    sink.start_run(str(path), given, workspace=workspace)
    settings: dict[str, Any] = {"approve": "auto", "workspace": workspace, **config}
    try:
        result = agentscript.run(
            program,
            given,
            agentscript.RunConfig(model="mock", responses=script, trace_sinks=[sink], **settings),
        )
    except AgentScriptError as error:
        sink.finish_run("error", error=error, usage=error.spent)
        return JournaledRun(sink.run_id, None, error, error.trace or [], sink.wait())
    sink.finish_run("ok", value=result.value, usage=result.usage)
    return JournaledRun(sink.run_id, result.value, None, result.trace, sink.wait())


def flatten(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every event of a nested trace, parents before their children (iterations included)."""
    events: list[dict[str, Any]] = []
    for event in trace:
        events.append(event)
        data = event["data"]
        if event["kind"] == "agent":
            events += flatten(data.get("trace") or [])
        for iteration in data.get("iterations") or [] if event["kind"] == "parallel_for" else []:
            events += flatten(iteration.get("trace") or [])
    return events


def canonical(value: Any) -> str:
    """JSON text that tells apart what `==` does not (key order, 1 and 1.0, True and 1)."""
    return json.dumps(value, ensure_ascii=False)
