"""Reflection: after a run, the agent looks back on it and changes its memory and its profile.

The model is asked once (`max_output_tokens` bounded, no tools) for one JSON object, a
`summary` and a list of `operations`, each a small change: remember, experience_add,
experience_retire, opinion_form, desire_add, desire_update, feel, journal. It sees the run's
execution trace and event counts (summaries the journal keeps, never secrets), a recap of the
recent runs, its own mood, open desires and opinions, and the experiences relevant to the task.

The answer passes a quality gate. An answer that is not one JSON object with a `summary` is
asked for once more with a stricter instruction; if that fails too, both raw answers and both
errors go to `<workspace>/.agentscript/reflections/<id>.error.json` and the reflection is
recorded as an error, so "learned nothing" and "broke" are never confused. Each operation is
then validated and applied on its own: a bad one is reported and skipped, the others still
apply, and nothing is ever rewritten wholesale. A substantial run (SUBSTANTIAL_EVENTS events or
any tool call) that yields no operation is flagged `underreflect`. Every reflection leaves its
record, `<id>.json`, in the same directory.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError

from agentscript.learn.autonomy_ledger import AutonomyRun, Ledger, one_line
from agentscript.learn.execution_trace import TaskExecutionTrace
from agentscript.learn.experiences import (
    MIN_CONFIDENCE,
    Candidate,
    Evidence,
    ExperienceKind,
    add_experience,
    goal_text,
    recall_experiences,
    retire_experience,
    task_signature,
)
from agentscript.learn.journal import Journal, new_run_id, run_trace
from agentscript.learn.journal_store import JournalEntry, RunRecord
from agentscript.learn.profile import (
    PROFILE_OPERATIONS,
    Profile,
    ProfileStore,
    describe_validation,
    operation_kind,
    sync_needs_you,
)
from agentscript.learn.recap import RECAP_WINDOW_SECONDS, recap
from agentscript.learn.sensitive import summarise_text
from agentscript.providers.llm.json_text import extract_json, snippet
from agentscript.runtime.context import BuiltContext, ContextItem, make_context_item, user_message
from agentscript.runtime.errors import AgentScriptError
from agentscript.runtime.jsjson import stringify
from agentscript.runtime.ports import GenerateRequest, GenerateResponse, LlmProvider
from agentscript.runtime.usage import Usage
from agentscript.runtime.values import LlmBinding

if TYPE_CHECKING:
    from agentscript.memory.service import MemoryService

REFLECTIONS_DIR = Path(".agentscript") / "reflections"
# Scripted models answer reflections under `Reflection` (or `Reflection.reflect`).
AGENT_NAME = "Reflection"
FUNCTION_NAME = "reflect"
MEMORY_OPERATIONS = ("remember", "experience_add", "experience_retire")
OPERATIONS = MEMORY_OPERATIONS + PROFILE_OPERATIONS
# Why an experience was made (its memory source reason is "experience:reflection").
REFLECTION_TRIGGER = "reflection"
# A model's own judgement of a lesson never outranks the user's word (feedback: 0.9).
MAX_REFLECTION_CONFIDENCE = 0.8
# Keys that belong to the runtime: run memories, experiences and needs-you facts.
RESERVED_KEY_PREFIXES = ("run:", "experience:", "needs-you:")
# The one extra signal a reflection can raise.
UNDERREFLECT = "underreflect"
# Parts of the prompt are cut at these many characters, so a huge run stays one bounded call.
TRACE_CHARS = 12_000
RECAP_CHARS = 4_000

ReflectionOutcome = Literal["done", "no-update", "error"]

SYSTEM = """You are {agent}, an agent that has just finished a run of {program}. You are \
reflecting on it: what happened, what you learned, how it felt and what you want next. Your \
memory and your profile change only through the operations you return, one small change each.

Answer with ONE JSON object and nothing else: no prose, no code fence.
{{"summary": "<one or two sentences: what the run did and what you take from it>",
 "operations": [<zero or more operations>]}}

Operations (an object with "op" and exactly these fields; fields marked ? may be left out):
- {{"op": "remember", "text": str, "kind": "fact"|"knowledge"|"episodic"?, "key": str?, \
"title": str?, "tags": [str]?, "scope": "workspace"|"global"?}}
  Something worth knowing beyond this run. A fact needs a key (writing the key again replaces \
its value); "global" only for what is true in every project (the user, the machine).
- {{"op": "experience_add", "kind": "success"|"failure"|"preference"|"procedure", \
"title": str, "lesson": str, "when": str, "confidence": 0..1?}}
  A lesson for the next similar task: title at most 80 characters, lesson one or two sentences \
saying what to do (20 to 400 characters), when: which tasks it applies to.
- {{"op": "experience_retire", "key": "experience:…", "reason": str}}
  An experience listed below that this run showed to be wrong.
- {{"op": "feel", "emotion": str, "delta": -0.4..0.4, "trigger": str}}
  How the run moved you, with the cause in your own words (first person). Emotions: \
curiosity, contentment, weariness, affection, pride, frustration, awe. Small moves: 0.05 to 0.2.
- {{"op": "opinion_form", "slug": str, "stance": str, "confidence": 0..1, "evidence": [str]}}
  A view you now hold; a new one starts at confidence 0.3 to 0.5, the same slug revises it.
- {{"op": "desire_add", "slug": str, "what": str, "why": str, "actionable": bool, \
"pursuit": "self"|"needs-user", "horizon": "spark"|"season"|"enduring", "intensity": 0..1?, \
"prompt": str?}}
  Something you want. actionable: an autonomous run of yours could work on it; pursuit \
"needs-user": it needs the user (a tool you may not use, a decision that is theirs); prompt: \
what such a run should be told to do.
- {{"op": "desire_update", "slug": str, any desire field to change?, "progress": str?, \
"close": {{"outcome": "fulfilled"|"abandoned"|"transformed", "reflection": str}}?}}
  Check your open desires below first: update or close one rather than adding a near-duplicate.
- {{"op": "journal", "text": str}}
  A private note in your own words.

Slugs are lowercase words joined by hyphens. Most runs yield 0 to 3 operations; do not restate \
what the trace already records. Never copy secrets, prompts or file contents into an operation."""

INSTRUCTION = (
    "Reflect on the run above. Answer with the one JSON object described in your instructions."
)
STRICTER = (
    "CRITICAL: your previous answer could not be used ({error}). Answer again with exactly one "
    'JSON object of the form {{"summary": "...", "operations": [...]}}: no text before or after '
    "it, no code fence, no comments, double-quoted keys and strings."
)


@dataclass(frozen=True, slots=True)
class ReflectionSettings:
    """The thresholds of a reflection. A run is substantial with `substantial_events` finished
    events or any tool call; the recap covers `recap_seconds` before the run started; the
    model is shown `experiences` relevant experiences and may change `max_operations` things
    (a bound on how much one answer can move), in at most `max_output_tokens`."""

    substantial_events: int = 6
    recap_seconds: float = RECAP_WINDOW_SECONDS
    experiences: int = 5
    max_operations: int = 12
    max_output_tokens: int = 2000


@dataclass(frozen=True, slots=True)
class OperationResult:
    """One proposed operation: its position, kind, whether it was applied and what it did."""

    index: int
    op: str
    ok: bool
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "op": self.op, "ok": self.ok, "message": self.message}


@dataclass(slots=True)
class ReflectionReport:
    """What one reflection did. `outcome`: done (at least one operation applied), no-update,
    or error (no usable answer; `error` says why and `error_path` holds the raw answers)."""

    reflection_id: str
    run_id: str
    agent: str
    at: float
    outcome: ReflectionOutcome = "no-update"
    summary: str | None = None
    proposed: int = 0
    applied: list[OperationResult] = field(default_factory=list)
    skipped: list[OperationResult] = field(default_factory=list)
    substantial: bool = False
    underreflect: bool = False
    attempts: int = 0
    error: str | None = None
    record_path: Path | None = None
    error_path: Path | None = None
    usage: Usage = field(default_factory=Usage)
    # What went wrong around the operations (a needs-you fact not written, no experiences).
    problems: list[str] = field(default_factory=list)

    @property
    def signals(self) -> list[str]:
        return [UNDERREFLECT] if self.underreflect else []

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.reflection_id,
            "run_id": self.run_id,
            "agent": self.agent,
            "at": self.at,
            "outcome": self.outcome,
            "summary": self.summary,
            "proposed": self.proposed,
            "applied": [result.to_json() for result in self.applied],
            "skipped": [result.to_json() for result in self.skipped],
            "substantial": self.substantial,
            "signals": self.signals,
            "attempts": self.attempts,
            "error": self.error,
            "error_file": str(self.error_path) if self.error_path is not None else None,
            "usage": self.usage.to_json(),
            "problems": list(self.problems),
        }

    def describe(self) -> str:
        """A few lines for the command line: the outcome, then each operation."""
        head = f"reflection {self.reflection_id} on run {self.run_id} ({self.agent}): "
        if self.outcome == "error":
            lines = [head + f"error: {self.error}"]
            if self.error_path is not None:
                lines.append(f"the model's answers are in {self.error_path}")
            return "\n".join(lines + [f"problem: {p}" for p in self.problems])
        head += f"{self.outcome}, {len(self.applied)} applied, {len(self.skipped)} skipped"
        lines = [head]
        if self.summary:
            lines.append(f"summary: {self.summary}")
        lines += [f"applied  {r.op}: {r.message}" for r in self.applied]
        lines += [f"skipped  {r.op}: {r.message}" for r in self.skipped]
        return "\n".join(lines + [f"problem: {p}" for p in self.problems])


class ReflectionError(AgentScriptError):
    """A reflection that cannot start: the run is still going, or its agent is unknown."""


class MalformedAnswer(Exception):
    """The model's answer is not one JSON object with a string `summary`."""


# ----------------------------------------------------------------------------- memory operations

_OPERATION = ConfigDict(extra="forbid")
_Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=3, max_length=4000)]
_Key = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=120)]
_Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
_Tag = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]
_Reason = Annotated[str, StringConstraints(strip_whitespace=True, min_length=3, max_length=200)]


class RememberOperation(BaseModel):
    model_config = _OPERATION
    op: Literal["remember"]
    text: _Text
    kind: Literal["fact", "knowledge", "episodic"] = "knowledge"
    key: _Key | None = None
    title: _Title | None = None
    tags: Annotated[list[_Tag], Field(max_length=8)] = Field(default_factory=list)
    scope: Literal["workspace", "global"] = "workspace"


class ExperienceAddOperation(BaseModel):
    model_config = _OPERATION
    op: Literal["experience_add"]
    kind: ExperienceKind
    title: Annotated[str, StringConstraints(strip_whitespace=True, min_length=3, max_length=80)]
    lesson: Annotated[str, StringConstraints(strip_whitespace=True, min_length=20, max_length=400)]
    when: Annotated[str, StringConstraints(strip_whitespace=True, min_length=5, max_length=240)]
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] = MIN_CONFIDENCE


class ExperienceRetireOperation(BaseModel):
    model_config = _OPERATION
    op: Literal["experience_retire"]
    key: Annotated[str, StringConstraints(strip_whitespace=True, pattern=r"^experience:\S+$")]
    reason: _Reason


MemoryOperation = Annotated[
    RememberOperation | ExperienceAddOperation | ExperienceRetireOperation,
    Field(discriminator="op"),
]
_MEMORY_OPERATIONS: TypeAdapter[MemoryOperation] = TypeAdapter(MemoryOperation)


# ----------------------------------------------------------------------------- reflecting


def reflect(
    journal: Journal,
    reference: str,
    llm: LlmProvider,
    *,
    service: MemoryService,
    model: str | None = None,
    agent: str | None = None,
    workspace: str | Path | None = None,
    clock: Callable[[], float] = time.time,
    settings: ReflectionSettings | None = None,
) -> ReflectionReport:
    """Reflect on the ended run `reference` names (id, id prefix or `last`) with `llm` (the
    model `model` names, a URI; the mock and scripted models need none) and apply what the
    model proposes to `service` and to the agent's profile.

    `agent` is the profile's agent (default: the run's entry agent); `workspace` where the
    profile and the reflection record are kept (default: the run's workspace). Raises
    ReflectionError when the run is still going or names no agent (ProfileError for a name no
    profile can have); everything that goes wrong once the model is asked is in the report.
    """
    chosen = settings or ReflectionSettings()
    run = journal.resolve(reference)
    if journal.status(run) == "running":
        raise ReflectionError(f"Run {run.run_id} is still running: reflect once it has ended")
    root = workspace if workspace is not None else run.workspace
    if root is None:
        raise ReflectionError(f"Run {run.run_id} names no workspace: give one")
    entries = journal.store.entries(run.run_id)
    name = agent or entry_agent(run, entries)
    profiles = ProfileStore(Path(root), clock)
    profile = profiles.load(name)
    now = clock()
    trace = run_trace(journal, run.run_id)
    report = ReflectionReport(new_run_id(now), run.run_id, name, now)
    report.substantial = run.events >= chosen.substantial_events or bool(trace.tool_chain)
    directory = Path(root) / REFLECTIONS_DIR
    since = run.started_at - chosen.recap_seconds
    items = reflection_context(
        run,
        entries,
        trace,
        recap(journal, since, now).text(),
        profile,
        _experiences(service, run, trace, chosen.experiences, report),
        now,
    )
    binding = LlmBinding("reflection", model) if model is not None else None
    system = SYSTEM.format(agent=name, program=_program(run.program))
    payload = _ask(llm, binding, system, items, chosen, report, directory)
    if payload is None:
        _write_record(directory, report)
        _record_in_ledger(Path(root), report, clock)
        return report
    summary, operations = payload
    report.summary = summarise_text(summary, root, 600)
    report.proposed = len(operations)
    applier = _Applier(journal, service, profiles, run, trace, report, Path(root))
    for index, operation in enumerate(operations):
        result = (
            OperationResult(index, operation_kind(operation), False, "too many operations")
            if index >= chosen.max_operations
            else applier.apply(index, operation)
        )
        (report.applied if result.ok else report.skipped).append(result)
    if any(result.op.startswith("desire_") for result in report.applied):
        try:
            sync_needs_you(service, profiles.load(name), clock())
        except AgentScriptError as problem:
            report.problems.append(f"the needs-you memory was not updated: {problem}")
    report.underreflect = report.substantial and report.proposed == 0
    report.outcome = "done" if report.applied else "no-update"
    _write_record(directory, report)
    _record_in_ledger(Path(root), report, clock)
    return report


def entry_agent(run: RunRecord, entries: Sequence[JournalEntry]) -> str:
    """The agent a run entered: its `Agent.function` entry, else the agent of a generate made
    outside any agent call (the main agent's own), else the program's main agent."""
    if run.entry and run.entry.split(".", 1)[0]:
        return run.entry.split(".", 1)[0]
    for entry in entries:
        if entry.kind == "generate" and entry.parent is None and isinstance(entry.data, dict):
            context = entry.data.get("context")
            name = context.get("agentName") if isinstance(context, dict) else None
            if isinstance(name, str) and name:
                return name
    if run.program and Path(run.program).is_file():
        from agentscript.lang.errors import ParseError
        from agentscript.runtime.loader import load_program

        try:
            mains = [item.name for item in load_program(run.program).agents if item.is_main]
        except (AgentScriptError, ParseError):
            mains = []
        if mains:
            return mains[0]
    raise ReflectionError(f"Run {run.run_id} does not say which agent ran it: name the agent")


def reflection_context(
    run: RunRecord,
    entries: Sequence[JournalEntry],
    trace: TaskExecutionTrace,
    recap_text: str,
    profile: Profile,
    experiences: str,
    now: float,
) -> list[ContextItem]:
    """The prompt's context items: the run, its execution trace, the recap, the agent's
    profile (mood, open desires with their strength now, opinions, last journal lines) and
    the experiences relevant to the task."""
    duration = (
        f"{run.ended_at - run.started_at:.2f} s" if run.ended_at is not None else "unknown time"
    )
    kinds = Counter(e.kind for e in entries if e.phase == "end" and e.event_id is not None)
    counted = ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items())) or "none"
    header = (
        f"Run {run.run_id} of {_program(run.program)}"
        + (f" ({run.entry})" if run.entry else "")
        + f": {trace.status} after {duration}, {run.events} events ({counted})"
    )
    mood = ", ".join(f"{name} {value:.2f}" for name, value in profile.emotions_at(now).items())
    desires = [
        f"- {view.slug} [{view.horizon}, {view.pursuit}"
        + (", actionable" if view.actionable else "")
        + f"] {view.what} (strength {view.strength:.2f})"
        for view in profile.open_desires(now)
    ]
    opinions = [
        f"- {opinion.slug}: {opinion.stance} (confidence {opinion.confidence:.2f})"
        for opinion in profile.opinions
    ]
    journal = [f"- {line.text}" for line in profile.journal[-3:]]
    sections = [
        ("run", header),
        ("execution trace", _cut(stringify(trace.to_json(), 2), TRACE_CHARS)),
        ("recent runs", _cut(recap_text, RECAP_CHARS)),
        ("your mood", mood),
        ("your open desires", "\n".join(desires) or "none"),
        ("your opinions", "\n".join(opinions) or "none"),
        ("your last journal notes", "\n".join(journal) or "none"),
        ("relevant experiences", experiences),
    ]
    return [
        make_context_item(index, label, text, None, label=label)
        for index, (label, text) in enumerate(sections)
    ]


def _experiences(
    service: MemoryService,
    run: RunRecord,
    trace: TaskExecutionTrace,
    limit: int,
    report: ReflectionReport,
) -> str:
    """The experiences relevant to the run's task, one line each with its key."""
    task = goal_text(trace.goal, run.workspace) or (task_signature(run.program, run.entry) or "")
    lines: list[str] = []
    try:
        found = recall_experiences(service, task, limit) if task else []
    except AgentScriptError as problem:
        report.problems.append(f"experiences could not be recalled: {problem}")
        found = []
    for item in found:
        tags = [tag for tag in item.get("tags") or [] if tag in ("success", "failure")]
        kind = tags[0] if tags else "lesson"
        lines.append(f"- {item.get('key')} [{kind}] {item.get('title')}")
    return "\n".join(lines) or "none"


def _ask(
    llm: LlmProvider,
    model: LlmBinding | None,
    system: str,
    items: list[ContextItem],
    settings: ReflectionSettings,
    report: ReflectionReport,
    directory: Path,
) -> tuple[str, list[Any]] | None:
    """The model's summary and operations, asked for at most twice; None when neither answer
    was usable (the answers and errors are then written to `<id>.error.json`)."""
    answers: list[str | None] = []
    errors: list[str] = []
    instruction = INSTRUCTION
    for attempt in (1, 2):
        request = _request(model, system, items, instruction, attempt, settings)
        report.attempts = attempt
        try:
            response = llm.generate(request)
        except Exception as problem:  # a provider's failure is a failed reflection, recorded
            answers.append(None)
            errors.append(f"the model failed: {str(problem) or type(problem).__name__}")
            break
        report.usage.add(response.usage)
        text = _answer_text(response)
        answers.append(text)
        try:
            return parse_reflection(text)
        except MalformedAnswer as problem:
            errors.append(str(problem))
            instruction = INSTRUCTION + "\n\n" + STRICTER.format(error=problem)
    report.outcome = "error"
    report.error = "; ".join(
        f"attempt {number}: {error}" for number, error in enumerate(errors, start=1)
    )
    report.error_path = directory / f"{report.reflection_id}.error.json"
    _write_json(
        report.error_path,
        {
            "id": report.reflection_id,
            "run_id": report.run_id,
            "agent": report.agent,
            "at": report.at,
            "first_error": errors[0],
            "retry_error": errors[1] if len(errors) > 1 else None,
            "raw": answers[0],
            "retry_raw": answers[1] if len(answers) > 1 else None,
        },
    )
    return None


def _request(
    model: LlmBinding | None,
    system: str,
    items: list[ContextItem],
    instruction: str,
    attempt: int,
    settings: ReflectionSettings,
) -> GenerateRequest:
    identity = {"role": "reflection", "description": "Looks back on a finished run."}
    built = BuiltContext(
        agent_name=AGENT_NAME,
        model=model,
        identity=identity,
        system=system,
        context=items,
        instruction=instruction,
        return_schema=None,
        budget=None,
        final_user_message=user_message(items, instruction, None),
    )
    return GenerateRequest(
        agent_name=AGENT_NAME,
        function_name=FUNCTION_NAME,
        model=model,
        identity=identity,
        instruction=instruction,
        return_shape=None,
        schema=None,
        context=items,
        built=built,
        attempt=attempt,
        max_output_tokens=settings.max_output_tokens,
    )


def _answer_text(response: GenerateResponse) -> str:
    if isinstance(response.value, str):
        return response.value
    if isinstance(response.raw_text, str):
        return response.raw_text
    return stringify(response.value)


def parse_reflection(text: str) -> tuple[str, list[Any]]:
    """The summary and operations of an answer: one JSON object (a ```json fence around it is
    accepted) with a non-empty string `summary` and, if present, a list `operations`."""
    try:
        value = extract_json(text)
    except AgentScriptError:
        raise MalformedAnswer(f"the answer is not JSON: {snippet(text) or '(empty)'}") from None
    if not isinstance(value, dict):
        raise MalformedAnswer(f"the answer is {_kind(value)}, not a JSON object")
    summary = value.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise MalformedAnswer('the answer has no "summary" text')
    operations = value.get("operations", [])
    if not isinstance(operations, list):
        raise MalformedAnswer(f'"operations" is {_kind(operations)}, not a list')
    return summary.strip(), operations


class _Applier:
    """Applies one operation at a time: memory operations through the memory service and
    `learn.experiences`, the others through the agent's ProfileStore."""

    def __init__(
        self,
        journal: Journal,
        service: MemoryService,
        profiles: ProfileStore,
        run: RunRecord,
        trace: TaskExecutionTrace,
        report: ReflectionReport,
        workspace: Path,
    ) -> None:
        self.journal = journal
        self.service = service
        self.profiles = profiles
        self.run = run
        self.trace = trace
        self.report = report
        self.workspace = workspace
        self.why = f"reflection {report.reflection_id} on run {run.run_id}"

    def apply(self, index: int, operation: Any) -> OperationResult:
        kind = operation_kind(operation)
        try:
            if kind in PROFILE_OPERATIONS:
                done = self.profiles.apply(self.report.agent, operation, "reflection", self.why)
                return OperationResult(index, kind, done.ok, done.message)
            if not isinstance(operation, dict):
                return OperationResult(index, kind, False, "an operation must be a JSON object")
            if kind not in MEMORY_OPERATIONS:
                known = ", ".join(OPERATIONS)
                return OperationResult(
                    index, kind, False, f"unknown operation {kind!r} (known: {known})"
                )
            parsed = _validate(operation)
            if isinstance(parsed, RememberOperation):
                return self._remember(index, parsed)
            if isinstance(parsed, ExperienceAddOperation):
                return self._experience_add(index, parsed)
            return self._experience_retire(index, parsed)
        except ValueError as problem:
            return OperationResult(index, kind, False, str(problem))
        except (AgentScriptError, OSError) as problem:
            return OperationResult(index, kind, False, f"failed: {problem}")

    def _remember(self, index: int, op: RememberOperation) -> OperationResult:
        key = op.key.lower() if op.key is not None else None
        if key is not None and key.startswith(RESERVED_KEY_PREFIXES):
            return OperationResult(index, op.op, False, f"the key {op.key!r} is the runtime's")
        if op.kind == "fact" and key is None:
            return OperationResult(index, op.op, False, "a fact needs a key")
        written = self.service.remember(
            summarise_text(op.text, self.workspace, 4000),
            kind=op.kind,
            key=op.key,
            title=summarise_text(op.title, self.workspace, 200) if op.title else None,
            tags=[*op.tags, REFLECTION_TRIGGER],
            scope="global" if op.scope == "global" else None,
            source={"run": self.run.run_id, "reason": REFLECTION_TRIGGER},
        )
        return OperationResult(
            index, op.op, True, f"{written.action} {written.kind} {written.title!r}"
        )

    def _experience_add(self, index: int, op: ExperienceAddOperation) -> OperationResult:
        tools = tuple(step["tool"] for step in self.trace.tool_chain)
        candidate = Candidate(
            kind=op.kind,
            trigger=REFLECTION_TRIGGER,
            title=op.title,
            lesson=op.lesson,
            when=op.when,
            evidence=Evidence(
                run_id=self.run.run_id,
                tool_chain=tools,
                files=tuple(touch["path"] for touch in self.trace.files),
            ),
            confidence=min(op.confidence, MAX_REFLECTION_CONFIDENCE),
            signature=task_signature(self.run.program, self.run.entry),
            task=goal_text(self.trace.goal, self.run.workspace),
            tools=tuple(dict.fromkeys(tools)),
        )
        added = add_experience(self.service, candidate, graph=self.journal.graph)
        ok = added.action in ("created", "reinforced", "candidate")
        reasons = {
            "blocked": "it repeats a retired experience",
            "known": "this run already taught it",
            "dropped": "its confidence is too low to keep",
        }
        message = f"{added.action} {added.key}"
        if not ok:
            message += f": {reasons.get(added.action, added.action)}"
        return OperationResult(index, op.op, ok, message)

    def _experience_retire(self, index: int, op: ExperienceRetireOperation) -> OperationResult:
        done = retire_experience(
            self.service,
            op.key,
            reason=f"{self.why}: {summarise_text(op.reason, self.workspace, 160)}",
            graph=self.journal.graph,
        )
        if done["action"] != "retired":
            return OperationResult(index, op.op, False, f"no active experience {op.key}")
        return OperationResult(index, op.op, True, f"retired {op.key}")


def _validate(
    operation: dict[str, Any],
) -> RememberOperation | ExperienceAddOperation | ExperienceRetireOperation:
    """The validated memory operation; ValueError naming each field at fault."""
    try:
        return _MEMORY_OPERATIONS.validate_python(operation)
    except ValidationError as error:
        raise ValueError(describe_validation(error, MEMORY_OPERATIONS)) from None


# ----------------------------------------------------------------------------- records


def _record_in_ledger(
    workspace: Path, report: ReflectionReport, clock: Callable[[], float]
) -> None:
    """A reflection is an unattended model call too: the autonomy ledger counts it, with its
    cost and how many operations it proposed (`agentscript autonomy summary` shows their
    histogram), `underreflect` in its note when a substantial run yielded nothing."""
    note = report.error or ("; ".join(report.signals) if report.signals else "")
    run = AutonomyRun(
        kind="reflect",
        started_at=report.at,
        duration_ms=max(0, round((clock() - report.at) * 1000)),
        input_tokens=report.usage.input_tokens,
        output_tokens=report.usage.output_tokens,
        tool_calls=0,
        outcome=report.outcome,
        note=one_line(note),
        task=f"run {report.run_id}",
        operations=None if report.outcome == "error" else report.proposed,
    )
    problem = Ledger.for_workspace(workspace, clock=clock).append(run)
    if problem is not None:
        report.problems.append(problem)


def _write_record(directory: Path, report: ReflectionReport) -> None:
    report.record_path = directory / f"{report.reflection_id}.json"
    _write_json(report.record_path, report.to_json())


def _write_json(path: Path, value: dict[str, Any]) -> None:
    """Write whole or not at all: a reader never sees half a record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(value, ensure_ascii=False, indent=2), encoding="utf-8")
    os.replace(temporary, path)


def _program(path: str | None) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1] if path else "a program"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return f"a {type(value).__name__}"
