"""`agentscript optimize`: search the program's declared choices on training cases, keep the
winner only if held-out cases say it is better, and write it back into the source.

1. The cases are split once (a seeded shuffle): `split` of them train, the rest are held out.
   The baseline runs on the training cases first; from its journaled runs a proposer model
   writes new instructions for each generate written with a literal one (from the cases it got
   wrong), and the cases it got right become worked examples (proposals.py). Both are kept in
   `OUT/prompts-<program digest>.json`, so a resumed run tries the same texts.
2. Every trial (space.py) is an eval of the training cases (the eval's own code: metrics,
   budgets, journaled runs, results rows), one configuration at a time, its rows kept in
   `OUT/trials-<program digest>.jsonl`: a killed optimization run again with the same `--out`
   resumes without sending a finished cell's requests twice.
3. The best training mean wins (the baseline on ties). The winner and the baseline then run on
   the held-out cases; the winner is accepted only when the paired bootstrap 95 % interval of
   its difference lies above 0 and the mean difference is at least `min_improvement`.
4. Accepted or not, `OUT/report.json` says why; accepted, `OUT/optimized/` holds the changed
   files and `OUT/optimized.diff` the diff, and `apply` writes them in place.

What it spends is bounded before it starts: runs × the static bound on one run's model calls
(runtime/call_bound.py), the judge's too; `dry_run` returns that plan and spends nothing.
In trials, reads run for real and a call that would change something only reports (as in a
dry run), so no trial has an effect unless `allow_effects` asks for them (then undone).
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentscript.app.evals.cases import Case, load_cases
from agentscript.app.evals.configurations import Configuration
from agentscript.app.evals.judge import JudgeMetric
from agentscript.app.evals.report_data import EvalReport
from agentscript.app.evals.runner import EvalConfig, EvalProgress, evaluate, resolve_metric
from agentscript.app.evals.stats import PairedDifference, paired_difference
from agentscript.app.optimize import proposals
from agentscript.app.optimize.prompt_sites import edited_source, prompt_sites
from agentscript.app.optimize.source import Rewrite, rewrite
from agentscript.app.optimize.space import EXAMPLES, Choice, SearchSpace, Trial
from agentscript.app.programs import load_source, program_digest
from agentscript.lang import ast
from agentscript.providers.llm.answer_cache import AnswerCache
from agentscript.providers.tools.approvals import ApprovalMode
from agentscript.runtime.call_bound import max_model_calls
from agentscript.runtime.errors import AgentScriptError

STRATEGIES = ("auto", "grid", "search")


class OptimizeError(AgentScriptError):
    """The optimization cannot start: a bad split, no case to hold out, nothing to search."""


@dataclass(slots=True)
class OptimizeConfig:
    models: list[str] = field(default_factory=list)
    split: float = 0.6
    seed: int = 0
    strategy: str = "auto"
    max_calls: int | None = None
    max_tokens: int | None = None
    # Wall time of the whole optimization: no trial starts after it, a cell's run ends at it.
    max_seconds: float | None = None
    min_improvement: float = 0.03
    # Instructions a proposer writes for each generate with a literal one (0: none), and
    # how many passing training cases become its worked examples (0: none).
    instructions: int = 3
    demos: int = 3
    # The proposer's model (None: the first --model, else the program's first llm).
    proposer: str | None = None
    field: str | None = None
    tolerance: float | None = None
    # Tools run for real in trials (approved as `approve` says), and each run's file effects
    # are undone once its cell is scored; otherwise reads run and every call that would
    # change something only reports, as in a dry run.
    allow_effects: bool = False
    approve: ApprovalMode | None = None
    # The eval's model sources, for offline runs and tests.
    mock: bool | str | Path = False
    concurrency: int = 1
    workspace: str | Path | None = None
    journal_path: str | Path | None = None
    environ: dict[str, str] | None = None
    out: str | Path | None = None
    on_progress: Callable[[str, EvalProgress], None] | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """What a run will do and spend at most, known before it starts."""

    strategy: str
    space: SearchSpace
    train: list[Case]
    held_out: list[Case]
    trials: int
    calls_per_run: int
    judge_calls_per_run: int
    # The proposer's calls: one proposal run per instruction choice, at most this each.
    proposer_calls: int = 0

    @property
    def runs(self) -> int:
        """Training runs of every trial, then the baseline and the winner held out."""
        return len(self.train) * self.trials + 2 * len(self.held_out)

    @property
    def proposal_runs(self) -> int:
        return sum(1 for c in self.space.choices if c.kind == "instruction")

    @property
    def max_calls(self) -> int:
        per_run = self.calls_per_run + self.judge_calls_per_run
        return self.runs * per_run + self.proposal_runs * self.proposer_calls

    def to_json(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "labels": [
                {
                    "label": c.label,
                    "kind": c.kind,
                    "sites": list(c.sites),
                    "candidates": list(c.candidates),
                }
                for c in self.space.choices
            ],
            "models": [model or "(the program's)" for model in self.space.models],
            "trials": self.trials,
            "train": len(self.train),
            "held_out": len(self.held_out),
            "runs": self.runs,
            "calls_per_run": self.calls_per_run,
            "judge_calls_per_run": self.judge_calls_per_run,
            "proposal_runs": self.proposal_runs,
            "proposer_calls_per_run": self.proposer_calls,
            "max_calls": self.max_calls,
        }


@dataclass(slots=True)
class TrialScore:
    trial: Trial
    label: str
    mean: float
    n: int


@dataclass(slots=True)
class OptimizeReport:
    plan: Plan
    trials: list[TrialScore]
    baseline: str
    winner: str
    accepted: bool
    reason: str
    held_out: PairedDifference | None
    spent_calls: int
    spent_tokens: int
    seconds: float
    rewrites: list[Rewrite] = field(default_factory=list)
    stopped: str | None = None
    # Model answers taken from the answer cache, and asks it passed on (None: no cache).
    cache: tuple[int, int] | None = None
    # Per prompt site: the instructions proposed, examples shown, and a proposer's failure.
    prompts: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The bound once the proposals are known (fewer may come back than were asked for).
    revised_max_calls: int | None = None
    # With allow_effects: effects recorded in trials, undone, and not undone (with why).
    effects: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        estimate = self.plan.max_calls
        return {
            "plan": self.plan.to_json(),
            "trials": [
                {"configuration": t.label, "train_mean": round(t.mean, 4), "n": t.n}
                for t in self.trials
            ],
            "baseline": self.baseline,
            "winner": self.winner,
            "accepted": self.accepted,
            "reason": self.reason,
            "held_out": self.held_out.to_json() if self.held_out else None,
            "calls": {
                "estimated_max": estimate,
                "estimated_after_proposals": self.revised_max_calls,
                "spent": self.spent_calls,
                "share_of_estimate": round(self.spent_calls / estimate, 4) if estimate else None,
            },
            "cache": _cache_json(self.cache),
            "prompts": self.prompts,
            "effects": self.effects,
            "tokens": self.spent_tokens,
            "seconds": round(self.seconds, 3),
            "stopped": self.stopped,
            "changed_files": [str(r.path) for r in self.rewrites],
        }


def plan_optimization(
    program: ast.Program, cases: Sequence[Case], metric: str | Path, config: OptimizeConfig
) -> Plan:
    """The trials, the split and the most model calls they can take; spends nothing."""
    if config.strategy not in STRATEGIES:
        raise OptimizeError(f"Unknown strategy {config.strategy!r} ({', '.join(STRATEGIES)})")
    if not 0.0 < config.split < 1.0:
        raise OptimizeError(f"--split must be between 0 and 1, got {config.split}")
    sites = prompt_sites(program, _entry_text(program)) if program.source_path else []
    space = SearchSpace.of(program, config.models, sites, config.instructions, config.demos > 0)
    if space.grid_size < 2:
        raise OptimizeError(
            "Nothing to optimize: the program has no `use one of` site, no generate with a "
            "literal instruction (or --instructions 0 --demos 0) and one model "
            "(add `use one of` candidates, or give several --model)"
        )
    train, held_out = split_cases(list(cases), config.split, config.seed)
    strategy = space.strategy(config.strategy)
    chosen_metric = resolve_metric(metric, config.tolerance)
    judge = max_model_calls(chosen_metric.program) if isinstance(chosen_metric, JudgeMetric) else 0
    proposer = max_model_calls(proposals.proposer_program()) if sites else 0
    return Plan(
        strategy,
        space,
        train,
        held_out,
        space.trial_count(strategy),
        max_model_calls(program),
        judge,
        proposer,
    )


def split_cases(cases: list[Case], split: float, seed: int) -> tuple[list[Case], list[Case]]:
    """A seeded shuffle, then the first `split` share trains and the rest is held out."""
    if len(cases) < 2:
        raise OptimizeError("At least two cases are needed: some to train on, some to hold out")
    order = list(cases)
    random.Random(seed).shuffle(order)
    cut = min(max(1, round(len(order) * split)), len(order) - 1)
    return order[:cut], order[cut:]


def optimize(
    program: ast.Program, data: str | Path, metric: str | Path, config: OptimizeConfig
) -> OptimizeReport:
    """Search, gate on the held-out cases, and write the winner (see the module's text)."""
    cases = load_cases(data)
    plan = plan_optimization(program, cases, metric, config)
    if config.out is None:
        raise OptimizeError("--out DIR is needed: the trials are kept there to resume")
    return _Optimization(program, metric, config, plan, Path(config.out)).run()


class _Optimization:
    def __init__(
        self,
        program: ast.Program,
        metric: str | Path,
        config: OptimizeConfig,
        plan: Plan,
        out: Path,
    ) -> None:
        self.program = program
        self.metric = metric
        self.config = config
        self.plan = plan
        self.out = out
        self.started = time.monotonic()
        self.spent_calls = 0
        self.spent_tokens = 0
        self.stopped: str | None = None
        self.scores: dict[Trial, TrialScore] = {}
        # The space as searched: prompt choices gain their texts once the baseline has run.
        self.space = plan.space
        self.baseline_report: EvalReport | None = None
        self.prompts: dict[str, dict[str, Any]] = {}
        self.programs: dict[str, ast.Program] = {}
        digest = program_digest(program)[:12]
        self.trials_file = out / f"trials-{digest}.jsonl"
        self.held_out_file = out / f"held-out-{digest}.jsonl"
        self.prompts_file = out / f"prompts-{digest}.json"
        self.effects: dict[str, Any] | None = (
            {"recorded": 0, "undone": 0, "not_undone": []} if config.allow_effects else None
        )
        # A real model's answers by prompt: trials that share a prompt ask the model once.
        self.answers = None if config.mock is not False else AnswerCache(out / "answers.db")

    def run(self) -> OptimizeReport:
        try:
            return self._run()
        finally:
            if self.answers is not None:
                self.answers.close()

    def _run(self) -> OptimizeReport:
        self.out.mkdir(parents=True, exist_ok=True)
        baseline = self.space.baseline
        self._score(baseline)
        if self.space.prompt_choices() and self.stopped is None:
            self._fill_prompts()
        space = self.space
        revised = self._revised_max_calls() if space is not self.plan.space else None
        if self.plan.strategy == "grid":
            for trial in space.grid():
                self._score(trial)
        else:
            best = baseline
            for dimension in range(space.dimensions):
                for trial in space.neighbours(best, dimension):
                    self._score(trial)
                best = self._best(best)
        scored = list(self.scores.values())
        winner = self._best(baseline)
        baseline_label = self._label(baseline)
        winner_label = self._label(winner)
        difference = None
        accepted = False
        if self.stopped is not None:
            reason = f"stopped before the end ({self.stopped}): the program is unchanged"
        elif winner == baseline:
            reason = "no trial beat the baseline on the training cases"
        else:
            difference = self._held_out(baseline, winner)
            accepted, reason = self._verdict(difference)
        rewrites: list[Rewrite] = []
        if accepted and difference is not None:
            evidence = (
                f"held-out {difference.mean:+.3f} over {baseline_label}, 95% CI "
                f"[{difference.low:+.3f}, {difference.high:+.3f}], n={difference.n}"
            )
            rewrites = rewrite(self.program, space, baseline, winner, evidence)
            self._write(rewrites)
        report = OptimizeReport(
            self.plan,
            scored,
            baseline_label,
            winner_label,
            accepted,
            reason,
            difference,
            self.spent_calls,
            self.spent_tokens,
            time.monotonic() - self.started,
            rewrites,
            self.stopped,
            (self.answers.hits, self.answers.misses) if self.answers is not None else None,
            self.prompts,
            revised,
            self.effects,
        )
        (self.out / "report.json").write_text(json.dumps(report.to_json(), indent=2) + "\n")
        return report

    def _score(self, trial: Trial) -> None:
        if trial in self.scores or self.stopped is not None:
            return
        configuration = trial.configuration(self.space)
        program = self._program_for(trial)
        report = self._evaluate(
            [configuration], self.plan.train, "train", self.trials_file, program
        )
        if report is None:
            return
        if trial == self.space.baseline:
            self.baseline_report = report
        rows = report.rows  # a failed cell scores 0: it counts against its trial
        label = self._label(trial)
        mean = sum(row.score for row in rows) / len(rows) if rows else 0.0
        self.scores[trial] = TrialScore(trial, label, mean, len(rows))
        if report.stopped:
            self.stopped = report.stopped

    def _held_out(self, baseline: Trial, winner: Trial) -> PairedDifference | None:
        """Both on the held-out cases, one eval each (with different prompts they are two
        programs), paired by case."""
        reports = []
        for trial in (baseline, winner):
            report = self._evaluate(
                [trial.configuration(self.space)],
                self.plan.held_out,
                "held out",
                self.held_out_file,
                self._program_for(trial),
            )
            if report is None or report.stopped:
                self.stopped = self.stopped or (report.stopped if report else "time")
                return None
            reports.append(report)
        first, second = self._label(baseline), self._label(winner)
        return paired_difference(
            second, first, _scores_of(reports[1], second), _scores_of(reports[0], first)
        )

    def _program_for(self, trial: Trial) -> ast.Program:
        """The program as `trial` runs it: its prompt edits made in the entry file's text."""
        changes = trial.prompt_changes(self.space)
        if not changes:
            return self.program
        text = edited_source(_entry_text(self.program), changes)
        if text not in self.programs:
            self.programs[text] = load_source(text, self.program.source_path)
        return self.programs[text]

    def _fill_prompts(self) -> None:
        """Give each prompt choice its texts: proposals and examples from the baseline's
        training runs (or from `prompts-<digest>.json`, written the first time)."""
        saved = _read_json(self.prompts_file)
        if saved is None:
            saved = self._propose()
            self.prompts_file.write_text(json.dumps(saved, indent=2) + "\n", encoding="utf-8")
        self.prompts = saved
        for choice in self.space.prompt_choices():
            assert choice.prompt is not None
            found = saved.get(choice.prompt.id, {})
            if choice.kind == "instruction":
                texts = [(f"proposed-{n}", t) for n, t in enumerate(found.get("proposed", []), 1)]
            else:
                shown = found.get("examples")
                texts = [(EXAMPLES, shown)] if isinstance(shown, str) else []
            self.space = self.space.with_texts(choice.label, texts)

    def _propose(self) -> dict[str, dict[str, Any]]:
        report = self.baseline_report
        rows = report.rows if report is not None else []
        inputs = {case.id: case.input for case in self.plan.train}
        journal = report.journal if report is not None else None
        written: dict[str, dict[str, Any]] = {}
        for choice in self.space.prompt_choices():
            site = choice.prompt
            assert site is not None
            entry = written.setdefault(site.id, {"instruction": site.instruction})
            found = proposals.evidence(site, rows, inputs, journal)
            if choice.kind == "examples":
                entry["examples"] = proposals.examples(found, self.config.demos)
            elif not found.failures:
                entry["proposed"] = []
                entry["note"] = "no training case failed: nothing to propose from"
            else:
                entry.update(self._ask_proposer(site.id, found, choice, len(choice.candidates) - 1))
        return written

    def _ask_proposer(
        self, site_id: str, found: proposals.SiteEvidence, choice: Choice, count: int
    ) -> dict[str, Any]:
        from agentscript.app.configuration import RunConfig
        from agentscript.app.run import run

        assert choice.prompt is not None
        model = self._proposer_model()
        config = RunConfig(
            model="mock" if model is None else "real",
            models=[model] if model is not None else [],
            workspace=self.config.workspace,
            journal_path=self.config.journal_path,
            environ=self.config.environ,
            mock_tools=True,
        )
        given = proposals.proposer_input(choice.prompt, found, count)
        try:
            result = run(proposals.proposer_program(), given, config)
        except AgentScriptError as error:
            self._spend(error.spent or {})
            return {"proposed": [], "error": f"the proposer failed at {site_id}: {error}"}
        self._spend(result.usage)
        return {"proposed": proposals.chosen_instructions(choice.prompt, result.value, count)}

    def _proposer_model(self) -> str | None:
        """The proposer's model URI; None under --mock (the mock proposes nothing)."""
        if self.config.mock is not False:
            return None
        if self.config.proposer:
            return self.config.proposer
        chosen = [m for m in self.config.models if m != "mock"]
        if chosen:
            return chosen[0].partition("=")[2] if "=" in chosen[0] else chosen[0]
        return next(d.uri for d in self.program.imports if d.resource_kind == "llm")

    def _revised_max_calls(self) -> int:
        """The plan's bound with the trials the proposals left."""
        trials = self.space.trial_count(self.plan.strategy)
        per_run = self.plan.calls_per_run + self.plan.judge_calls_per_run
        runs = len(self.plan.train) * trials + 2 * len(self.plan.held_out)
        return runs * per_run + self.plan.proposal_runs * self.plan.proposer_calls

    def _undo(self, trace: list[dict[str, Any]]) -> None:
        """Revert the file effects of one trial run, newest first; effects that cannot be
        reverted (a process, a request) are listed in the report."""
        from agentscript.providers.tools.effects import effects_in_trace, undo_trace

        assert self.effects is not None
        recorded = effects_in_trace(trace, files_only=False)
        if not recorded:
            return
        files = effects_in_trace(trace)
        root = self.config.workspace or Path(self.program.source_path or ".").parent
        undone = undo_trace(trace, root)
        self.effects["recorded"] += len(recorded)
        self.effects["undone"] += len(undone["undone"])
        for key in ("conflicts", "skipped", "refused"):
            self.effects["not_undone"].extend(undone[key])
        self.effects["not_undone"].extend(
            {"effect": effect.get("action", "effect"), "reason": "not an undoable file effect"}
            for effect in recorded
            if effect not in files
        )

    def _spend(self, usage: dict[str, float | int]) -> None:
        self.spent_calls += int(usage.get("calls", 0))
        self.spent_tokens += int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))

    def _verdict(self, difference: PairedDifference | None) -> tuple[bool, str]:
        if difference is None or math.isnan(difference.mean):
            why = self.stopped or "no held-out case was scored"
            return False, f"the held-out check did not finish ({why}): the program is unchanged"
        minimum = self.config.min_improvement
        if difference.low <= 0.0:
            return False, (
                f"the winner's held-out gain {difference.mean:+.3f} has a 95% interval "
                f"[{difference.low:+.3f}, {difference.high:+.3f}] that reaches 0: "
                "the program is unchanged"
            )
        if difference.mean < minimum:
            return False, (
                f"the winner's held-out gain {difference.mean:+.3f} is below "
                f"--min-improvement {minimum}: the program is unchanged"
            )
        return True, (
            f"held-out gain {difference.mean:+.3f}, 95% interval "
            f"[{difference.low:+.3f}, {difference.high:+.3f}] above 0"
        )

    def _evaluate(
        self,
        plan: list[Configuration],
        cases: list[Case],
        stage: str,
        out: Path,
        program: ast.Program,
    ) -> EvalReport | None:
        """An eval of `plan` on `cases` within what is left of the budgets; None when nothing
        is left (`stopped` says which)."""
        left = self._seconds_left()
        if left is not None and left <= 0:
            self.stopped = self.stopped or "time (--max-seconds)"
            return None
        calls = None if self.config.max_calls is None else self.config.max_calls - self.spent_calls
        tokens = (
            None if self.config.max_tokens is None else self.config.max_tokens - self.spent_tokens
        )
        if (calls is not None and calls <= 0) or (tokens is not None and tokens <= 0):
            self.stopped = self.stopped or "budget (--max-calls/--max-tokens)"
            return None
        report = evaluate(
            program,
            cases,
            EvalConfig(
                plan=plan,
                mock=self.config.mock,
                # Real effects of concurrent cells would meet: one cell at a time then.
                concurrency=1 if self.config.allow_effects else self.config.concurrency,
                max_calls=calls,
                max_tokens=tokens,
                max_seconds=left,
                out=out,
                field=self.config.field,
                tolerance=self.config.tolerance,
                workspace=self.config.workspace,
                journal_path=self.config.journal_path,
                environ=self.config.environ,
                # Trials never change the world unless asked: reads run (so the prompts are
                # the program's own), a call that would change something only reports; with
                # allow_effects each run's effects are undone once its cell is scored.
                simulate_effects=not self.config.allow_effects,
                approve=self.config.approve,
                after_run=self._undo if self.config.allow_effects else None,
                answers=self.answers,
                on_progress=(
                    (lambda progress: self.config.on_progress(stage, progress))  # type: ignore[misc]
                    if self.config.on_progress
                    else None
                ),
            ),
            self.metric,
        )
        self._spend(report.spent)
        return report

    def _best(self, fallback: Trial) -> Trial:
        """The trial with the best training mean; `fallback` (the baseline) on ties."""
        best = self.scores.get(fallback)
        for score in self.scores.values():
            if best is None or score.mean > best.mean:
                best = score
        return best.trial if best is not None else fallback

    def _label(self, trial: Trial) -> str:
        return trial.configuration(self.space).label

    def _seconds_left(self) -> float | None:
        if self.config.max_seconds is None:
            return None
        return self.config.max_seconds - (time.monotonic() - self.started)

    def _write(self, rewrites: list[Rewrite]) -> None:
        root = Path(self.program.source_path or ".").parent
        folder = self.out / "optimized"
        diffs = []
        for change in rewrites:
            target = folder / _inside(change.path, root)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(change.after, encoding="utf-8")
            diffs.append(change.diff(root))
        (self.out / "optimized.diff").write_text("".join(diffs), encoding="utf-8")


def _cache_json(cache: tuple[int, int] | None) -> dict[str, Any] | None:
    if cache is None:
        return None
    hits, misses = cache
    asked = hits + misses
    return {"hits": hits, "misses": misses, "hit_rate": round(hits / asked, 4) if asked else None}


def apply(report: OptimizeReport) -> list[Path]:
    """Write an accepted optimization's files in place; an unaccepted one changes nothing."""
    if not report.accepted:
        return []
    for change in report.rewrites:
        if change.path.read_text(encoding="utf-8") != change.before:
            raise OptimizeError(f"{change.path} changed since the optimization read it")
    for change in report.rewrites:
        change.path.write_text(change.after, encoding="utf-8")
    return [change.path for change in report.rewrites]


def _entry_text(program: ast.Program) -> str:
    """The entry file's text (a program parsed from a string has no prompt sites)."""
    assert program.source_path is not None
    return Path(program.source_path).read_text(encoding="utf-8")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _scores_of(report: EvalReport, configuration: str) -> dict[str, float]:
    return {row.id: row.score for row in report.rows if row.configuration == configuration}


def _inside(path: Path, root: Path) -> Path:
    try:
        return path.resolve().relative_to(root.resolve())
    except ValueError:
        return Path(path.name)
