"""Autonomous runs: a program run unattended, read-only, on a token budget, and recorded.

An agent that works while nobody watches (an idle reflection, a heartbeat, a review of recent
runs, the pursuit of one of its own desires) must stay bounded and accountable. So every
autonomous run here

* may only read: the approval gate runs in `autonomous` mode, which refuses any call whose risk
  is not `read` instead of asking (nobody is there to answer), and such a refusal ends the run
  as `blocked`;
* spends from a token budget per window (`DEFAULT_BUDGETS` by kind, 0 for none): a run that
  exceeds it stops as `blocked` with the tokens it used, and no further task is launched;
* is classified by what it returned: `done`, `no-update` (nothing, an empty value, `{rest:
  true}` or a "(no update)" answer), `blocked` or `error`, so resting is not counted as work;
* is appended to the workspace's ledger (agentscript.learn.autonomy_ledger).

A window runs up to K tasks and stops early at the first rest. `desire` windows pursue the
entry agent's strongest open desires that it can pursue on its own (`pursuit: self`); a desire
that needs the user is never run, only reported, so the user hears about it instead of the
agent spinning on it; a pursuit refused a call is switched to `needs-user` with what the user
can do (the command that pursues it with their approval). Review, idle and heartbeat windows
are given a recap of the runs since the last window of their kind, and one window of a kind
runs in a workspace at a time (a cross-process lock), so two schedulers never both spend its
budget.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentscript.lang import ast
from agentscript.lang.checker import check_program
from agentscript.lang.errors import ParseError, SemanticError
from agentscript.learn.autonomy_ledger import (
    DAY_SECONDS,
    AutonomyRun,
    Clock,
    Ledger,
    Outcome,
    WindowKind,
    one_line,
)
from agentscript.learn.locks import LockTimeout, file_lock
from agentscript.learn.ports import WindowRunner
from agentscript.learn.profile import DesireView, ProfileStore
from agentscript.runtime.budgets import BudgetExceeded
from agentscript.runtime.errors import AgentScriptError
from agentscript.runtime.loader import load_program
from agentscript.runtime.trace import TraceEvent, TraceSink

# Tokens one window may spend, by kind (the budgets of the reference: an idle reflection is
# cheap and frequent, a heartbeat does the most work, a review or one desire is one focused task).
DEFAULT_BUDGETS: dict[WindowKind, int] = {
    "idle": 200_000,
    "heartbeat": 500_000,
    "review": 100_000,
    "desire": 100_000,
}
# What a program answers when it looked and found nothing worth doing.
NO_UPDATE_MARKER = "(no update)"
# A recap covers the runs since the last window of its kind, but never more than this.
REVIEW_LOOKBACK_SECONDS = 7 * DAY_SECONDS
# Why a window ended: it ran all its tasks, a task rested, its budget was spent, there was
# nothing to pursue, the program could not be run at all, or another window of its kind was
# running in the workspace (it ran nothing).
StopReason = Literal["window", "rest", "budget", "nothing-to-do", "unrunnable", "busy"]
# A window of one kind holds this workspace lock while it runs, so two schedulers (or two
# terminals) never both spend that kind's budget; a lock older than this is a crashed window.
WINDOW_LOCK_STALE = 6 * 3600.0
# Windows whose tasks are given a recap of the runs since the last window of their kind.
RECAP_KINDS: frozenset[WindowKind] = frozenset({"review", "idle", "heartbeat"})


@dataclass(slots=True)
class WindowReport:
    """What one window did: its runs in order, why it stopped, the desires that wait for the
    user, and the problems recording it (a ledger that could not be written)."""

    kind: WindowKind
    runs: list[AutonomyRun]
    stopped: StopReason
    budget_tokens: int | None
    needs_user: list[DesireView] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def spent_tokens(self) -> int:
        return sum(run.tokens for run in self.runs)

    @property
    def failed(self) -> bool:
        """Whether a run ended in `error` (blocked and resting runs are expected outcomes)."""
        return any(run.outcome == "error" for run in self.runs)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "runs": [run.to_json() for run in self.runs],
            "stopped": self.stopped,
            "budget_tokens": self.budget_tokens,
            "spent_tokens": self.spent_tokens,
            "needs_user": [needs_you_line(desire) for desire in self.needs_user],
            "problems": list(self.problems),
        }


def classify(value: Any) -> tuple[Outcome, str]:
    """The outcome of a run that returned `value`, and a note saying why it rested."""
    if value is None:
        return "no-update", "returned nothing"
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return "no-update", "returned an empty answer"
        if text.lower().endswith(NO_UPDATE_MARKER):
            return "no-update", NO_UPDATE_MARKER
        return "done", ""
    if isinstance(value, dict) and value.get("rest") is True:
        note = value.get("note")
        return "no-update", one_line(note) if isinstance(note, str) and note.strip() else "rest"
    if isinstance(value, dict | list) and not value:
        return "no-update", "returned an empty value"
    return "done", ""


def needs_you_line(desire: DesireView, agent: str | None = None) -> str:
    """`agent/slug: what — you can: …`, how a desire that waits for the user is listed,
    with what the user can do for it."""
    name = f"{agent}/{desire.slug}" if agent else desire.slug
    return f"{name}: {one_line(desire.what)} — you can: {one_line(desire.user_action())}"


class _Watch(TraceSink):
    """Counts a run's tool calls, and notices the calls the approval gate refused: in an
    autonomous run every call that is not a plain read is refused, and the run is blocked."""

    def __init__(self) -> None:
        self.tool_calls = 0
        self.refused = 0

    def event(self, event: TraceEvent) -> None:
        # A refused call leaves its approval and then a failed tool event: it counts once.
        if event.kind == "tool":
            self.tool_calls += 1
        elif event.kind == "approval" and event.data.get("decision") == "refused":
            self.refused += 1


@dataclass(frozen=True, slots=True)
class _Task:
    """One program run of a window: its input and, for a desire, the desire's slug."""

    input: dict[str, Any]
    name: str | None = None


def run_window(
    path: str | Path,
    kind: WindowKind,
    runner: WindowRunner,
    *,
    workspace: str | Path,
    agent: str | None = None,
    journal_file: str | Path | None = None,
    budget_tokens: int | None = None,
    window: int = 1,
    input_value: Mapping[str, Any] | None = None,
    clock: Clock = time.time,
    ledger: Ledger | None = None,
) -> WindowReport:
    """Run the program at `path` unattended with `runner`, up to `window` times, and record
    every run in the ledger of `workspace`.

    `budget_tokens` is the window's token budget (None: the kind's default, 0: no budget).
    `agent` is the entry agent (whose desires a desire window pursues) and `journal_file` the
    journal a review's recap reads (default: the workspace's). `input_value` is the program's
    input; a desire window adds its `desire` field, a review, idle or heartbeat window its
    `recap`. Only one window of a kind runs in a workspace at a time: another one that starts
    meanwhile runs nothing and stops as `busy`. Whatever goes wrong in
    the window (a program that does not load, a model that cannot be set up, a run that fails)
    is an `error` run in the report; only a bad argument raises ValueError. The runner is
    closed when the window ends.
    """
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    if budget_tokens is not None and budget_tokens < 0:
        raise ValueError(f"budget_tokens must be 0 or more, got {budget_tokens}")
    budget = DEFAULT_BUDGETS[kind] if budget_tokens is None else budget_tokens
    workspace = Path(workspace)
    run = _Window(
        runner,
        _WindowPlace(workspace, agent, Path(journal_file) if journal_file else None),
        WindowReport(kind, [], "window", budget or None),
        ledger if ledger is not None else Ledger.for_workspace(workspace, clock=clock),
        clock,
    )
    with ExitStack() as held:
        try:
            held.enter_context(
                file_lock(
                    window_lock_path(workspace, kind), timeout=0, stale_after=WINDOW_LOCK_STALE
                )
            )
        except LockTimeout as busy:
            runner.close()
            run.report.stopped = "busy"
            run.report.problems.append(f"Another {kind} window is running here: {busy}")
            return run.report
        except OSError as problem:  # like the ledger, a lock that cannot be made is reported
            run.report.problems.append(f"The {kind} window ran without its lock: {problem}")
        run.run(path, window, dict(input_value or {}))
    return run.report


def window_lock_path(workspace: Path, kind: WindowKind) -> Path:
    return workspace / ".agentscript" / "autonomy" / f"{kind}.lock"


@dataclass(frozen=True, slots=True)
class _WindowPlace:
    """Where a window works: its workspace, its entry agent and the journal it recaps."""

    workspace: Path
    agent: str | None
    journal_file: Path | None


class _Window:
    """One window's state: its runner, where it works, the report it fills and where it
    records."""

    def __init__(
        self,
        runner: WindowRunner,
        place: _WindowPlace,
        report: WindowReport,
        ledger: Ledger,
        clock: Clock,
    ) -> None:
        self.runner = runner
        self.place = place
        self.report = report
        self.ledger = ledger
        self.clock = clock
        # The program the window runs, as it was named (for the command a user can run).
        self.program_path = ""

    @property
    def kind(self) -> WindowKind:
        return self.report.kind

    def run(self, path: str | Path, window: int, base: dict[str, Any]) -> None:
        """Run the window, then close what the runner built for all its tasks."""
        self.program_path = str(path)
        try:
            self._run(path, window, base)
        finally:
            self.runner.close()

    def _run(self, path: str | Path, window: int, base: dict[str, Any]) -> None:
        """Prepare the window (program, model, tasks), then run its tasks until all ran, one
        rests or the budget is spent."""
        report = self.report
        started = self.clock()
        try:
            program = _load(path)
            self.runner.prepare()
            tasks = self._tasks(program, window, base, started)
        except (ParseError, SemanticError, AgentScriptError, OSError) as problem:
            report.stopped = "unrunnable"
            duration = _milliseconds(self.clock() - started)
            note = one_line(_describe(problem))
            self._record(AutonomyRun(self.kind, started, duration, 0, 0, 0, "error", note))
            return
        if not tasks:
            report.stopped = "nothing-to-do"
            note = "no open desire it can pursue on its own"
            self._record(AutonomyRun(self.kind, self.clock(), 0, 0, 0, 0, "no-update", note))
            return
        for task in tasks:
            limit = report.budget_tokens
            left = None if limit is None else limit - report.spent_tokens
            if left is not None and left <= 0:
                report.stopped = "budget"
                return
            run = self._run_task(program, task, left)
            self._record(run)
            if run.outcome == "no-update":
                report.stopped = "rest"
                return

    def _tasks(
        self, program: ast.Program, window: int, base: dict[str, Any], now: float
    ) -> list[_Task]:
        """Up to `window` desires, or `window` runs with the same input (and, for RECAP_KINDS,
        the recap)."""
        if self.kind == "desire":
            return self._desire_tasks(program, window, base)
        if self.kind == "review":  # the recap is what a review is about: it must be there
            return [_Task({**base, "recap": self._recap(now)})] * window
        if self.kind in RECAP_KINDS:
            return [_Task({**base, "recap": self._optional_recap(now)})] * window
        return [_Task(base)] * window

    def _optional_recap(self, now: float) -> dict[str, Any] | None:
        """The recap for an idle or heartbeat run, which goes on without one (None) when the
        journal cannot be read; the report says why."""
        try:
            return self._recap(now)
        except (AgentScriptError, OSError) as problem:
            self.report.problems.append(f"No recap for the {self.kind} window: {problem}")
            return None

    def _desire_tasks(self, program: ast.Program, window: int, base: dict[str, Any]) -> list[_Task]:
        """The strongest open desires the entry agent can pursue on its own (actionable,
        pursuit `self`); the ones that need the user go to the report instead."""
        store = ProfileStore(self.place.workspace, self.clock)
        profile = store.load(entry_agent(program, self.place.agent))
        now = self.clock()
        self.report.needs_user = profile.needs_user(now)
        pursuable = [
            desire
            for desire in profile.open_desires(now)  # strongest first
            if desire.actionable and desire.pursuit == "self"
        ]
        return [
            _Task(
                {**base, "desire": {"slug": d.slug, "what": d.what, "prompt": d.prompt}},
                name=d.slug,
            )
            for d in pursuable[:window]
        ]

    def _recap(self, now: float) -> dict[str, Any]:
        """The recap of the runs since the last window of this kind (at most
        REVIEW_LOOKBACK_SECONDS back), as JSON data: counts and statuses only (learn/recap.py),
        so an idle or heartbeat run can say what happened while the user was away."""
        from agentscript.learn.journal import Journal, journal_path
        from agentscript.learn.recap import recap

        last = self.ledger.last_started(self.kind)
        since = max(last or 0.0, now - REVIEW_LOOKBACK_SECONDS)
        path = self.place.journal_file or journal_path(self.place.workspace)
        journal = Journal.open(path, self.clock)
        try:
            return recap(journal, since, now).to_json()
        finally:
            journal.close()

    def _run_task(self, program: ast.Program, task: _Task, left: int | None) -> AutonomyRun:
        watch = _Watch()
        started = self.clock()
        spent: Mapping[str, float | int] | None
        try:
            result = self.runner.run(program, task.input, max_tokens=left, watch=watch)
        except BudgetExceeded as error:
            outcome: Outcome = "blocked"
            note, spent = _budget_note(error, left), error.spent
        except AgentScriptError as error:
            outcome = "blocked" if watch.refused > 0 else "error"
            note, spent = str(error), error.spent
            if watch.refused > 0 and self.kind == "desire" and task.name is not None:
                self._needs_user(program, task, str(error))
        except Exception as error:  # a provider or journal bug: recorded, not raised
            outcome, note, spent = "error", _describe(error), None
        else:
            outcome, note = classify(result.value)
            spent = result.usage
        return AutonomyRun(
            kind=self.kind,
            started_at=started,
            duration_ms=_milliseconds(self.clock() - started),
            input_tokens=int((spent or {}).get("input_tokens", 0)),
            output_tokens=int((spent or {}).get("output_tokens", 0)),
            tool_calls=watch.tool_calls,
            outcome=outcome,
            note=one_line(note),
            task=task.name,
        )

    def _needs_user(self, program: ast.Program, task: _Task, refusal: str) -> None:
        """A desire whose pursuit needed a call autonomous runs may not make is switched to
        `needs-user`, with what it was refused and the command that pursues it with the
        user's approval: the next window does not try it again, and every needs-you list
        (the window's report, `autonomy summary`, the profile card, the memory digest) tells
        the user what to do."""
        assert task.name is not None
        store = ProfileStore(self.place.workspace, self.clock)
        refused = one_line(refusal, 200)
        update = {
            "op": "desire_update",
            "slug": task.name,
            "pursuit": "needs-user",
            "progress": one_line(f"needs the user: {refused}", 400),
            "needs": one_line(
                f"it was refused ({refused}); pursue it with your approval: "
                f"{self._attended_command(task)}",
                600,
            ),
        }
        done = store.apply(
            entry_agent(program, self.place.agent),
            update,
            who="autonomy",
            why="an autonomous pursuit of it was refused a call",
        )
        if not done.ok:
            self.report.problems.append(f"Desire {task.name} stays as it was: {done.message}")

    def _attended_command(self, task: _Task) -> str:
        """`agentscript run PROGRAM --input '{"desire": …}'`: the same pursuit, run by the
        user, whose approval gate asks instead of refusing."""
        program = Path(self.program_path)
        try:
            shown = str(program.resolve().relative_to(self.place.workspace.resolve()))
        except ValueError:
            shown = str(program)
        desire = task.input.get("desire") or {}
        given = json.dumps({"desire": {"slug": desire.get("slug"), "what": desire.get("what")}})
        return f"agentscript run {shlex.quote(shown)} --input {shlex.quote(given)}"

    def _record(self, run: AutonomyRun) -> None:
        self.report.runs.append(run)
        problem = self.ledger.append(run)
        if problem is not None:
            self.report.problems.append(problem)


def _load(path: str | Path) -> ast.Program:
    """The program, checked once for the whole window (a window of broken runs is one error)."""
    program = load_program(path)
    errors = [d for d in check_program(program) if d.severity == "error"]
    if errors:
        raise SemanticError(errors)
    return program


def needs_you(workspace: str | Path, now: float) -> list[str]:
    """What every agent with a profile in `workspace` waits for the user to do, as
    `agent/slug: what` lines (agents by name, their desires strongest first)."""
    store = ProfileStore(Path(workspace))
    return [
        needs_you_line(desire, agent)
        for agent in store.agents()
        for desire in store.load(agent).needs_user(now)
    ]


def entry_agent(program: ast.Program, name: str | None = None) -> str:
    """The agent a checked program's run enters: `name`, else its main agent, else its only
    agent (the checker refuses a program with several agents and no main one)."""
    if name is not None:
        return name
    mains = [agent.name for agent in program.agents if agent.is_main]
    return mains[0] if mains else program.agents[0].name


def _budget_note(error: BudgetExceeded, left: int | None) -> str:
    """Say which budget ran out in the window's terms (the error names a `run` flag)."""
    if error.budget != "tokens" or left is None or error.spent is None:
        return str(error)
    used = int(error.spent.get("input_tokens", 0)) + int(error.spent.get("output_tokens", 0))
    return f"Token budget exceeded: {used:,} tokens used, {left:,} were left in the window"


def _milliseconds(seconds: float) -> int:
    return max(0, round(seconds * 1000))


def _describe(error: BaseException) -> str:
    if isinstance(error, SemanticError):
        return "; ".join(diagnostic.format_located() for diagnostic in error.diagnostics)
    if isinstance(error, ParseError):
        return error.located()
    if isinstance(error, AgentScriptError | OSError):
        return str(error)
    return f"{type(error).__name__}: {error}"
