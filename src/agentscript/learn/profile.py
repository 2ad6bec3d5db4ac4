"""An agent's profile: how it feels, what it wants, what it believes and what it noted down.

One profile per agent (a program's entry agent) and workspace, kept in
`<workspace>/.agentscript/profiles/<agent>.json`, with every change appended to
`<agent>.history.jsonl` (time, operation, who, why, before and after). It changes only through
validated operations (`ProfileStore.apply`), one at a time, under a cross-process lock, so a
reflection, an autonomous run and a person can all write to it without losing a change, and a
model can never rewrite it wholesale.

Emotions drift back to their baselines: a stored value is true at its timestamp and decays as
`baseline + (value − baseline) · e^(−rate · days)`. A change first decays the stored value to
now, then adds the delta, then stores the result with the new time; adding onto a stale value
would make feelings from last week count at full strength. Desires fade the same way:
effective strength = intensity · 0.5^(days since the later of their last update and their
last activity / the half-life of their horizon).
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from agentscript.learn.locks import file_lock
from agentscript.learn.sensitive import summarise, summarise_text
from agentscript.runtime.errors import AgentScriptError

if TYPE_CHECKING:
    from agentscript.memory.service import MemoryService

PROFILES_DIR = Path(".agentscript") / "profiles"
PROFILE_FORMAT = 1
DAY_SECONDS = 86_400.0

# Where each emotion rests and how fast (per day) it returns there: a deviation halves every
# ln 2 / rate days (curiosity after ~14 days, frustration after ~1.7, weariness after ~1.4).
EMOTION_BASELINES: dict[str, float] = {
    "curiosity": 0.6,
    "contentment": 0.5,
    "weariness": 0.0,
    "affection": 0.3,
    "pride": 0.0,
    "frustration": 0.0,
    "awe": 0.2,
}
EMOTION_RATES: dict[str, float] = {
    "curiosity": 0.05,
    "contentment": 0.10,
    "weariness": 0.50,
    "affection": 0.02,
    "pride": 0.30,
    "frustration": 0.40,
    "awe": 0.20,
}
# An emotion the agent names itself rests at 0 and returns at this rate.
FALLBACK_RATE = 0.1
# One feeling moves an emotion at most this far: a single run is not a change of character.
MAX_FEEL_DELTA = 0.4
MAX_EMOTIONS = 16
EMOTION_EVENTS_KEPT = 50
JOURNAL_KEPT = 100
MAX_OPEN_DESIRES = 24
MAX_OPINIONS = 64
MAX_EVIDENCE = 8
# A desire's half-life in days by horizon: a passing spark, a season's project, a lifelong aim.
HALF_LIFE_DAYS: dict[str, float] = {"spark": 3.0, "season": 30.0, "enduring": 365.0}
DEFAULT_INTENSITY = 0.6

Horizon = Literal["spark", "season", "enduring"]
Pursuit = Literal["self", "needs-user"]
Outcome = Literal["fulfilled", "abandoned", "transformed"]
PROFILE_OPERATIONS = ("feel", "desire_add", "desire_update", "opinion_form", "journal")

_AGENT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def _lowered(value: object) -> object:
    """Slugs and emotion names compare case-insensitively: `Curiosity` is `curiosity`."""
    return value.strip().lower() if isinstance(value, str) else value


Slug = Annotated[
    str, BeforeValidator(_lowered), StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")
]
EmotionName = Annotated[
    str, BeforeValidator(_lowered), StringConstraints(pattern=r"^[a-z][a-z_-]{0,31}$")
]

Line200 = Annotated[str, StringConstraints(strip_whitespace=True, min_length=3, max_length=200)]
Line300 = Annotated[str, StringConstraints(strip_whitespace=True, min_length=3, max_length=300)]
Line400 = Annotated[str, StringConstraints(strip_whitespace=True, min_length=3, max_length=400)]
Line600 = Annotated[str, StringConstraints(strip_whitespace=True, min_length=3, max_length=600)]
Text2000 = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]


class ProfileError(AgentScriptError):
    """A profile cannot be read or written, or an agent name cannot name one."""


# ----------------------------------------------------------------------------- the maths


def decay_emotion(value: float, baseline: float, rate: float, days: float) -> float:
    """`value`, stored `days` ago, as it is now: the deviation from `baseline` shrinks by
    e^(−rate · days). A value is exact at its own time (days ≤ 0 leave it as it is)."""
    if days <= 0:
        return value
    return baseline + (value - baseline) * math.exp(-rate * days)


def emotion_half_life(rate: float) -> float:
    """Days for a deviation from the baseline to halve: ln 2 / rate."""
    return math.log(2) / rate


def desire_strength(intensity: float, horizon: Horizon, days: float) -> float:
    """intensity · 0.5^(days / half-life of the horizon)."""
    return intensity * math.pow(0.5, max(days, 0.0) / HALF_LIFE_DAYS[horizon])


def _clamp(value: float) -> float:
    return max(-1.0, min(1.0, value))


# ----------------------------------------------------------------------------- what is stored

_STORED = ConfigDict(extra="forbid")


class EmotionState(BaseModel):
    """An emotion's value as it was at `at`."""

    model_config = _STORED
    value: float
    at: float


class EmotionEvent(BaseModel):
    model_config = _STORED
    at: float
    emotion: str
    delta: float
    value: float
    trigger: str


class Closure(BaseModel):
    model_config = _STORED
    outcome: Outcome
    at: float
    reflection: str


class Desire(BaseModel):
    """Something the agent wants. `prompt` is what an autonomous run is told to pursue it;
    `active_at` when something was last done for it (a desire worked on does not fade)."""

    model_config = _STORED
    slug: str
    what: str
    why: str
    actionable: bool = False
    pursuit: Pursuit = "self"
    horizon: Horizon = "season"
    intensity: float = DEFAULT_INTENSITY
    born_at: float
    updated_at: float
    active_at: float | None = None
    closed: Closure | None = None
    prompt: str | None = None
    # For a `needs-user` desire: what the user can do for it (what the agent was refused, and
    # the command that does it with the user's approval).
    needs: str | None = None

    @property
    def touched_at(self) -> float:
        return max(self.updated_at, self.active_at or self.updated_at)

    def strength(self, now: float) -> float:
        return desire_strength(self.intensity, self.horizon, (now - self.touched_at) / DAY_SECONDS)

    def describe(self) -> str:
        flags = [self.horizon, self.pursuit, f"intensity {self.intensity:.2f}"]
        if self.actionable:
            flags.append("actionable")
        if self.closed is not None:
            flags.append(f"closed {self.closed.outcome}")
        return f"desire {self.slug}: {self.what} ({', '.join(flags)})"


class Opinion(BaseModel):
    model_config = _STORED
    slug: str
    stance: str
    confidence: float
    evidence: list[str] = Field(default_factory=list)
    formed_at: float
    updated_at: float

    def describe(self) -> str:
        return f"opinion {self.slug}: {self.stance} (confidence {self.confidence:.2f})"


class JournalLine(BaseModel):
    model_config = _STORED
    at: float
    text: str


@dataclass(frozen=True, slots=True)
class DesireView:
    """An open desire as a reader needs it, with its effective strength now."""

    slug: str
    what: str
    strength: float
    actionable: bool
    pursuit: Pursuit
    horizon: Horizon
    prompt: str | None
    needs: str | None = None

    def user_action(self) -> str:
        """What the user can do for a desire that waits for them: its `needs`, else its
        prompt, else a generic way out."""
        if self.needs:
            return self.needs
        if self.prompt:
            return f"ask: {self.prompt}"
        return "do it with the agent in an attended run, or close the desire"


class Profile(BaseModel):
    """One agent's profile as stored; `revision` counts the changes ever applied."""

    model_config = _STORED
    format: int = PROFILE_FORMAT
    agent: str
    revision: int = 0
    updated_at: float | None = None
    emotions: dict[str, EmotionState] = Field(default_factory=dict)
    emotion_events: list[EmotionEvent] = Field(default_factory=list)
    desires: list[Desire] = Field(default_factory=list)
    opinions: list[Opinion] = Field(default_factory=list)
    journal: list[JournalLine] = Field(default_factory=list)

    def emotion(self, name: str, now: float) -> float:
        """An emotion's value now: its stored value decayed, or its baseline if never felt."""
        baseline = EMOTION_BASELINES.get(name, 0.0)
        state = self.emotions.get(name)
        if state is None:
            return baseline
        rate = EMOTION_RATES.get(name, FALLBACK_RATE)
        return decay_emotion(state.value, baseline, rate, (now - state.at) / DAY_SECONDS)

    def emotions_at(self, now: float) -> dict[str, float]:
        """Every emotion (the baseline ones, then those the agent named) with its value now."""
        names = [*EMOTION_BASELINES, *sorted(set(self.emotions) - set(EMOTION_BASELINES))]
        return {name: self.emotion(name, now) for name in names}

    def open_desires(self, now: float) -> list[DesireView]:
        """Open desires, strongest first (then the most recently touched, then by slug)."""
        desires = [desire for desire in self.desires if desire.closed is None]
        desires.sort(key=lambda d: (-d.strength(now), -d.touched_at, d.slug))
        return [
            DesireView(
                slug=desire.slug,
                what=desire.what,
                strength=desire.strength(now),
                actionable=desire.actionable,
                pursuit=desire.pursuit,
                horizon=desire.horizon,
                prompt=desire.prompt,
                needs=desire.needs if desire.pursuit == "needs-user" else None,
            )
            for desire in desires
        ]

    def needs_user(self, now: float) -> list[DesireView]:
        """Open desires the agent cannot pursue alone: they wait for the user."""
        return [view for view in self.open_desires(now) if view.pursuit == "needs-user"]

    def desire(self, slug: str) -> Desire | None:
        return next((desire for desire in self.desires if desire.slug == slug), None)

    def opinion(self, slug: str) -> Opinion | None:
        return next((opinion for opinion in self.opinions if opinion.slug == slug), None)


# ----------------------------------------------------------------------------- operations

_OPERATION = ConfigDict(extra="forbid")


class FeelOperation(BaseModel):
    """Move one emotion by `delta`, saying what caused it (first person)."""

    model_config = _OPERATION
    op: Literal["feel"]
    emotion: EmotionName
    delta: Annotated[float, Field(ge=-MAX_FEEL_DELTA, le=MAX_FEEL_DELTA)]
    trigger: Line200


class DesireAddOperation(BaseModel):
    model_config = _OPERATION
    op: Literal["desire_add"]
    slug: Slug
    what: Line200
    why: Line400
    actionable: bool = False
    pursuit: Pursuit = "self"
    horizon: Horizon = "season"
    intensity: Annotated[float, Field(gt=0.0, le=1.0)] = DEFAULT_INTENSITY
    prompt: Line600 | None = None


class CloseDesire(BaseModel):
    model_config = _OPERATION
    outcome: Outcome
    reflection: Line400


class DesireUpdateOperation(BaseModel):
    """Revise a desire's fields, record progress on it (`progress`), or close it."""

    model_config = _OPERATION
    op: Literal["desire_update"]
    slug: Slug
    what: Line200 | None = None
    why: Line400 | None = None
    actionable: bool | None = None
    pursuit: Pursuit | None = None
    horizon: Horizon | None = None
    intensity: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    prompt: Line600 | None = None
    progress: Line400 | None = None
    # What the user can do for it (with pursuit `needs-user`); null clears it.
    needs: Line600 | None = None
    close: CloseDesire | None = None

    @model_validator(mode="after")
    def _changes_something(self) -> DesireUpdateOperation:
        if not self.model_fields_set - {"op", "slug"}:
            raise ValueError("desire_update needs at least one field to change")
        for name in ("what", "why", "actionable", "pursuit", "horizon", "intensity"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} cannot be null")
        return self


class OpinionFormOperation(BaseModel):
    """Form an opinion, or revise the one with this slug."""

    model_config = _OPERATION
    op: Literal["opinion_form"]
    slug: Slug
    stance: Line300
    confidence: Annotated[float, Field(ge=0.0, le=1.0)]
    evidence: Annotated[list[Line200], Field(max_length=MAX_EVIDENCE)] = Field(default_factory=list)


class JournalOperation(BaseModel):
    model_config = _OPERATION
    op: Literal["journal"]
    text: Text2000


ProfileOperation = Annotated[
    FeelOperation
    | DesireAddOperation
    | DesireUpdateOperation
    | OpinionFormOperation
    | JournalOperation,
    Field(discriminator="op"),
]
_OPERATIONS: TypeAdapter[ProfileOperation] = TypeAdapter(ProfileOperation)


def describe_validation(error: ValidationError, tags: Sequence[str] = PROFILE_OPERATIONS) -> str:
    """Pydantic's errors as `field: message` pairs, without the union's tag (one of `tags`),
    links or inputs."""
    parts = []
    for problem in error.errors(include_url=False, include_input=False):
        location = [str(part) for part in problem["loc"]]
        if location and location[0] in tags:
            location = location[1:]
        message = str(problem["msg"]).removeprefix("Value error, ")
        parts.append(f"{'.'.join(location)}: {message}" if location else message)
    return "; ".join(parts)


def operation_kind(operation: object) -> str:
    """The `op` of an operation, or "?" when it has none."""
    if isinstance(operation, dict) and isinstance(operation.get("op"), str):
        return str(operation["op"])
    return "?"


def parse_profile_operation(operation: object) -> ProfileOperation:
    """The validated operation; ValueError saying what is wrong with it."""
    kind = operation_kind(operation)
    if not isinstance(operation, dict):
        raise ValueError("an operation must be a JSON object")
    if kind not in PROFILE_OPERATIONS:
        raise ValueError(
            f"unknown profile operation {kind!r} (known: {', '.join(PROFILE_OPERATIONS)})"
        )
    try:
        return _OPERATIONS.validate_python(operation)
    except ValidationError as error:
        raise ValueError(describe_validation(error)) from None


@dataclass(frozen=True, slots=True)
class ApplyResult:
    """What one operation did: `ok` with the before/after summaries (`message`: "before →
    after", or after alone for something new) and the profile's new revision, or not `ok`
    with `message` saying why nothing changed."""

    ok: bool
    op: str
    message: str
    before: str | None = None
    after: str | None = None
    revision: int | None = None


class _Refused(Exception):
    """A valid operation that this profile cannot take (an unknown slug, a limit reached)."""


# ----------------------------------------------------------------------------- the store


class ProfileStore:
    """The profiles of one workspace. Reads need no lock (a profile is replaced atomically);
    every change is one locked read-change-write that is also appended to the history."""

    def __init__(self, workspace: Path, clock: Callable[[], float] = time.time) -> None:
        self.workspace = Path(workspace)
        self.clock = clock
        self.directory = self.workspace / PROFILES_DIR

    def path(self, agent: str) -> Path:
        return self.directory / f"{_agent(agent)}.json"

    def history_path(self, agent: str) -> Path:
        return self.directory / f"{_agent(agent)}.history.jsonl"

    def lock_path(self, agent: str) -> Path:
        return self.directory / f"{_agent(agent)}.lock"

    def agents(self) -> list[str]:
        """The agents that have a profile here, by name."""
        if not self.directory.is_dir():
            return []
        return sorted(path.stem for path in self.directory.glob("*.json"))

    def load(self, agent: str) -> Profile:
        """The agent's profile; a new one (every emotion at its baseline) if it has none."""
        path = self.path(agent)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return Profile(agent=agent)
        except OSError as error:
            raise ProfileError(f"Cannot read the profile {path}: {error.strerror}") from None
        try:
            profile = Profile.model_validate(json.loads(text))
        except (ValueError, ValidationError) as error:
            detail = describe_validation(error) if isinstance(error, ValidationError) else error
            raise ProfileError(f"The profile {path} is not valid: {detail}") from None
        if profile.agent != agent:
            raise ProfileError(f"The profile {path} belongs to {profile.agent!r}, not {agent!r}")
        return profile

    def apply(self, agent: str, operation: dict[str, Any], who: str, why: str) -> ApplyResult:
        """Validate one operation and apply it: the profile is written and the change appended
        to the history, both under the agent's lock. An invalid or refused operation changes
        nothing and says why; failing to read, lock or write the profile raises."""
        kind = operation_kind(operation)
        _agent(agent)
        try:
            parsed = parse_profile_operation(operation)
        except ValueError as problem:
            return ApplyResult(False, kind, str(problem))
        who_text = _line(who, "who")
        why_text = _line(why, "why")
        with file_lock(self.lock_path(agent)):
            profile = self.load(agent)
            now = self.clock()
            try:
                before, after = _APPLY[parsed.op](profile, parsed, now, self._clean)
            except _Refused as refused:
                return ApplyResult(False, kind, str(refused))
            profile.revision += 1
            profile.updated_at = now
            self._write(profile)
            self._append(
                agent,
                {
                    "at": now,
                    "revision": profile.revision,
                    "agent": agent,
                    "op": parsed.op,
                    "who": who_text,
                    "why": why_text,
                    "before": before,
                    "after": after,
                    "operation": summarise(
                        parsed.model_dump(mode="json", exclude_unset=True),
                        self.workspace,
                        preview=2000,
                    ),
                },
            )
        message = after if before is None else f"{before} → {after}"
        return ApplyResult(True, kind, message, before, after, profile.revision)

    def history(self, agent: str) -> list[dict[str, Any]]:
        """Every recorded change, oldest first (a line cut short by a crash is skipped)."""
        path = self.history_path(agent)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        changes = []
        for line in lines:
            try:
                change = json.loads(line)
            except ValueError:
                continue
            if isinstance(change, dict):
                changes.append(change)
        return changes

    def _clean(self, text: str, limit: int) -> str:
        """Text as a profile keeps it: no secret, no path outside the workspace, cut."""
        return summarise_text(text.strip(), self.workspace, limit)

    def _write(self, profile: Profile) -> None:
        path = self.path(profile.agent)
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        temporary.write_text(profile.model_dump_json(indent=2), encoding="utf-8")
        os.replace(temporary, path)

    def _append(self, agent: str, change: dict[str, Any]) -> None:
        line = json.dumps(change, ensure_ascii=False, separators=(",", ":"))
        with self.history_path(agent).open("a", encoding="utf-8") as history:
            history.write(line + "\n")


def _agent(agent: str) -> str:
    if not isinstance(agent, str) or not _AGENT_NAME.match(agent):
        raise ProfileError(f"{agent!r} is not an agent name (letters, digits and _)")
    return agent


def _line(text: str, name: str) -> str:
    line = " ".join(str(text).split())[:200]
    if not line:
        raise ProfileError(f"A profile change needs a non-empty {name}")
    return line


# ----------------------------------------------------------------------------- applying

Clean = Callable[[str, int], str]
Change = tuple[str | None, str]


def _feel(profile: Profile, op: FeelOperation, now: float, clean: Clean) -> Change:
    known = set(EMOTION_BASELINES) | set(profile.emotions)
    if op.emotion not in known and len(known) >= MAX_EMOTIONS:
        raise _Refused(f"an agent has at most {MAX_EMOTIONS} emotions; feel one of them")
    before = profile.emotion(op.emotion, now)
    after = _clamp(before + op.delta)
    profile.emotions[op.emotion] = EmotionState(value=after, at=now)
    profile.emotion_events.append(
        EmotionEvent(
            at=now, emotion=op.emotion, delta=op.delta, value=after, trigger=clean(op.trigger, 200)
        )
    )
    del profile.emotion_events[:-EMOTION_EVENTS_KEPT]
    return f"{op.emotion} {before:.2f}", f"{op.emotion} {after:.2f}"


def _desire_add(profile: Profile, op: DesireAddOperation, now: float, clean: Clean) -> Change:
    existing = profile.desire(op.slug)
    if existing is not None and existing.closed is None:
        raise _Refused(f"desire {op.slug} is already open: use desire_update")
    if sum(desire.closed is None for desire in profile.desires) >= MAX_OPEN_DESIRES:
        raise _Refused(f"{MAX_OPEN_DESIRES} desires are open: close one before adding another")
    desire = Desire(
        slug=op.slug,
        what=clean(op.what, 200),
        why=clean(op.why, 400),
        actionable=op.actionable,
        pursuit=op.pursuit,
        horizon=op.horizon,
        intensity=op.intensity,
        born_at=now,
        updated_at=now,
        prompt=clean(op.prompt, 600) if op.prompt is not None else None,
    )
    if existing is not None:
        profile.desires[profile.desires.index(existing)] = desire
    else:
        profile.desires.append(desire)
    return (existing.describe() if existing is not None else None), desire.describe()


def _desire_update(profile: Profile, op: DesireUpdateOperation, now: float, clean: Clean) -> Change:
    desire = profile.desire(op.slug)
    if desire is None:
        raise _Refused(f"no desire {op.slug}: use desire_add")
    if desire.closed is not None:
        raise _Refused(f"desire {op.slug} is closed ({desire.closed.outcome})")
    before = desire.describe()
    given = op.model_fields_set
    if op.what is not None:
        desire.what = clean(op.what, 200)
    if op.why is not None:
        desire.why = clean(op.why, 400)
    if op.actionable is not None:
        desire.actionable = op.actionable
    if op.pursuit is not None:
        desire.pursuit = op.pursuit
    if op.horizon is not None:
        desire.horizon = op.horizon
    if op.intensity is not None:
        desire.intensity = op.intensity
    if "prompt" in given:
        desire.prompt = clean(op.prompt, 600) if op.prompt is not None else None
    if "needs" in given:
        desire.needs = clean(op.needs, 600) if op.needs is not None else None
    if given - {"op", "slug", "progress"}:
        desire.updated_at = now
    after = desire.describe()
    if op.progress is not None:
        desire.active_at = now
        after += f"; progress: {clean(op.progress, 400)}"
    if op.close is not None:
        desire.closed = Closure(
            outcome=op.close.outcome, at=now, reflection=clean(op.close.reflection, 400)
        )
        after = desire.describe() + f"; {clean(op.close.reflection, 400)}"
    return before, after


def _opinion_form(profile: Profile, op: OpinionFormOperation, now: float, clean: Clean) -> Change:
    existing = profile.opinion(op.slug)
    if existing is None and len(profile.opinions) >= MAX_OPINIONS:
        raise _Refused(f"an agent holds at most {MAX_OPINIONS} opinions: revise one instead")
    opinion = Opinion(
        slug=op.slug,
        stance=clean(op.stance, 300),
        confidence=op.confidence,
        evidence=[clean(item, 200) for item in op.evidence],
        formed_at=existing.formed_at if existing is not None else now,
        updated_at=now,
    )
    if existing is not None:
        profile.opinions[profile.opinions.index(existing)] = opinion
    else:
        profile.opinions.append(opinion)
    return (existing.describe() if existing is not None else None), opinion.describe()


def _journal(profile: Profile, op: JournalOperation, now: float, clean: Clean) -> Change:
    text = clean(op.text, 2000)
    profile.journal.append(JournalLine(at=now, text=text))
    del profile.journal[:-JOURNAL_KEPT]
    return None, f"journal: {_cut(' '.join(text.split()), 120)}"


_APPLY: dict[str, Callable[[Profile, Any, float, Clean], Change]] = {
    "feel": _feel,
    "desire_add": _desire_add,
    "desire_update": _desire_update,
    "opinion_form": _opinion_form,
    "journal": _journal,
}


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# ----------------------------------------------------------------------------- needs you


def needs_you_key(agent: str) -> str:
    return f"needs-you:{agent}"


def sync_needs_you(service: MemoryService, profile: Profile, now: float) -> str:
    """Make the workspace's `needs-you:<agent>` fact list the agent's open needs-user desires,
    so the memory digest (which shows entries tagged ATTENTION_TAG first) tells the user. Returns the
    memory's action: created, updated, merged (unchanged), forgotten, or none (nothing to say
    and nothing said before)."""
    from agentscript.memory.service import ATTENTION_TAG

    key = needs_you_key(profile.agent)
    waiting = profile.needs_user(now)
    scope = service.workspace
    versions = service.history(key, scope=scope).versions
    active = next((version.entry for version in versions if version.status == "active"), None)
    if not waiting:
        if active is None:
            return "none"
        service.forget(active.id, reason="no desire needs the user now", scope=active.scope)
        return "forgotten"
    title = _cut("needs you: " + "; ".join(view.what for view in waiting), 200)
    lines = []
    for view in waiting:
        lines.append(
            f"- needs you: {view.what} (desire {view.slug} of {profile.agent}; "
            f"{view.user_action()})"
        )
    written = service.remember(
        "\n".join(lines),
        kind="fact",
        key=key,
        title=title,
        tags=[ATTENTION_TAG, f"agent:{profile.agent}"],
        scope=scope,
        source={"reason": "profile needs-you"},
    )
    return written.action


# ----------------------------------------------------------------------------- the card

MOOD_FLOOR = 0.05
MOOD_SHOWN = 5
WANTS_SHOWN = 6
OPINIONS_SHOWN = 5
JOURNAL_SHOWN = 3


def summary_card(profile: Profile, history: Sequence[dict[str, Any]], now: float) -> list[str]:
    """The profile on one screen, for a person: what the agent needs from them, its mood, what
    it wants, what it believes, its last notes and how often it changed. Pure: the same
    profile, history and time always give the same lines."""
    lines = [f"{profile.agent} as of {_when(now)} (revision {profile.revision})"]
    lines += [
        f"needs you: {view.what} ({view.user_action()})"
        for view in profile.needs_user(now)[:WANTS_SHOWN]
    ]
    felt = profile.emotions_at(now).items()
    mood = sorted(
        (item for item in felt if abs(item[1]) >= MOOD_FLOOR), key=lambda i: (-abs(i[1]), i[0])
    )[:MOOD_SHOWN]
    lines.append("mood: " + (" · ".join(f"{n} {v:.2f}" for n, v in mood) or "calm"))
    if profile.emotion_events:
        last = profile.emotion_events[-1]
        lines.append(
            f'  last felt: {last.emotion} {last.delta:+.2f} at {_when(last.at)}: "{last.trigger}"'
        )
    wants = profile.open_desires(now)[:WANTS_SHOWN]
    lines.append("wants:" + ("" if wants else " nothing open"))
    for view in wants:
        tags = (["[actionable]"] if view.actionable else []) + (
            ["[needs you]"] if view.pursuit == "needs-user" else []
        )
        lines.append(f"  {' '.join([*tags, view.what])} ({view.strength:.2f})")
    opinions = sorted(profile.opinions, key=lambda o: (-o.updated_at, o.slug))[:OPINIONS_SHOWN]
    lines.append("believes:" + ("" if opinions else " nothing yet"))
    lines += [f"  {o.slug}: {o.stance} ({o.confidence:.2f})" for o in opinions]
    notes = profile.journal[-JOURNAL_SHOWN:]
    lines.append("journal:" + ("" if notes else " empty"))
    lines += [f"  {_when(note.at)}  {_cut(' '.join(note.text.split()), 100)}" for note in notes]
    counts = Counter(str(change.get("op")) for change in history)
    detail = ", ".join(f"{op} {count}" for op, count in sorted(counts.items()))
    lines.append(f"history: {len(history)} change{'' if len(history) == 1 else 's'}")
    if detail:
        lines[-1] += f" ({detail})"
    return lines


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")
