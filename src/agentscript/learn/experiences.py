"""Experiences: short, specific lessons distilled from runs, kept with the evidence behind them.

Rules turn a run's execution trace into candidates of four kinds (success, failure, preference,
procedure); an optional model rewrites the new ones, validated like any generate, and the rule's
text stays whenever the rewrite is refused. A candidate that repeats an experience reinforces it
instead of adding one, a lesson that was retired is never brought back by the same rule, and a
candidate below MIN_CONFIDENCE stays in the task graph only. Everything stored is summarised
first (see `sensitive`): no secret, outside path or command argument is kept verbatim.

Storage convention, relied on by `Memory.experiences` and by reflection: a memory entry of kind
`knowledge`, key `experience:<signature>:<kind>:<digest>`, tags `experience`, its kind,
`task:<signature>` and `tool:<name>` for the tools it is about, the lesson in a few words as title,
a body of the lesson, "When to apply: …", an "Evidence:" list and "Confidence: 0.70", the task it was learned on as
context, source {run, reason: "experience:<trigger>"}; and an EXPERIENCE node in the task graph
whose id is that key, linked from the EPISODE of every run that produced or repeated it.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from agentscript.learn.failure_class import environment_cause
from agentscript.learn.graph import (
    HALF_LIVES,
    Edge,
    EdgeType,
    Neighbour,
    Node,
    NodeType,
    TaskGraph,
    episode_node_id,
    strengthened,
)
from agentscript.learn.sensitive import summarise_text
from agentscript.memory.entries import DIGEST_MARKER
from agentscript.runtime.errors import AgentScriptError
from agentscript.runtime.jsjson import escape_lone_surrogates

if TYPE_CHECKING:
    from agentscript.lang import ast
    from agentscript.learn.execution_trace import TaskExecutionTrace, ToolStep
    from agentscript.learn.journal_store import JournalEntry, RunRecord
    from agentscript.learn.ports import SandboxedRunner
    from agentscript.memory.results import RememberResult
    from agentscript.memory.service import MemoryService
    from agentscript.runtime.ports import LlmProvider

ExperienceKind = Literal["success", "failure", "preference", "procedure"]
EXPERIENCE_KINDS: tuple[ExperienceKind, ...] = ("success", "failure", "preference", "procedure")
EXPERIENCE_TAG = "experience"

# Why a candidate was made; the stored entry's source reason is "experience:<trigger>".
RUN_OK = "run_ok"
RUN_ERROR = "run_error"
APPROVAL_REFUSED = "approval_refused"
TOOL_FAILED_AGAIN = "tool_failed_again"
FEEDBACK_GOOD = "feedback_good"
FEEDBACK_BAD = "feedback_bad"

# Below this a candidate stays in the task graph; each later run that repeats it adds
# REPEAT_BONUS, so a weak signal seen twice (one refused approval, then another) is stored.
MIN_CONFIDENCE = 0.6
REPEAT_BONUS = 0.2
MAX_CONFIDENCE = 0.95
# Two lessons of the same kind and task signature whose word sets overlap this much (Jaccard)
# are one experience: a lesson that differs only in a file name or a month is a repeat.
SIMILAR = 0.8
# A tool chain that worked in this many runs of a task also becomes a procedure.
PROCEDURE_AFTER = 2
# How far a repeated experience's graph weight is restored towards 1.
REINFORCE_RATE = 0.5

TITLE_CHARS = 80
LESSON_CHARS = 400
WHEN_CHARS = 240
TASK_CHARS = 160
# The error a failure lesson quotes is cut shorter: a lesson a program `use`s stays within
# about 60 tokens (the whole message is in the evidence's events).
LESSON_DETAIL_CHARS = 80
# The runs an EXPERIENCE node lists (its run_count keeps the total).
RUNS_KEPT = 20
# How many experiences of one kind and signature a dedup compares against (recall's maximum).
DEDUP_POOL = 200
# The graph's lock around deciding and storing an experience (see add_experience): how long a
# learner waits for another process's learning, and after how long a holder counts as crashed
# (sooner when its pid is gone from this host).
LEARNING_LOCK = "learning"
LEARNING_LOCK_TIMEOUT = 120.0
LEARNING_LOCK_STALE = 600.0
# An EXPERIENCE node's status: in memory, in the graph only, or retired (by bad feedback or
# by a caller; a repeat of it is then blocked, never stored again).
STORED = "stored"
CANDIDATE = "candidate"
RETIRED = "retired"
# Not seen for so long that its weight faded (learn/upkeep.py): archived in memory, and stored
# again like a new lesson if a run teaches it again.
FADED = "faded"

Action = Literal["created", "reinforced", "candidate", "blocked", "known", "dropped"]

_WORDS = re.compile(r"[^\W_]+")
_TOOL_ERROR = re.compile(r"^Tool (?P<tool>[\w.]+) \((?P<uri>[^)]*)\) failed: (?P<detail>.*)$", re.S)
_LOCATION = re.compile(r" at \S+:\d+:\d+$")
# `File.read`: how lessons name tools; a rewrite may not name one the run did not use.
_TOOL_NAME = re.compile(r"\b[A-Z][A-Za-z0-9_]*\.[a-z_][A-Za-z0-9_]*\b")
# The memory service refuses any text carrying a digest's marker, in any case.
_DIGEST = re.compile(re.escape(DIGEST_MARKER), re.I)
_GOAL_KEYS = ("task", "goal", "question", "request", "prompt", "query", "topic", "instruction")


# ----------------------------------------------------------------------------- the model


@dataclass(frozen=True, slots=True)
class Evidence:
    """What an experience rests on: the run, its events, the tools it used and files it touched."""

    run_id: str | None = None
    event_ids: tuple[int, ...] = ()
    tool_chain: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    # Earlier runs that showed the same thing (a tool failing again).
    other_runs: tuple[str, ...] = ()
    # Whether the run ended ok, and its approvals (`File.write refused (user)`), as seed 003's
    # evidence asks.
    success: bool | None = None
    approval_trace: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        lines: list[str] = []
        if self.run_id:
            outcome = {True: " (ended ok)", False: " (failed)", None: ""}[self.success]
            lines.append(f"run {self.run_id}{outcome}")
        if self.other_runs:
            lines.append("also in runs " + ", ".join(self.other_runs))
        if self.event_ids:
            lines.append("events " + ", ".join(str(event) for event in self.event_ids))
        if self.tool_chain:
            lines.append("tool chain " + " → ".join(self.tool_chain))
        if self.files:
            lines.append("files " + ", ".join(self.files))
        if self.approval_trace:
            lines.append("approvals " + ", ".join(self.approval_trace))
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "event_ids": list(self.event_ids),
            "tool_chain": list(self.tool_chain),
            "files": list(self.files),
            "other_runs": list(self.other_runs),
            "success": self.success,
            "approval_trace": list(self.approval_trace),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Evidence:
        return cls(
            run_id=data.get("run_id"),
            event_ids=tuple(int(event) for event in data.get("event_ids") or ()),
            tool_chain=tuple(str(tool) for tool in data.get("tool_chain") or ()),
            files=tuple(str(path) for path in data.get("files") or ()),
            other_runs=tuple(str(run) for run in data.get("other_runs") or ()),
            success=data.get("success"),
            approval_trace=tuple(str(item) for item in data.get("approval_trace") or ()),
        )


@dataclass(frozen=True, slots=True)
class Candidate:
    """A lesson before it is stored: what to do (`lesson`), when (`when`), on what evidence,
    how sure the rule is, and which task signature (`<program stem>[/<entry>]`; None for a
    lesson about a tool or the user that holds for every task) and task text it came from."""

    kind: ExperienceKind
    trigger: str
    title: str
    lesson: str
    when: str
    evidence: Evidence = field(default_factory=Evidence)
    confidence: float = MIN_CONFIDENCE
    signature: str | None = None
    task: str = ""
    tools: tuple[str, ...] = ()
    # The failure class a failure lesson is about (`not_found`, `shape`, …), for "again".
    cause: str | None = None
    # A digest of the run's input: an unexplained error counts again only on another input.
    input_digest: str | None = None

    @property
    def key(self) -> str:
        return experience_key(self.signature, self.kind, self.lesson)

    def body(self) -> str:
        """The memory entry's body: the lesson, when to apply it, and the evidence list."""
        evidence = self.evidence.lines() or ["none recorded"]
        return "\n".join(
            [self.lesson, "", f"When to apply: {self.when}", "", "Evidence:"]
            + [f"- {line}" for line in evidence]
            + ["", f"Confidence: {self.confidence:.2f}"]
        )

    def tags(self) -> list[str]:
        tags = [EXPERIENCE_TAG, self.kind]
        if self.signature:
            tags.append(signature_tag(self.signature))
        tags += [f"tool:{tool.lower()}"[:64] for tool in self.tools[:4]]
        return tags

    def cleaned(self, workspace: str | Path | None) -> Candidate:
        """The same candidate with every text summarised: a secret, an outside path or an
        over-long value never reaches memory, whoever wrote the candidate."""
        return replace(
            self,
            title=clean_text(self.title, workspace, TITLE_CHARS),
            lesson=clean_text(self.lesson, workspace, LESSON_CHARS),
            when=clean_text(self.when, workspace, WHEN_CHARS),
            task=clean_text(self.task, workspace, TASK_CHARS),
            evidence=replace(
                self.evidence,
                event_ids=self.evidence.event_ids[:20],
                tool_chain=tuple(
                    clean_text(tool, workspace, 60) for tool in self.evidence.tool_chain[:12]
                ),
                files=tuple(clean_text(path, workspace, 120) for path in self.evidence.files[:10]),
                other_runs=self.evidence.other_runs[-5:],
            ),
            confidence=min(max(self.confidence, 0.0), 1.0),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "trigger": self.trigger,
            "title": self.title,
            "lesson": self.lesson,
            "when": self.when,
            "evidence": self.evidence.to_json(),
            "confidence": self.confidence,
            "signature": self.signature,
            "task": self.task,
            "tools": list(self.tools),
            "cause": self.cause,
            "input_digest": self.input_digest,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Candidate:
        kind = data.get("kind")
        if kind not in EXPERIENCE_KINDS:
            raise ValueError(f"not an experience kind: {kind!r}")
        return cls(
            kind=cast(ExperienceKind, kind),
            trigger=str(data.get("trigger")),
            title=str(data.get("title")),
            lesson=str(data.get("lesson")),
            when=str(data.get("when")),
            evidence=Evidence.from_json(data.get("evidence") or {}),
            confidence=float(data.get("confidence") or 0.0),
            signature=data.get("signature"),
            task=str(data.get("task") or ""),
            tools=tuple(str(tool) for tool in data.get("tools") or ()),
            cause=data.get("cause"),
            input_digest=data.get("input_digest"),
        )


@dataclass(frozen=True, slots=True)
class Added:
    """What `add_experience` did with a candidate.

    `created`: stored in memory (new, or a graph-only candidate repeated past the threshold);
    `reinforced`: an experience of the same kind and signature said the same, and was
    reinforced instead; `candidate`: kept in the task graph only (low confidence); `blocked`:
    it repeats a retired experience; `known`: this run already counted for that experience;
    `dropped`: low confidence and no task graph to keep it in.
    """

    action: Action
    key: str
    kind: ExperienceKind
    memory_id: str | None = None
    confidence: float = 0.0
    problems: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "key": self.key,
            "kind": self.kind,
            "memory_id": self.memory_id,
            "confidence": round(self.confidence, 3),
        }


def experience_key(signature: str | None, kind: str, lesson: str) -> str:
    digest = hashlib.sha256(" ".join(_words(lesson)).encode("utf-8")).hexdigest()[:12]
    return f"experience:{signature or 'any'}:{kind}:{digest}"


def signature_tag(signature: str) -> str:
    return f"task:{signature}"


def task_signature(program: str | None, entry: str | None = None) -> str | None:
    """What makes runs "the same task": the program's file name without its suffix, and the
    entry when it is not the main one. Only the name: where a program lies is not kept."""
    if not program:
        return None
    stem = program.replace("\\", "/").rsplit("/", 1)[-1]
    stem = stem[: -len(".as")] if stem.endswith(".as") else stem
    signature = stem + (f"/{entry}" if entry else "")
    cleaned = re.sub(r"[^a-z0-9._/-]+", "-", signature.lower()).strip("-")
    return cleaned[:58] or None


def similarity(first: str, second: str) -> float:
    """Jaccard overlap of the two texts' word sets (case-folded)."""
    a, b = set(_words(first)), set(_words(second))
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def lesson_of(body: str) -> str:
    """The lesson part of a stored experience's body."""
    return body.split("\n\nWhen to apply:", 1)[0].strip()


def clean_text(text: str, workspace: str | Path | None, limit: int) -> str:
    """One line of text as memory may keep it: whitespace collapsed, secrets and outside paths
    summarised, cut to `limit` characters, and never the digest marker."""
    line = _DIGEST.sub("memory-digest", " ".join(str(text).split()))
    return summarise_text(line, workspace, preview=limit)


def _words(text: str) -> list[str]:
    return _WORDS.findall(unicodedata.normalize("NFKC", text).casefold())


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# ----------------------------------------------------------------------------- rules


@dataclass(frozen=True, slots=True)
class _Cause:
    """A class of run failure the rules know: how to recognise it, name it, and avoid it (the
    remedy is an instruction about `{subject}`, the tool or generate that failed)."""

    name: str
    pattern: re.Pattern[str]
    description: str
    title: str
    remedy: str
    confidence: float


def _cause(
    name: str, pattern: str, description: str, title: str, remedy: str, confidence: float
) -> _Cause:
    return _Cause(name, re.compile(pattern, re.I), description, title, remedy, confidence)


# First match wins. The shape remedy is written per failure from the generate's schema.
_CAUSES = (
    _cause(
        "outside_workspace",
        r"escapes workspace",
        "a path outside the workspace",
        "Keep {subject} paths inside the workspace",
        "give {subject} paths relative to the workspace root; nothing outside it can be reached",
        0.7,
    ),
    _cause(
        "not_found",
        r"not found|no such file|does not exist|cannot find",
        "a missing file",
        "Locate files before {subject}",
        "before {subject}, find the file (for example with sh://find) instead of guessing its path",
        0.7,
    ),
    _cause(
        "shape",
        r"LLM result|did not return JSON",
        "an answer that did not match its shape",
        "Make {subject} answer in its shape",
        "",
        0.65,
    ),
    _cause(
        "timeout",
        r"timed out|timeout|took longer than",
        "a timeout",
        "{subject} timed out",
        "narrow each call to {subject} (a smaller path, a lower max) or raise its timeout",
        0.65,
    ),
    _cause(
        "http",
        r"\bHTTP \d{3}\b|\bstatus \d{3}\b",
        "an HTTP error",
        "{subject} got an HTTP error",
        "check the URL, the method and the credentials before calling {subject} again",
        0.6,
    ),
    _cause(
        "unsupported",
        r"Unsupported|Forbidden shell tool",
        "an unsupported call",
        "{subject} is not available",
        "instead of {subject}, use one of the supported tools or methods the error names",
        0.65,
    ),
)
# An error the rules cannot explain: the advice is generic, so it stays a candidate until the
# same error comes back on a different input (one input failing twice may just be that input);
# a tool that keeps failing this way in other tasks still gets a lesson.
_UNKNOWN = _cause(
    "error",
    r"$^",
    "an error",
    "{subject} failed",
    "check how {subject} is called before calling it again",
    0.45,
)


@dataclass(frozen=True, slots=True)
class _RunFacts:
    run: RunRecord
    trace: TaskExecutionTrace
    entries: Sequence[JournalEntry]
    program: str
    signature: str | None
    task: str

    @classmethod
    def of(
        cls, run: RunRecord, trace: TaskExecutionTrace, entries: Sequence[JournalEntry]
    ) -> _RunFacts:
        program = run.program.replace("\\", "/").rsplit("/", 1)[-1] if run.program else "program"
        return cls(
            run,
            trace,
            entries,
            program,
            task_signature(run.program, run.entry),
            goal_text(trace.goal, run.workspace),
        )

    @property
    def when(self) -> str:
        return (
            f'Tasks like "{self.task}" in {self.program}' if self.task else f"{self.program} runs"
        )

    def evidence(self, event_ids: Sequence[int] = ()) -> Evidence:
        steps = self.trace.tool_chain
        return Evidence(
            run_id=self.run.run_id,
            event_ids=tuple(event_ids) or tuple(step["pair_id"] for step in steps),
            tool_chain=tuple(step["tool"] for step in steps),
            files=tuple(touch["path"] for touch in self.trace.files),
            success=self.trace.success,
            approval_trace=approval_lines(self.trace),
        )


def approval_lines(trace: TaskExecutionTrace) -> tuple[str, ...]:
    """`File.write refused (user)` for each decided approval of the run."""
    return tuple(
        f"{step['tool']} {step['decision']}" + (f" ({step['by']})" if step.get("by") else "")
        for step in trace.approval_trace
        if step["decision"] != "pending"
    )


def goal_text(goal: Any, workspace: str | Path | None = None) -> str:
    """The task a run was given, as text: the input's task-like field (task, goal, question,
    …), else its only text, else the input in brief."""
    if goal is None:
        return ""
    if isinstance(goal, str):
        return clean_text(goal, workspace, TASK_CHARS)
    if isinstance(goal, dict):
        for name in _GOAL_KEYS:
            if isinstance(goal.get(name), str) and goal[name].strip():
                return clean_text(goal[name], workspace, TASK_CHARS)
        texts = [value for value in goal.values() if isinstance(value, str) and value.strip()]
        if len(texts) == 1:
            return clean_text(texts[0], workspace, TASK_CHARS)
    summary = summarise_text(_compact(goal), workspace, preview=TASK_CHARS)
    return clean_text(summary, workspace, TASK_CHARS)


def input_digest(goal: Any) -> str:
    """A short digest of a run's input, to tell a repeat on the same input from another."""
    text = json.dumps(goal, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _compact(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(
            f"{key}: {_compact(item)}"
            for key, item in value.items()
            if item not in (None, "", [], {})
        )
    if isinstance(value, list):
        return "[" + ", ".join(_compact(item) for item in value) + "]"
    return str(value)


def distil(
    run: RunRecord,
    trace: TaskExecutionTrace,
    entries: Sequence[JournalEntry] = (),
    graph: TaskGraph | None = None,
) -> list[Candidate]:
    """The rule candidates of one finished run, deterministically: a success for the tool chain
    of a run that ended ok (and a failure lesson for a generate that needed repairs), a failure
    for the error a run ended with (and a lesson about the tool itself when the graph shows it
    failing the same way in another task), and a preference for each approval the user refused. A run that
    used no tools and ended ok teaches nothing here: its run memory says what it did."""
    facts = _RunFacts.of(run, trace, entries)
    found: list[Candidate] = []
    if trace.status == "ok":
        found += _successes(facts)
    elif trace.status == "error":
        found += _failures(facts, graph)
    found += _refusals(facts)
    return [candidate.cleaned(run.workspace) for candidate in found]


def procedure_candidate(
    run: RunRecord, trace: TaskExecutionTrace, confidence: float = 0.8
) -> Candidate | None:
    """The steps of a successful run as a procedure: each tool with the argument names it was
    given (never their values). Made once its tool chain has worked PROCEDURE_AFTER times."""
    facts = _RunFacts.of(run, trace, ())
    steps = _grouped_steps(trace.tool_chain)
    if not steps:
        return None
    numbered = "; ".join(f"{index}) {step}" for index, step in enumerate(steps, 1))
    return Candidate(
        kind="procedure",
        trigger=RUN_OK,
        title=f"Steps for {facts.program}",
        lesson=f"To do {facts.program} tasks: {numbered}.",
        when=facts.when,
        evidence=facts.evidence(),
        confidence=confidence,
        signature=facts.signature,
        task=facts.task,
        tools=tuple(dict.fromkeys(step["tool"] for step in trace.tool_chain)),
    ).cleaned(run.workspace)


def _successes(facts: _RunFacts) -> list[Candidate]:
    found: list[Candidate] = []
    steps = facts.trace.tool_chain
    if steps:
        chain = chain_text([step["tool"] for step in steps])
        lesson = f"For {facts.program} tasks, use {chain} in this order: it worked."
        failed = sorted({step["tool"] for step in steps if not step["ok"]})
        if failed:
            lesson += f" {', '.join(failed)} reported a failure on the way: check its result."
        found.append(
            Candidate(
                kind="success",
                trigger=RUN_OK,
                title=f"{chain} for {facts.program}",
                lesson=lesson,
                when=facts.when,
                evidence=facts.evidence(),
                confidence=0.7,
                signature=facts.signature,
                task=facts.task,
                tools=tuple(dict.fromkeys(step["tool"] for step in steps)),
            )
        )
    repaired = [
        entry
        for entry in facts.entries
        if entry.kind == "generate"
        and entry.phase == "end"
        and isinstance(entry.data, dict)
        and entry.data.get("ok") is not False
        and int(entry.data.get("attempts") or 1) > 1
    ]
    if repaired:
        subject = _generate_subject(repaired[0], facts.run.workspace)
        found.append(
            Candidate(
                kind="failure",
                trigger=RUN_OK,
                title=f"Expect repairs in {_generate_subject(repaired[0], facts.run.workspace, 30)}",
                lesson=_sentence(
                    f"in {subject}, {_shape_remedy(repaired[0])} (its first answer did not match "
                    "its shape and was repaired)"
                ),
                when=facts.when,
                evidence=facts.evidence([entry.event_id for entry in repaired if entry.event_id]),
                confidence=0.6,
                signature=facts.signature,
                task=facts.task,
                cause="shape",
            )
        )
    return found


def _failures(facts: _RunFacts, graph: TaskGraph | None) -> list[Candidate]:
    reason = facts.trace.failure_reason
    if environment_cause(reason) is not None:
        return []
    matched = _TOOL_ERROR.match(reason)
    tool = matched["tool"] if matched else None
    detail = _LOCATION.sub("", matched["detail"] if matched else reason).strip()
    cause = next((cause for cause in _CAUSES if cause.pattern.search(detail)), _UNKNOWN)
    failed_generate = next(
        (
            entry
            for entry in reversed(facts.entries)
            if entry.kind == "generate"
            and isinstance(entry.data, dict)
            and entry.data.get("ok") is False
        ),
        None,
    )
    event_ids: list[int] = list(facts.trace.source_event_ids[-5:])
    if cause.name == "shape":
        shaped = failed_generate
        named = _generate_subject(shaped, facts.run.workspace, 30) if shaped else "the generate"
        remedy = f"in {named}, {_shape_remedy(shaped)}"
        # The generate is named once, in the remedy, which the shape error was read for: the
        # error itself is not quoted again.
        outcome = "its answer did not match its shape"
        if shaped is not None and shaped.event_id is not None:
            event_ids = [shaped.event_id]
    else:
        named = tool or facts.program
        remedy = cause.remedy.format(subject=named)
        outcome = f'{named} failed with "{_cut(detail, LESSON_DETAIL_CHARS)}"'
    lesson = _sentence(f"{remedy} ({outcome})")
    evidence = facts.evidence(event_ids)
    found = [
        Candidate(
            kind="failure",
            trigger=RUN_ERROR,
            title=cause.title.format(subject=named),
            lesson=lesson,
            when=facts.when if tool is None else f"{facts.when} that call {tool}",
            evidence=evidence,
            confidence=cause.confidence,
            signature=facts.signature,
            task=facts.task,
            tools=(tool,) if tool else (),
            cause=cause.name,
            input_digest=input_digest(facts.trace.goal),
        )
    ]
    if tool is not None and graph is not None:
        earlier = _earlier_failures(graph, tool, cause.name, facts.signature)
        if earlier:
            found.append(
                Candidate(
                    kind="failure",
                    trigger=TOOL_FAILED_AGAIN,
                    title=cause.title.format(subject=tool),
                    lesson=_sentence(
                        f"{cause.remedy.format(subject=tool) if cause.remedy else remedy} "
                        f"({tool} failed with "
                        f"{cause.description} in other tasks too)"
                    ),
                    when=f"Any task that calls {tool}",
                    evidence=replace(evidence, other_runs=tuple(earlier[-5:])),
                    confidence=0.85,
                    signature=None,
                    task=facts.task,
                    tools=(tool,),
                    cause=cause.name,
                )
            )
    return found


def _refusals(facts: _RunFacts) -> list[Candidate]:
    """A preference per tool the user (not a policy or a mode) refused. One refusal is a weak
    signal (the seed asks for repetition or an explicit statement): it stays a candidate until
    another run repeats it, or until good feedback confirms the run."""
    found: list[Candidate] = []
    for approval in facts.trace.approval_trace:
        if approval["decision"] != "refused" or approval["by"] != "user":
            continue
        tool = approval["tool"]
        risk = f" ({approval['risk']} risk)" if approval.get("risk") else ""
        found.append(
            Candidate(
                kind="preference",
                trigger=APPROVAL_REFUSED,
                title=f"The user refuses {tool}",
                lesson=f"The user refused {tool} on {approval['uri']}{risk}: plan without it, "
                "or ask before relying on it.",
                when=f"Any task that would call {tool}",
                evidence=Evidence(
                    run_id=facts.run.run_id,
                    event_ids=tuple(approval["event_ids"]),
                    tool_chain=(tool,),
                ),
                confidence=0.5,
                signature=None,
                task=facts.task,
                tools=(tool,),
            )
        )
    return found


def _sentence(text: str) -> str:
    """An instruction as a sentence: its first letter up, a full stop at the end."""
    return text[:1].upper() + text[1:] + "."


def chain_text(tools: Sequence[str], limit: int = 8) -> str:
    """`Find.run → File.read ×2`: the tools in order, repeats of one tool folded."""
    groups: list[list[Any]] = []
    for tool in tools:
        if groups and groups[-1][0] == tool:
            groups[-1][1] += 1
        else:
            groups.append([tool, 1])
    parts = [f"{tool} ×{count}" if count > 1 else str(tool) for tool, count in groups]
    if len(parts) > limit:
        parts = [*parts[:limit], "…"]
    return " → ".join(parts)


def _grouped_steps(steps: Sequence[ToolStep]) -> list[str]:
    described: list[str] = []
    for step in steps:
        args = step["args"]
        first = args[0] if isinstance(args, list) and args else None
        names = f" ({', '.join(map(str, first))})" if isinstance(first, dict) and first else ""
        text = f"{step['tool']}{names}"
        if not described or described[-1] != text:
            described.append(text)
    return described[:12]


def _generate_subject(entry: JournalEntry, workspace: str | None, limit: int = 60) -> str:
    """`generate "<its instruction>"`, the instruction cut to `limit` characters."""
    instruction = entry.data.get("instruction") if isinstance(entry.data, dict) else None
    if isinstance(instruction, dict):
        instruction = instruction.get("input")
    if not isinstance(instruction, str) or not instruction.strip():
        return "the generate"
    return f'generate "{_cut(clean_text(instruction, workspace, 200), limit)}"'


def _shape_remedy(entry: JournalEntry | None) -> str:
    """How to make a generate's answers fit: name the fields whose type the model missed (the
    schema's numbers, booleans and lists), and allow a repair."""
    schema: Any = None
    if entry is not None and isinstance(entry.data, dict):
        context = entry.data.get("context")
        if isinstance(context, dict):
            schema = context.get("returnSchema")
    typed: dict[str, list[str]] = {}
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(properties, dict):
        for name, spec in properties.items():
            kind = spec.get("type") if isinstance(spec, dict) else None
            if kind in ("number", "boolean", "array"):
                typed.setdefault(str(kind), []).append(str(name))
    wording = {
        "number": "with a plain number",
        "boolean": "with true or false",
        "array": "with a JSON list",
    }
    parts = [
        f"answer {', '.join(names)} {wording[kind]}"
        for kind in ("number", "boolean", "array")
        if (names := typed.get(kind))
    ]
    if not parts:
        parts = ["say in the instruction what each field holds"]
    return "; ".join(parts) + ", and give the generate attempts: 2 so a wrong answer is repaired"


def _earlier_failures(graph: TaskGraph, tool: str, cause: str, signature: str | None) -> list[str]:
    """Runs of other tasks whose failures of `tool` had the same cause, oldest first. Only
    another task makes a lesson about the tool itself: the same task failing again just
    reinforces its own lesson."""
    runs: list[str] = []
    for node in graph.nodes(NodeType.EXPERIENCE):
        metadata = node.metadata
        if (
            metadata.get("kind") == "failure"
            and metadata.get("cause") == cause
            and metadata.get("signature") not in (None, signature)
            and tool in (metadata.get("tools") or ())
        ):
            runs += metadata.get("runs") or ()
    return sorted(set(runs))


# ----------------------------------------------------------------------------- refinement

_REFINE_PROGRAM = """import llm LearnModel from "{uri}"

main agent Learner {
    model LearnModel
    role "editor of lessons learned"
    description "Rewrites one lesson an agent learned from a run: short, specific and actionable, with nothing the lesson and its evidence do not say."

    main func refine(input { kind string  title string  lesson string  when string  evidence json }) {
        use input.kind as "kind of lesson"
        use input.title as "title"
        use input.lesson as "lesson"
        use input.when as "when to apply"
        use input.evidence as "evidence"
        generate({ input: "Rewrite this lesson for an agent that reads it before a similar task. Keep every tool name, path and value it relies on and add nothing its evidence does not show. title: the lesson in a few words (at most 80 characters). lesson: one or two sentences saying what to do (at most 400 characters). when: which tasks it applies to.", attempts: 2 }) -> {
            title string
            lesson string
            when string
        }
    }
}
"""
# The model URI the refinement program names when a provider is handed in directly (the
# provider answers; the URI only has to be well formed).
PROVIDED_MODEL_URI = "openai://learn-model"


class Refiner:
    """Rewrites a new experience with a model before it is stored.

    The rewrite is one `generate` of a small AgentScript program run through the runtime, so
    the answer is shaped, validated and repaired like any other; then `check_refinement`
    refuses texts that are too long or short, hold a secret or an outside path, or name a
    tool the run did not use. A refused or failed rewrite keeps the rule's text and says why.
    `llm` None uses the real model router with `environ` (the URI picks the protocol).
    """

    def __init__(
        self,
        llm: LlmProvider | None,
        uri: str = PROVIDED_MODEL_URI,
        environ: Mapping[str, str] | None = None,
        max_calls: int = 2,
        *,
        runner: SandboxedRunner,
    ) -> None:
        self.llm = llm
        self.uri = uri
        self.environ = environ
        self.max_calls = max_calls
        self.runner = runner
        self._program: ast.Program | None = None

    def refine(
        self, candidate: Candidate, workspace: str | Path | None
    ) -> tuple[Candidate, str | None]:
        """The rewritten candidate, or the candidate itself and why the rewrite was refused."""
        try:
            answer = self._ask(candidate)
        except AgentScriptError as error:
            return candidate, _refused(candidate, str(error))
        refined, reason = check_refinement(candidate, answer, workspace)
        if refined is None:
            return candidate, _refused(candidate, reason or "invalid answer")
        return refined, None

    def _ask(self, candidate: Candidate) -> Any:
        if self._program is None:
            if any(mark in self.uri for mark in ('"', "\\", "\n")):
                raise AgentScriptError(f"Not a model URI: {self.uri!r}")
            from agentscript.runtime.loader import load_program_source

            self._program = load_program_source(_REFINE_PROGRAM.replace("{uri}", self.uri))
        given = {
            "kind": candidate.kind,
            "title": candidate.title,
            "lesson": candidate.lesson,
            "when": candidate.when,
            "evidence": candidate.evidence.to_json(),
        }
        return self.runner(
            self._program, given, llm=self.llm, environ=self.environ, max_calls=self.max_calls
        )


def _refused(candidate: Candidate, reason: str) -> str:
    return (
        f'The rewrite of the {candidate.kind} experience "{candidate.title}" was refused '
        f"({_cut(reason, 200)}); the rule's text was kept"
    )


def check_refinement(
    candidate: Candidate, answer: Any, workspace: str | Path | None
) -> tuple[Candidate | None, str | None]:
    """The candidate with the model's title, lesson and when, or None and the reason."""
    if not isinstance(answer, dict):
        return None, "the answer is not an object"
    texts: dict[str, str] = {}
    for name, shortest, longest in (
        ("title", 3, TITLE_CHARS),
        ("lesson", 20, LESSON_CHARS),
        ("when", 5, WHEN_CHARS),
    ):
        value = answer.get(name)
        if not isinstance(value, str):
            return None, f"{name} is not text"
        text = " ".join(value.split())
        if not shortest <= len(text) <= longest:
            return None, f"{name} has {len(text)} characters, not {shortest} to {longest}"
        if clean_text(text, workspace, longest) != text:
            return None, f"{name} holds a secret, an outside path or the digest marker"
        texts[name] = text
    known = set(_TOOL_NAME.findall(f"{candidate.title} {candidate.lesson} {candidate.when}"))
    known.update(candidate.evidence.tool_chain, candidate.tools)
    invented = sorted(set(_TOOL_NAME.findall(" ".join(texts.values()))) - known)
    if invented:
        return None, f"it names tools the run did not use: {', '.join(invented)}"
    return replace(
        candidate, title=texts["title"], lesson=texts["lesson"], when=texts["when"]
    ), None


# ----------------------------------------------------------------------------- storing


def add_experience(
    service: MemoryService,
    candidate: Candidate,
    *,
    graph: TaskGraph | None = None,
    refiner: Refiner | None = None,
    min_confidence: float = MIN_CONFIDENCE,
) -> Added:
    """Store a candidate as an experience, or reinforce the one it repeats.

    An active experience in memory of the same kind and signature whose lesson is near
    identical (SIMILAR) is reinforced (memory reinforce_count + 1, graph weight restored).
    Otherwise, with a graph: a near-identical EXPERIENCE node that was retired blocks it, and a
    graph-only candidate gains REPEAT_BONUS. What reaches `min_confidence` is rewritten by
    `refiner` (if any) and stored; the rest stays in the graph (or is dropped without one).
    With a graph, a run counts once per experience: learning a run again adds nothing.

    With a graph, the whole decision and its write hold the graph's learning lock, so two
    processes learning the same lesson at once store it once and reinforce it once; a
    rewrite by `refiner` happens under the lock too (it is opt-in and bounded by its calls).
    """
    if graph is None:
        return _add_experience(service, candidate, None, refiner, min_confidence)
    with graph.store.lock(
        LEARNING_LOCK, timeout=LEARNING_LOCK_TIMEOUT, stale_after=LEARNING_LOCK_STALE
    ):
        return _add_experience(service, candidate, graph, refiner, min_confidence)


def _add_experience(
    service: MemoryService,
    candidate: Candidate,
    graph: TaskGraph | None,
    refiner: Refiner | None,
    min_confidence: float,
) -> Added:
    candidate = candidate.cleaned(service.workspace)
    node = _similar_node(graph, candidate) if graph is not None else None
    entry = _similar_entry(service, candidate)
    if entry is None and node is not None and node.metadata.get("status") == STORED:
        entry = active_entry(service, node.node_id)
    key = (entry or {}).get("key") or (node.node_id if node is not None else candidate.key)
    run_id = candidate.evidence.run_id
    if graph is not None and run_id is not None and _counted(graph, key, run_id):
        known = graph.node(key)
        confidence = float(known.metadata.get("confidence", 0.0)) if known else 0.0
        memory_id = entry["id"] if entry is not None else None
        return Added("known", key, candidate.kind, memory_id, confidence)
    previous = float(node.metadata.get("confidence", 0.0)) if node is not None else 0.0
    if entry is not None:
        reinforce_entry(service, entry["id"])
        confidence = max(previous, candidate.confidence)
        if graph is not None:
            shown = _as_stored(candidate, entry)
            _record(graph, key, candidate, shown, STORED, confidence, entry["id"], "reinforced")
        return Added("reinforced", key, candidate.kind, entry["id"], confidence)
    confidence = candidate.confidence
    if node is not None:
        status = node.metadata.get("status")
        assert graph is not None
        if status == RETIRED or (status == STORED and _archived(service, key)):
            _record(graph, key, candidate, None, RETIRED, previous, None, "blocked")
            return Added("blocked", key, candidate.kind, None, previous)
        if status == CANDIDATE and _corroborates(node, candidate):
            confidence = min(MAX_CONFIDENCE, max(previous, candidate.confidence) + REPEAT_BONUS)
        elif status == CANDIDATE:
            confidence = max(previous, candidate.confidence)
    if confidence < min_confidence:
        if graph is None:
            return Added("dropped", key, candidate.kind, None, confidence)
        _record(graph, key, candidate, None, CANDIDATE, confidence, None, "candidate")
        return Added("candidate", key, candidate.kind, None, confidence)
    stored, memory_id, problems = _store(
        service, replace(candidate, confidence=confidence), key, refiner
    )
    if graph is not None:
        _record(graph, key, candidate, stored, STORED, confidence, memory_id, "created")
    return Added("created", key, candidate.kind, memory_id, confidence, tuple(problems))


def reinforce_entry(service: MemoryService, memory_id: str) -> RememberResult:
    """Write an experience again exactly as it is, which the memory service counts as a
    reinforcement (reinforce_count + 1, nothing else changes)."""
    entry = service.get(memory_id)
    return service.remember(
        entry["body"],
        kind=entry["kind"],
        key=entry["key"],
        title=entry["title"],
        tags=entry["tags"],
        context=entry["context"],
        scope=entry["scope"],
    )


def reinforce_experience(
    service: MemoryService,
    experience: str,
    *,
    graph: TaskGraph | None = None,
    run_id: str | None = None,
) -> dict[str, Any]:
    """Confirm an experience (by key or memory id): reinforce its memory entry, count the
    confirmation on its graph node and, with `run_id`, link that run's episode to it.
    Returns `{key, id, action}`: `reinforced`, or `not_found` when it is not active."""
    key, entry = _resolve(service, experience)
    if entry is None or entry.get("archived"):
        return {"key": key, "id": None, "action": "not_found"}
    reinforce_entry(service, entry["id"])
    if graph is not None and key is not None:
        node = graph.node(key)
        if node is not None:
            now = graph.clock()
            confirmations = int(node.metadata.get("confirmations", 0)) + 1
            graph.store.set_metadata(key, {"confirmations": confirmations})
            graph.store.update_node_weights({key: _restore(now)})
            if run_id is not None:
                _link(graph, episode_node_id(run_id), key, run_id, now, {"action": "confirmed"})
    return {"key": key, "id": entry["id"], "action": "reinforced"}


def retire_experience(
    service: MemoryService,
    experience: str,
    *,
    reason: str,
    graph: TaskGraph | None = None,
) -> dict[str, Any]:
    """Retire an experience (by key or memory id): archive its memory entry (recall skips it;
    `history` keeps it) and mark its graph node retired, so the rule that found it cannot
    store it again. Returns `{key, id, action}`: `retired` or `not_found`."""
    key, entry = _resolve(service, experience)
    retired_id = None
    if entry is not None and not entry.get("archived"):
        service.forget(entry["id"], reason=_cut(f"retired: {reason}", 200), scope=entry["scope"])
        retired_id = entry["id"]
    node = graph.node(key) if graph is not None and key is not None else None
    if graph is not None and node is not None:
        graph.store.set_metadata(
            node.node_id,
            {"status": RETIRED, "retired_reason": _cut(reason, 200), "retired_at": graph.clock()},
        )
    if retired_id is None and node is None:
        return {"key": key, "id": None, "action": "not_found"}
    return {"key": key, "id": retired_id, "action": "retired"}


def promote_candidate(
    service: MemoryService,
    graph: TaskGraph,
    key: str,
    *,
    confidence: float = MAX_CONFIDENCE,
    refiner: Refiner | None = None,
) -> Added | None:
    """Store a graph-only candidate that someone confirmed (good feedback on its run)."""
    node = graph.node(key)
    if node is None or node.metadata.get("status") != CANDIDATE:
        return None
    candidate = Candidate.from_json(node.metadata.get("candidate") or {})
    stored, memory_id, problems = _store(
        service, replace(candidate, confidence=confidence), key, refiner
    )
    _record(graph, key, candidate, stored, STORED, confidence, memory_id, "promoted")
    return Added("created", key, candidate.kind, memory_id, confidence, tuple(problems))


def recall_experiences(
    service: MemoryService, task: str, limit: int = 5, *, kind: ExperienceKind | None = None
) -> list[dict[str, Any]]:
    """The active experiences that best match `task` (ranked recall over knowledge entries
    tagged `experience`, and `kind` if given), as the memory service returns them."""
    tags = [EXPERIENCE_TAG] + ([kind] if kind else [])
    found = service.recall(task, kind="knowledge", tags=tags, limit=limit)
    return [hit.to_json() for hit in found.hits]


def experiences_of_run(graph: TaskGraph, run_id: str) -> list[Node]:
    """The EXPERIENCE nodes a run produced, repeated, confirmed or was blocked by."""
    return [link.node for link in experience_links(graph, run_id)]


def experience_links(graph: TaskGraph, run_id: str) -> list[Neighbour]:
    """The same nodes with the edges from the run's episode that link them."""
    return [
        neighbour
        for neighbour in graph.neighbours(episode_node_id(run_id), EdgeType.REFERENCE, "out")
        if neighbour.node.node_type is NodeType.EXPERIENCE
    ]


def _store(
    service: MemoryService, candidate: Candidate, key: str, refiner: Refiner | None
) -> tuple[Candidate, str, list[str]]:
    problems: list[str] = []
    final = candidate
    if refiner is not None:
        final, problem = refiner.refine(candidate, service.workspace)
        if problem is not None:
            problems.append(problem)
    source = {"reason": f"experience:{final.trigger}"}
    if final.evidence.run_id is not None:
        source["run"] = final.evidence.run_id
    # Derived from runs' data, which may hold lone surrogates the memory service refuses: they
    # are kept as their escapes.
    written = service.remember(
        escape_lone_surrogates(final.body()),
        kind="knowledge",
        key=key,
        title=escape_lone_surrogates(final.title),
        tags=[escape_lone_surrogates(tag) for tag in final.tags()],
        context=escape_lone_surrogates(final.task) if final.task else None,
        source=source,
    )
    return final, written.id, problems


def _similar_entry(service: MemoryService, candidate: Candidate) -> dict[str, Any] | None:
    tags = [EXPERIENCE_TAG, candidate.kind]
    if candidate.signature:
        tags.append(signature_tag(candidate.signature))
    results = [
        hit.to_json()
        for hit in service.recall(
            "", kind="knowledge", tags=tags, limit=DEDUP_POOL, body_chars=1_000_000
        ).hits
    ]
    best: dict[str, Any] | None = None
    best_score = SIMILAR
    for result in results:
        if candidate.signature is None and any(tag.startswith("task:") for tag in result["tags"]):
            continue
        score = similarity(candidate.lesson, lesson_of(result["body"]))
        if score >= best_score and (best is None or score > best_score):
            best, best_score = result, score
    return best


def _similar_node(graph: TaskGraph, candidate: Candidate) -> Node | None:
    best: Node | None = None
    best_score = SIMILAR
    for node in graph.nodes(NodeType.EXPERIENCE):
        metadata = node.metadata
        if metadata.get("kind") != candidate.kind or metadata.get("signature") != (
            candidate.signature
        ):
            continue
        score = max(
            similarity(candidate.lesson, str(metadata.get(name) or ""))
            for name in ("lesson", "rule_lesson")
        )
        if score >= best_score and (best is None or score > best_score):
            best, best_score = node, score
    return best


def _corroborates(node: Node, candidate: Candidate) -> bool:
    """Whether a repeat adds weight: always, except for an error no rule explains, which counts
    only on an input the candidate has not failed on before (the same input failing twice
    says nothing about the task)."""
    if candidate.cause != _UNKNOWN.name or candidate.input_digest is None:
        return True
    return candidate.input_digest not in (node.metadata.get("inputs") or ())


def _as_stored(candidate: Candidate, entry: Mapping[str, Any]) -> Candidate:
    """The candidate with the texts its stored twin has (what the graph node shows)."""
    body = str(entry["body"])
    when = body.split("\n\nWhen to apply: ", 1)[-1].split("\n\n", 1)[0]
    return replace(candidate, title=str(entry["title"]), lesson=lesson_of(body), when=when)


def active_entry(service: MemoryService, key: str) -> dict[str, Any] | None:
    for version in service.history(key).versions:
        if version.status == "active":
            return version.to_json()
    return None


def _archived(service: MemoryService, key: str) -> bool:
    """Whether memory holds the key only as archived versions: someone forgot or retired it
    there (a key memory never saw, as after switching databases, is not archived)."""
    versions = service.history(key).versions
    return bool(versions) and all(version.status != "active" for version in versions)


def _resolve(service: MemoryService, experience: str) -> tuple[str | None, dict[str, Any] | None]:
    """(key, the active entry or the entry named) for a key or a memory id."""
    if experience.startswith("experience:"):
        return experience, active_entry(service, experience)
    entry = service.get(experience).to_json()
    return entry.get("key"), entry


def _counted(graph: TaskGraph, key: str, run_id: str) -> bool:
    return bool(
        graph.store.edges(source=episode_node_id(run_id), target=key, edge_type=EdgeType.REFERENCE)
    )


def _record(
    graph: TaskGraph,
    key: str,
    candidate: Candidate,
    stored: Candidate | None,
    status: str,
    confidence: float,
    memory_id: str | None,
    action: str,
) -> None:
    """Create or update the EXPERIENCE node `key` and link the candidate's run to it."""
    now = graph.clock()
    run_id = candidate.evidence.run_id
    node = graph.node(key)
    updates: dict[str, Any] = {"status": status, "confidence": round(confidence, 3)}
    if memory_id is not None:
        updates["memory_id"] = memory_id
    if candidate.input_digest is not None:
        seen = list((node.metadata.get("inputs") or []) if node is not None else [])
        if candidate.input_digest not in seen:
            updates["inputs"] = [*seen, candidate.input_digest][-RUNS_KEPT:]
    if stored is not None:
        updates.update(title=stored.title, lesson=stored.lesson, when=stored.when)
    if node is None:
        shown = stored or candidate
        metadata: dict[str, Any] = {
            "kind": candidate.kind,
            "trigger": candidate.trigger,
            "signature": candidate.signature,
            "title": shown.title,
            "lesson": shown.lesson,
            "rule_lesson": candidate.lesson,
            "when": shown.when,
            "cause": candidate.cause,
            "tools": list(candidate.tools),
            "candidate": candidate.to_json(),
            "memory_id": None,
            "runs": [run_id] if run_id else [],
            "run_count": 1 if run_id else 0,
            "reinforced": 0,
            "confirmations": 0,
            **updates,
        }
        graph.store.add(
            [Node(key, NodeType.EXPERIENCE, None, 0, shown.title, now, 1.0, now, metadata)], []
        )
    else:
        runs = list(node.metadata.get("runs") or [])
        if run_id is not None and run_id not in runs:
            updates["runs"] = [*runs, run_id][-RUNS_KEPT:]
            updates["run_count"] = int(node.metadata.get("run_count", 0)) + 1
        if action == "reinforced":
            updates["reinforced"] = int(node.metadata.get("reinforced", 0)) + 1
        graph.store.set_metadata(key, updates)
        if action in ("reinforced", "promoted", "created"):
            graph.store.update_node_weights({key: _restore(now)})
    if run_id is not None:
        _link(
            graph,
            episode_node_id(run_id),
            key,
            run_id,
            now,
            {"action": action, "trigger": candidate.trigger},
        )


def _link(
    graph: TaskGraph,
    source: str,
    target: str,
    run_id: str,
    at: float,
    metadata: dict[str, Any],
    edge_type: EdgeType = EdgeType.REFERENCE,
) -> None:
    """Add an edge unless it exists (an edge key is unique whichever run made it). Links to
    experiences fade with them, not with the run."""
    if graph.store.edges(source=source, target=target, edge_type=edge_type):
        return
    edge = Edge(
        source,
        target,
        edge_type,
        run_id,
        at,
        weight_at=at,
        half_life=HALF_LIVES[NodeType.EXPERIENCE],
        metadata=metadata,
    )
    graph.store.add([], [edge])


def _restore(at: float) -> Callable[[float, float], tuple[float, float]]:
    def step(weight: float, weight_at: float) -> tuple[float, float]:
        return strengthened(weight, weight_at, HALF_LIVES[NodeType.EXPERIENCE], at, REINFORCE_RATE)

    return step


def link_correction(graph: TaskGraph, retired: str, correction: str, run_id: str) -> None:
    """Record that `correction` replaced the retired experience `retired` (bad feedback)."""
    now = graph.clock()
    _link(graph, retired, correction, run_id, now, {"action": "corrected"}, EdgeType.CAUSAL)
    graph.store.set_metadata(retired, {"corrected_by": correction})


# ----------------------------------------------------------------------------- one run


@dataclass(slots=True)
class LearnReport:
    """What learning from one run did, kept on its EPISODE node as `learning`."""

    run_id: str
    results: list[tuple[Candidate, Added]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # The run had been learned before: nothing was done again.
    skipped: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "experiences": [
                {**added.to_json(), "trigger": candidate.trigger}
                for candidate, added in self.results
            ],
            "problems": list(self.problems),
        }


def learn_from_run(
    service: MemoryService,
    graph: TaskGraph,
    run: RunRecord,
    trace: TaskExecutionTrace,
    entries: Sequence[JournalEntry],
    *,
    refiner: Refiner | None = None,
) -> LearnReport:
    """Distil a finished run (already in `graph`) and store what it teaches; a tool chain that
    has now worked PROCEDURE_AFTER times becomes a procedure too. A run whose EPISODE already
    carries a `learning` record is skipped, so learning twice never asks a model twice."""
    report = LearnReport(run.run_id)
    episode = graph.node(episode_node_id(run.run_id))
    if episode is None:
        report.problems.append(f"Run {run.run_id} is not in the task graph; nothing was learned")
        return report
    if "learning" in episode.metadata:
        report.skipped = True
        return report
    for candidate in distil(run, trace, entries, graph):
        added = add_experience(service, candidate, graph=graph, refiner=refiner)
        report.results.append((candidate, added))
        report.problems.extend(added.problems)
        if candidate.kind != "success" or not candidate.tools:
            continue
        node = graph.node(added.key)
        if (
            node is None
            or node.metadata.get("status") != STORED
            or int(node.metadata.get("run_count", 0)) < PROCEDURE_AFTER
        ):
            continue
        procedure = procedure_candidate(run, trace)
        if procedure is not None:
            done = add_experience(service, procedure, graph=graph, refiner=refiner)
            report.results.append((procedure, done))
            report.problems.extend(done.problems)
    graph.store.set_metadata(episode.node_id, {"learning": report.to_json()})
    return report
