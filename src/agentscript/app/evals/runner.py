"""Run an eval: every case in every configuration, scored, within the eval's budgets.

Cells run on a thread pool (`concurrency`), or spread over forked worker processes
(`workers`, agentscript.app.evals.workers) when one process's CPU is the limit; each is an
ordinary journaled run through the public API, so every result names its run in the journal. Evals never learn into the long-term
memory, so configurations stay independent and mock or replayed answers teach nothing, unless
`learn` is on: then each configuration runs twice, with learning off (any order) and with
learning on (the cases in order, one at a time), and the report compares the first and the
last quarter of both.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentscript.app.evals.cases import Case, CaseError, cases_from, load_cases
from agentscript.app.evals.configurations import Configuration, configurations
from agentscript.app.evals.judge import JudgeMetric
from agentscript.app.evals.metrics import (
    CallableMetric,
    FieldPath,
    Metric,
    MetricError,
    Score,
    builtin_metric,
)
from agentscript.app.evals.models import (
    CellModel,
    EvalBudgetExceeded,
    EvalMeter,
    MockScripts,
    ModelSource,
    cassette,
)
from agentscript.app.evals.report_data import EvalReport, build_report
from agentscript.app.evals.results import CellResult, ResultsFile, read_rows
from agentscript.app.evals.workers import worker_count
from agentscript.app.model_choice import MOCK
from agentscript.lang import ast
from agentscript.runtime.errors import AgentScriptError, ExecutionError, LoadError
from agentscript.runtime.secrets import SecretSet

if TYPE_CHECKING:
    from agentscript import RunConfig
    from agentscript.app.evals.queued import QueuedRuns
    from agentscript.providers.llm.answer_cache import AnswerCache
    from agentscript.providers.tools.approvals import ApprovalMode
    from agentscript.runtime.ports import Cassette, Closeable, LlmProvider

LEARNING_OFF = "off"
LEARNING_ON = "on"


@dataclass(slots=True)
class EvalConfig:
    """How to run an eval; every field has a default (the program's own model, no budget)."""

    # Each model and each variant (`LABEL=CHOICE`) makes a configuration (their product). A
    # model is `URI` (every `import llm`), `NAME=URI` (one) or "mock" (the mock model, answering
    # from `mock` when that is a file, beside real models).
    models: list[str] = field(default_factory=list)
    variants: list[str] = field(default_factory=list)
    # Or the configurations themselves (an optimizer's trials), instead of that product.
    plan: list[Configuration] | None = None
    # Answer a prompt asked before from this cache instead of the model (an optimizer's).
    answers: AnswerCache | None = None
    # Answer with the mock model: True for shape defaults, a path for scripted answers (one
    # script for every case, or {"cases": {id: script}}).
    mock: bool | str | Path = False
    # Or a model provider of your own answering every cell (not priced, never closed here).
    llm: LlmProvider | None = None
    # Record every cell's model exchanges into / answer them from cassettes in this folder.
    record: str | Path | None = None
    # A cassette folder, or the results file (`out`) of an earlier eval: then each cell is
    # answered from the journaled run its row names (model, tool and memory calls; the judge
    # from its own run), in the journal of `workspace`/`journal_path`.
    replay: str | Path | None = None
    concurrency: int = 1
    # Processes the cells run in (the `concurrency` shared out among them), or "auto": one per
    # 8 concurrent cells, up to the machine's cores. 1 (the default): all in this process,
    # where a provider object or a metric function keeps its state across cells (a worker
    # has its own copy of each).
    workers: int | Literal["auto"] = 1
    # A durable queue's URL (postgresql://… or sqlite:///PATH): each cell's run goes to the
    # queue's workers (agentscript.app.evals.queued), `concurrency` cells on it at once; the
    # cells are scored here. The workers' environment reaches the models.
    queue: str | None = None
    # Budgets of the whole eval, judge runs included.
    max_tokens: int | None = None
    max_calls: int | None = None
    # A time limit for each cell's run (and its judge's), not for the whole eval.
    max_seconds: float | None = None
    # Only the cases with at least one of these tags (all cases when empty).
    tags: list[str] = field(default_factory=list)
    # One JSON line per cell; an existing file resumes (its finished cells are skipped)
    # unless `fresh`.
    out: str | Path | None = None
    fresh: bool = False
    # Compare this part of the value (`label`, `items[0].name`), not the whole value.
    field: str | None = None
    # The relative tolerance of the number metric.
    tolerance: float | None = None
    # A cell passes when its score is at least this.
    pass_score: float = 1.0
    learn: bool = False
    # The model a judge program answers with (default: the cell's own model choice).
    judge_model: str | None = None
    agent: str | None = None
    function: str | None = None
    workspace: str | Path | None = None
    journal_path: str | Path | None = None
    memory_db: str | Path | None = None
    environ: Mapping[str, str] | None = None
    mock_tools: bool = False
    # Reads run; calls that would change something only report (RunConfig.simulate_effects).
    simulate_effects: bool = False
    approve: ApprovalMode | None = None
    approvals: str | Path | None = None
    # Called after every cell, one call at a time: from the thread that ran it, or with
    # workers from the thread that called `evaluate`.
    on_progress: Callable[[EvalProgress], None] | None = None
    # Called with the trace of each cell's program run once the cell is scored, in the thread
    # that ran it (an optimizer undoes a trial's effects there). Not with workers.
    after_run: Callable[[list[dict[str, Any]]], None] | None = None


@dataclass(frozen=True, slots=True)
class EvalProgress:
    done: int
    total: int
    errors: int
    tokens: int
    mean_score: float


MetricSpec = str | Path | Metric | Callable[[Case, Any], Any]


def evaluate(
    program: ast.Program | str | Path,
    cases: str | Path | Iterable[Case | Mapping[str, Any]],
    config: EvalConfig | None = None,
    metric: MetricSpec = "exact",
) -> EvalReport:
    """Run `program` on every case in every configuration and score it with `metric`: a
    built-in name (exact, contains, regex, number, json), a judge program's path, a Metric,
    or a function `(case, value) -> number | Score`. Raises AgentScriptError (LoadError,
    CaseError, MetricError, SemanticError) before anything runs when an input is unusable."""
    import agentscript

    config = config or EvalConfig()
    loaded = program if isinstance(program, ast.Program) else agentscript.load(program)
    problems = [d for d in agentscript.check(loaded) if d.severity == "error"]
    if problems:
        from agentscript.lang.errors import SemanticError

        raise SemanticError(problems)
    case_list = load_cases(cases) if isinstance(cases, str | Path) else cases_from(cases)
    if config.tags:
        case_list = [case for case in case_list if set(case.tags) & set(config.tags)]
        if not case_list:
            raise CaseError(f"No case has the tag {' or '.join(config.tags)}")
    chosen_metric = resolve_metric(metric, config.tolerance)
    chosen_metric.validate(case_list)
    picker = FieldPath.parse(config.field) if config.field else None
    plan = (
        list(config.plan)
        if config.plan is not None
        else configurations(loaded, config.models, config.variants)
    )
    if config.learn:
        plan = [
            replace(configuration, learning=arm)
            for configuration in plan
            for arm in (LEARNING_OFF, LEARNING_ON)
        ]
    if config.queue is not None:
        refuse_on_queue(config)
    live = config.mock is False or MOCK in config.models
    if live and config.replay is None and config.llm is None and config.queue is None:
        check_models(loaded, config, chosen_metric)
    if config.concurrency < 1:
        raise LoadError(f"Concurrency must be at least 1, got {config.concurrency}")
    worker_count(config.workers, config.concurrency, 1)  # refuses a bad value now
    eval_run = _Eval(loaded, case_list, plan, chosen_metric, picker, config)
    return eval_run.run()


def refuse_on_queue(config: EvalConfig) -> None:
    """What a queued run cannot take: a provider object, the mock, recordings, learning,
    a journal or memory of this process's choosing, mock tools, simulated effects, an
    approvals file (a worker approves as its --approve says)."""
    unsupported = {
        "a model provider object": config.llm is not None,
        "--mock": config.mock is not False or MOCK in config.models,
        "--record": config.record is not None,
        "--replay": config.replay is not None,
        "--learn": config.learn,
        "an answer cache": config.answers is not None,
        "a journal path": config.journal_path is not None,
        "--memory-db": config.memory_db is not None,
        "--mock-tools": config.mock_tools,
        "simulated effects": config.simulate_effects,
        "--approvals": config.approvals is not None,
    }
    named = [name for name, given in unsupported.items() if given]
    if named:
        raise LoadError(
            f"eval --queue runs each cell on the queue's workers, which take no "
            f"{', '.join(named)}: run this eval without --queue"
        )


def _eval_secrets(config: EvalConfig) -> SecretSet:
    """What the eval's runs could send and must never write down: the providers' keys and the
    passwords of their base URLs (the redaction set every run starts with)."""
    import os

    from agentscript.providers.llm.endpoints import endpoint_secrets

    return SecretSet(endpoint_secrets(config.environ if config.environ is not None else os.environ))


def check_models(program: ast.Program, config: EvalConfig, metric: Metric) -> None:
    """Refuse, before any cell runs, a model that cannot be reached (a bad URI, a missing key),
    instead of twenty cells failing with the same error."""
    import os

    from agentscript.app.model_choice import parse_model_option
    from agentscript.providers.llm.endpoints import report_model

    def imported(of: ast.Program) -> list[str]:
        return [decl.uri for decl in of.imports if decl.resource_kind == "llm"]

    texts = [c.model for c in config.plan if c.model] if config.plan is not None else config.models
    real = [parse_model_option(text).uri for text in texts if text != MOCK]
    uris = real or ([] if texts else imported(program))
    if isinstance(metric, JudgeMetric):
        uris += [config.judge_model] if config.judge_model else imported(metric.program)
    environ = config.environ if config.environ is not None else os.environ
    for uri in dict.fromkeys(uris):
        problem = report_model("eval", uri, environ).problem
        if problem is not None:
            raise LoadError(f"Model {uri}: {problem} (--mock or --replay DIR evaluate offline)")


def resolve_metric(spec: MetricSpec, tolerance: float | None = None) -> Metric:
    if isinstance(spec, Path) or (isinstance(spec, str) and spec.endswith(".as")):
        return JudgeMetric.load(spec)
    if isinstance(spec, str):
        return builtin_metric(spec, tolerance)
    if isinstance(spec, Metric):
        return spec
    if callable(spec):
        return CallableMetric(spec)
    raise MetricError(f"Not a metric: {spec!r}")


def metric_key(metric: Metric, picker: FieldPath | None) -> str:
    """What a result row was scored with; a row scored otherwise is run again on resume."""
    return metric.name + (f" field={picker.text}" if picker else "")


class _Eval:
    def __init__(
        self,
        program: ast.Program,
        cases: list[Case],
        plan: list[Configuration],
        metric: Metric,
        picker: FieldPath | None,
        config: EvalConfig,
    ) -> None:
        self.program = program
        self.cases = cases
        self.plan = plan
        self.metric = metric
        self.picker = picker
        self.config = config
        self.metric_key = metric_key(metric, picker)
        # Shared with worker processes when there may be some (they are forked later).
        may_fork = worker_count(config.workers, config.concurrency, config.concurrency) > 1
        self.meter = EvalMeter(config.max_tokens, config.max_calls, shared=may_fork)
        self.source = ModelSource(
            # With `--model mock` among the models, only that configuration is the mock.
            kind="mock" if config.mock is not False and MOCK not in config.models else "real",
            responses=Path(config.mock) if isinstance(config.mock, str | Path) else None,
            record=Path(config.record) if config.record is not None else None,
            replay=Path(config.replay) if config.replay is not None else None,
        )
        self.scripts = MockScripts(self.source.responses) if self.source.responses else None
        self.replayed_rows: dict[tuple[str, str], CellResult] | None = None
        if self.source.replay is not None and self.source.replays_runs:
            from agentscript.learn.journal import wait_for_journal

            wait_for_journal()  # the runs an eval of this process journaled are all written
            self.replayed_rows = read_rows(self.source.replay)
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self.secrets = _eval_secrets(config)
        self._router: LlmProvider | None = None
        self.results = ResultsFile(Path(config.out), config.fresh) if config.out else None
        self.rows: dict[tuple[str, str], CellResult] = {}
        self.progress = {"done": 0, "errors": 0, "tokens": 0, "score": 0.0}
        self.queued: QueuedRuns | None = None

    # ------------------------------------------------------------------ scheduling

    def run(self) -> EvalReport:
        started = time.monotonic()
        try:
            resumed = self._resume()
            pending = [
                (
                    configuration,
                    [c for c in self.cases if self._key(c, configuration) not in self.rows],
                )
                for configuration in self.plan
            ]
            # Every cell that does not learn first, in parallel; then each learning arm, its
            # cases in order, one arm after another: no run reads a lesson that another
            # configuration's learning left in the shared memory while the eval runs.
            cells = [
                (case, configuration)
                for configuration, cases in pending
                if configuration.learning != LEARNING_ON
                for case in cases
            ]
            processes = worker_count(self.config.workers, self.config.concurrency, len(cells))
            if self.config.queue is not None:
                from agentscript.app.evals.queued import QueuedRuns

                workspace = str(self._workspace().resolve())
                self.queued = QueuedRuns(self.config.queue, workspace, self.config.max_seconds)
                processes = 1  # this process only waits for the workers' runs
            if processes > 1:
                self._run_in_workers(cells, processes)
            elif self.config.concurrency == 1:
                # On this thread: no hand-off per cell, and Ctrl-C stops the run in flight.
                for case, configuration in cells:
                    self._run_cell(case, configuration)
            else:
                with ThreadPoolExecutor(max_workers=self.config.concurrency) as pool:
                    self._finish([pool.submit(self._run_cell, *cell) for cell in cells])
            for configuration, cases in pending:
                if configuration.learning == LEARNING_ON:
                    for case in cases:
                        self._run_cell(case, configuration)
        finally:
            if self.results is not None:
                self.results.close()
            if self.queued is not None:
                self.queued.close()
            self._close_router()
        return build_report(
            program=self.program,
            metric=self.metric_key,
            cases=self.cases,
            plan=self.plan,
            rows=self.rows,
            resumed=resumed,
            stopped=self._stopped_reason(),
            judge=isinstance(self.metric, JudgeMetric),
            seconds=time.monotonic() - started,
            meter=self.meter.summary,
            journal=str(self._journal_path()),
        )

    def _close_router(self) -> None:
        if self._router is not None:
            from agentscript.runtime.ports import is_closeable

            if is_closeable(self._router):
                self._router.close()
            self._router = None

    def _run_in_workers(self, cells: list[tuple[Case, Configuration]], processes: int) -> None:
        """The cells in `processes` forked workers, `concurrency` in flight over all of them;
        this process hands them out while the budget remains and keeps every row."""
        from agentscript.app.evals.workers import CellWorkers

        case_index = {id(case): number for number, case in enumerate(self.cases)}
        plan_index = {configuration: number for number, configuration in enumerate(self.plan)}

        def run_cell(case_number: int, configuration_number: int) -> CellResult | None:
            # In a worker: the cell's run and score; the row goes back to this process.
            return self._cell(self.cases[case_number], self.plan[configuration_number])

        workers = CellWorkers(
            run_cell,
            self._close_router,
            processes,
            threads=-(-self.config.concurrency // processes),
        )
        workers.run(
            [(case_index[id(case)], plan_index[configuration]) for case, configuration in cells],
            self.config.concurrency,
            may_start=lambda: not self.stop.is_set() and not self.meter.exhausted.is_set(),
            keep=self._keep,
        )

    def _journal_path(self) -> Path:
        """Where the runs are journaled, as `agentscript.run` decides it."""
        if self.config.journal_path is not None:
            return Path(self.config.journal_path)
        from agentscript.learn.journal import run_journal_path

        return run_journal_path(self.config.workspace, self._workspace())

    def _workspace(self) -> Path:
        if self.config.workspace is not None:
            return Path(self.config.workspace)
        entry = self.program.source_path
        return Path(entry).parent if entry else Path.cwd()

    def _finish(self, futures: list[Future[None]]) -> None:
        """Wait for `futures`; on an interruption or a bug, start nothing more and wait for
        the cells in flight (their rows are kept) before raising."""
        try:
            for future in futures:
                future.result()
        except BaseException:
            self.stop.set()
            for future in futures:
                future.cancel()
            wait(futures)
            raise

    def _resume(self) -> int:
        if self.results is None:
            return 0
        count = 0
        for case in self.cases:
            for configuration in self.plan:
                key = self._key(case, configuration)
                row = self.results.done(key, self.metric_key)
                if row is not None:
                    self.rows[key] = row
                    count += 1
        self._count_progress_from(list(self.rows.values()))
        return count

    def _stopped_reason(self) -> str | None:
        if self.meter.exhausted.is_set():
            spent = self.meter.summary
            return (
                f"the eval's budget is spent ({spent['calls']} model calls, "
                f"{spent['input_tokens'] + spent['output_tokens']} tokens)"
            )
        return None

    @staticmethod
    def _key(case: Case, configuration: Configuration) -> tuple[str, str]:
        return (case.id, configuration.label)

    # ------------------------------------------------------------------ one cell

    def _run_cell(self, case: Case, configuration: Configuration) -> None:
        if self.stop.is_set() or self.meter.exhausted.is_set():
            return
        row = self._cell(case, configuration)
        if row is None:
            return
        if configuration.learning == LEARNING_ON:
            row.feedback = self._teach(row)
        self._keep(row)

    def _keep(self, row: CellResult) -> None:
        """A finished cell's row: kept, written to --out and counted in the progress. Scored
        first, then scrubbed: a provider key a model echoed never reaches the results file or
        the report, as it never reaches a trace."""
        row.value = self.secrets.scrub(row.value)
        row.error = self.secrets.scrub_text(row.error) if row.error is not None else None
        row.reason = self.secrets.scrub_text(row.reason)
        with self._lock:
            self.rows[row.key] = row
            if self.results is not None:
                self.results.append(row)
            self._count_progress_from([row])
            progress = EvalProgress(
                done=int(self.progress["done"]),
                total=len(self.cases) * len(self.plan),
                errors=int(self.progress["errors"]),
                tokens=int(self.progress["tokens"]),
                mean_score=self.progress["score"] / max(1, self.progress["done"]),
            )
            if self.config.on_progress is not None:
                self.config.on_progress(progress)

    def _teach(self, row: CellResult) -> str | None:
        """With learning on, the eval's verdict on a run becomes its feedback, as a user's
        `agentscript feedback RUN good|bad NOTE` would: a pass confirms what the run taught,
        a fail retires it and keeps the metric's reason as the lesson that corrects it."""
        if row.run_id is None:
            return None
        from agentscript.learn.feedback import apply_feedback
        from agentscript.learn.journal import Journal, wait_for_journal
        from agentscript.memory.service import MemoryService

        verdict: Literal["good", "bad"] = "good" if row.passed else "bad"
        note = None if row.passed else (row.error or row.reason or None)
        wait_for_journal()  # the run's record and what it learned are written
        journal = Journal.open(self._journal_path())
        try:
            workspace = journal.resolve(row.run_id).workspace or self._workspace()
            with MemoryService.open(workspace, database=self.config.memory_db) as service:
                apply_feedback(journal, service, row.run_id, verdict, note)
        except AgentScriptError as problem:
            return f"{verdict}, not applied: {problem}"
        finally:
            journal.close()
        return verdict

    def _count_progress_from(self, rows: list[CellResult]) -> None:
        for row in rows:
            self.progress["done"] += 1
            self.progress["errors"] += 1 if row.error is not None else 0
            self.progress["tokens"] += row.tokens
            self.progress["score"] += row.score

    def _cell(self, case: Case, configuration: Configuration) -> CellResult | None:
        """Run and score one cell; None when the eval's budget stopped it (it is not kept)."""
        owned: list[Closeable] = []
        traces: list[list[dict[str, Any]]] = []
        try:
            return self._scored_cell(case, configuration, owned, traces)
        finally:
            for provider in owned:
                provider.close()
            if self.config.after_run is not None:
                for trace in traces:
                    self.config.after_run(trace)

    def _scored_cell(
        self,
        case: Case,
        configuration: Configuration,
        owned: list[Closeable],
        traces: list[list[dict[str, Any]]],
    ) -> CellResult | None:
        try:
            model = self._cell_model(case, configuration, judge=False, owned=owned)
            replay = self._replayed_run(case, configuration, judge=False)
        except AgentScriptError as problem:
            return self._row(case, configuration, error=describe(problem))
        outcome = self._run_program(
            self.program,
            case.input,
            configuration,
            model,
            learn=True,
            replay=replay,
            traces=traces,
            label=case.id,
        )
        if outcome is None:
            return None
        value, error, usage, run_id = outcome
        row = self._row(case, configuration, error=error, value=value)
        # A queued run's calls are not priced here (they never passed this process's model).
        row.usage, row.cost, row.run_id = usage, None if self.queued else model.cost, run_id
        if error is not None:
            return row
        judge_model: CellModel | None = None

        def judge_run(judge_input: Any) -> tuple[Any, str | None, dict[str, float | int]]:
            nonlocal judge_model
            assert isinstance(self.metric, JudgeMetric)
            judge_model = self._cell_model(case, configuration, judge=True, owned=owned)
            result = self._run_program(
                self.metric.program,
                judge_input,
                configuration,
                judge_model,
                learn=False,
                replay=self._replayed_run(case, configuration, judge=True),
                judge=True,
                label=f"{case.id} judge",
            )
            if result is None:
                raise EvalBudgetExceeded("eval", "the eval's budget is spent")
            verdict, problem, spent, judge_id = result
            row.judge_run_id, row.judge_usage = judge_id, spent
            if problem is not None:
                raise MetricError(f"judge failed: {problem}")
            return verdict, judge_id, spent

        try:
            picked = self.picker.pick(value) if self.picker else value
            score = self.metric.score(case, picked, judge_run)
        except EvalBudgetExceeded:
            return None
        except AgentScriptError as problem:
            score = Score(0.0, str(problem))
            if isinstance(self.metric, JudgeMetric) and row.judge_run_id is not None:
                row.error = str(problem)
        row.score = score.score
        row.reason = score.reason
        row.passed = score.score >= self.config.pass_score
        if judge_model is not None and self.queued is None:
            row.judge_cost = judge_model.cost
        return row

    def _row(
        self, case: Case, configuration: Configuration, error: str | None, value: Any = None
    ) -> CellResult:
        return CellResult(
            id=case.id,
            configuration=configuration.label,
            model=configuration.model,
            variant=configuration.variant.text if configuration.variant else None,
            score=0.0,
            passed=False,
            value=value,
            expected=case.expected,
            error=error,
            metric=self.metric_key,
            learning=configuration.learning,
            tags=list(case.tags),
        )

    def _run_program(
        self,
        program: ast.Program,
        input_value: Any,
        configuration: Configuration,
        model: CellModel,
        learn: bool,
        replay: Cassette | None = None,
        judge: bool = False,
        traces: list[list[dict[str, Any]]] | None = None,
        label: str = "",
    ) -> tuple[Any, str | None, dict[str, float | int], str | None] | None:
        """(value, error, usage, run id), or None when the eval's budget stopped the run;
        the run's trace goes to `traces` when given (not for a queued run)."""
        import agentscript

        run_config = self._run_config(configuration, model, learn)
        run_config.models = self._model_options(configuration, judge)
        if self.queued is not None:
            return self._queued_run(program, input_value, run_config, label)
        if replay is not None:
            run_config.replay = replay
        try:
            result = agentscript.run(program, input_value, run_config)
        except AgentScriptError as error:
            if traces is not None:
                traces.append(list(error.trace or []))
            if isinstance(error, EvalBudgetExceeded):
                return None
            journal = error.journal
            return (
                None,
                describe(error),
                dict(error.spent or {}),
                journal.run_id if journal else None,
            )
        if traces is not None:
            traces.append(result.trace)
        journal_id = result.journal.run_id if result.journal is not None else None
        return result.value, None, dict(result.usage), journal_id

    def _queued_run(
        self, program: ast.Program, input_value: Any, run_config: RunConfig, label: str
    ) -> tuple[Any, str | None, dict[str, float | int], str | None] | None:
        """A run on the queue's workers, as `_run_program` returns it; its calls and tokens
        count against the eval's budget when it comes back."""
        assert self.queued is not None
        if self.meter.exhausted.is_set():
            return None
        outcome = self.queued.run(
            program,
            input_value,
            label,
            {
                "models": run_config.models,
                "variants": run_config.variants,
                "agent": run_config.agent,
                "function": run_config.function,
            },
            give_up=lambda: self.stop.is_set() or self.meter.exhausted.is_set(),
        )
        if outcome is None:
            return None
        self.meter.after_run(outcome.usage)
        run_id = outcome.runs[-1] if outcome.runs else None
        return outcome.value, outcome.error, outcome.usage, run_id

    def _model_options(self, configuration: Configuration, judge: bool) -> list[str]:
        """The `--model` values a cell's run gets (agentscript.app.model_choice): the
        configuration's model for the program; for the judge, `judge_model`, else the
        configuration's model when it names no single llm of the program (and the judge
        imports an llm to replace)."""
        from agentscript.app.model_choice import llm_names, parse_model_option

        if judge and self.config.judge_model:
            return [self.config.judge_model]
        chosen = configuration.model
        if chosen is None or chosen == MOCK:
            return []
        if judge:
            assert isinstance(self.metric, JudgeMetric)
            named = parse_model_option(chosen).name is not None
            if named or not llm_names(self.metric.program):
                return []
        return [chosen]

    def _run_config(
        self, configuration: Configuration, model: LlmProvider, learn: bool
    ) -> RunConfig:
        import agentscript

        return agentscript.RunConfig(
            model=model,
            agent=self.config.agent,
            function=self.config.function,
            environ=self.config.environ,
            workspace=self.config.workspace,
            journal=True,
            journal_path=self.config.journal_path,
            learn=learn and configuration.learning == LEARNING_ON,
            # Only the learning arm writes to memory: not even a run memory elsewhere.
            run_memory=learn and configuration.learning == LEARNING_ON,
            memory_db=self.config.memory_db,
            mock_tools=self.config.mock_tools,
            simulate_effects=self.config.simulate_effects,
            max_seconds=self.config.max_seconds,
            approve=self.config.approve,
            approvals=self.config.approvals,
            variants=dict(configuration.variant.sites) if configuration.variant else {},
        )

    def _replayed_run(
        self, case: Case, configuration: Configuration, judge: bool
    ) -> Cassette | None:
        """With `replay` naming an earlier eval's results: the cassette of the journaled run
        its row for this cell names (the judge's run with `judge`)."""
        if self.replayed_rows is None:
            return None
        row = self.replayed_rows.get(self._key(case, configuration))
        run_id = (row.judge_run_id if judge else row.run_id) if row is not None else None
        if run_id is None:
            what = "judge run" if judge else "run"
            raise LoadError(f"{self.source.replay} names no journaled {what} for this cell")
        from agentscript.learn.cassettes import journaled_run
        from agentscript.learn.journal import shared_journal

        return journaled_run(shared_journal(self._journal_path()), run_id).cassette

    def _cell_model(
        self, case: Case, configuration: Configuration, judge: bool, owned: list[Closeable]
    ) -> CellModel:
        """The cell's model: replayed, mock or real, maybe recorded, always metered. The judge
        answers with `judge_model` or its own model, the same in every configuration."""
        source = self.source
        mock_cell = source.kind == "mock" or (
            configuration.model == MOCK and not (judge and self.config.judge_model)
        )
        inner: LlmProvider
        if source.replays_runs:
            # The run's own replay answers (agentscript.app.replay); this model is not asked.
            inner = _shape_defaults()
        elif source.replay is not None:
            from agentscript.providers.llm.recording import ReplayLlm

            path = cassette(source.replay, configuration.slug, case.id, judge)
            if not path.exists():
                raise LoadError(f"No recording {path} for this cell (record it with --record)")
            inner = ReplayLlm(path)
        elif self.config.llm is not None:
            inner = self.config.llm
        elif mock_cell:
            inner = self.scripts.for_case(case.id) if self.scripts else _shape_defaults()
        else:
            inner = self._shared_router()
        if self.config.answers is not None and not source.replays_runs:
            inner = self.config.answers.around(inner)
        if source.record is not None:
            from agentscript.providers.llm.recording import RecordingLlm

            recorder = RecordingLlm(
                inner, cassette(source.record, configuration.slug, case.id, judge)
            )
            owned.append(recorder)
            inner = recorder
        priced = not mock_cell and self.config.llm is None
        return CellModel(inner, self.meter, priced=priced)

    def _shared_router(self) -> LlmProvider:
        with self._lock:
            if self._router is None:
                from agentscript.providers.llm.router import ModelRouter

                self._router = ModelRouter(self.config.environ)
            return self._router


def describe(error: AgentScriptError) -> str:
    """An error as a result row keeps it: with `file:line:column` when the run knows it."""
    return error.located() if isinstance(error, ExecutionError) else str(error)


def _shape_defaults() -> LlmProvider:
    from agentscript.providers.llm.mock import MockLlm

    return MockLlm()
