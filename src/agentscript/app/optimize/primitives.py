"""`host://optimizer`: the original's primitives for programs that optimize other programs
(0.1.18), on the optimizer's own code (space.py, source.py).

    import tool Optimizer from "host://optimizer"     // the original also names it host://agentscript

- `inspect({target})`: the target's `use one of` sites, what it picks today, a snapshot id;
- `trial({target, selection, input, entry?, snapshot_id?, trace?})`: one run of the target with
  those picks; its tools answer from the mock, so a trial has no effect (the original ran them
  for real); its model is the calling run's choice (the real one, or `--mock`'s);
- `specialize({target, selection, write?, output?, fill_missing?, snapshot_id?})`: the target
  with those picks written into its source (`selected` moved), as a diff (`write: "preview"`),
  a copy (`"copy"`, the default, next to it or at `output`) or in place (`"in_place"`).

Targets are programs inside the workspace. Mistakes in the arguments (an unknown site or
candidate, a snapshot that no longer matches) come back as `{ok: false, code, …}`, as in the
original, so an optimizing program can react to them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentscript.app.optimize.space import SearchSpace, Trial
from agentscript.providers.tools.base import Risk, object_argument
from agentscript.providers.tools.workspace import Workspace
from agentscript.runtime.budgets import BudgetExceeded
from agentscript.runtime.errors import AgentScriptError, ExecutionError
from agentscript.runtime.ports import ToolCall

# What a trial's run is: the target, its input, the picks (site id → candidate), the entry.
TrialRunner = Callable[[Path, Any, dict[str, str], str | None, str | None], Any]
WRITE_MODES = ("preview", "copy", "in_place")


class OptimizerTool:
    """The `host://optimizer` methods over the programs of one workspace."""

    def __init__(
        self, jail: Workspace, run_trial: TrialRunner, max_trials: int | None = None
    ) -> None:
        self._jail = jail
        self._run_trial = run_trial
        # The trials a run may make (None: no limit): past it, the run stops at the call.
        self._trials_left = max_trials
        self._max_trials = max_trials

    def risk(self, request: ToolCall) -> Risk:
        if request.method == "specialize":
            arguments = (
                request.args[0] if request.args and isinstance(request.args[0], dict) else {}
            )
            return "read" if arguments.get("write") == "preview" else "effect"
        return "read"

    def call(self, request: ToolCall) -> Any:
        label = f"Optimizer.{request.method}"
        arguments = object_argument(request, label)
        methods = {"inspect": self._inspect, "trial": self._trial, "specialize": self._specialize}
        method = methods.get(request.method)
        if method is None:
            raise ExecutionError(
                f"Unknown Optimizer method '{request.method}'. Supported: inspect, trial, specialize"
            )
        return method(arguments, label)

    # ------------------------------------------------------------------ the methods

    def _inspect(self, arguments: dict[str, Any], label: str) -> dict[str, Any]:
        target, program, problem = self._load(arguments, label)
        if problem is not None:
            return problem
        space = SearchSpace.of(program, [])
        sites = [
            {
                "site_id": site,
                "label": choice.label,
                "selected": choice.current,
                "candidates": [{"name": name} for name in choice.candidates],
            }
            for choice in space.choices
            for site in choice.sites
        ]
        return {
            "ok": True,
            "target": self._shown(target),
            "snapshot_id": _snapshot(program),
            "files": [self._shown(Path(path)) for path in _files(program)],
            "variant_sites": sites,
            "baseline_selection": {site["site_id"]: site["selected"] for site in sites},
            "warnings": [] if sites else [{"code": "no_variant_sites"}],
        }

    def _trial(self, arguments: dict[str, Any], label: str) -> dict[str, Any]:
        target, program, problem = self._load(arguments, label)
        if problem is not None:
            return problem
        selection, problem = _selection(arguments, SearchSpace.of(program, []))
        if problem is not None:
            return problem
        warnings = _snapshot_warnings(arguments, program)
        entry = arguments.get("entry") or {}
        if not isinstance(entry, dict):
            raise ExecutionError(f"{label}.entry must be an object with an agent string")
        if self._trials_left is not None:
            if self._trials_left <= 0:
                raise BudgetExceeded(
                    "trials",
                    f"Run budget exceeded: more than {self._max_trials} trials (--max-trials)",
                )
            self._trials_left -= 1
        try:
            result = self._run_trial(
                target, arguments.get("input", {}), selection, entry.get("agent"), entry.get("func")
            )
        except AgentScriptError as error:
            return {"ok": False, "code": "target_runtime_error", "message": str(error)}
        return {
            "ok": True,
            "result": result.value,
            "usage": {
                "llm_calls": result.usage.get("calls", 0),
                "prompt_tokens": result.usage.get("input_tokens", 0),
                "output_tokens": result.usage.get("output_tokens", 0),
            },
            "picked": _picked(result.trace),
            "unreached_selection": [s for s in selection if s not in _picked(result.trace)],
            "warnings": warnings,
            "trace": result.trace if arguments.get("trace") == "full" else None,
        }

    def _specialize(self, arguments: dict[str, Any], label: str) -> dict[str, Any]:
        from agentscript.app.optimize.source import rewrite

        target, program, problem = self._load(arguments, label)
        if problem is not None:
            return problem
        expected = arguments.get("snapshot_id")
        if expected and expected != _snapshot(program):
            return {"ok": False, "code": "snapshot_mismatch", "expected": expected,
                    "actual": _snapshot(program)}  # fmt: skip
        space = SearchSpace.of(program, [])
        selection, problem = _selection(arguments, space)
        if problem is not None:
            return problem
        if arguments.get("fill_missing", "source_default") == "require":
            missing = [s for c in space.choices for s in c.sites if s not in selection]
            if missing:
                return {"ok": False, "code": "incomplete_selection", "missing_sites": missing}
        write = arguments.get("write", "copy")
        if write not in WRITE_MODES:
            raise ExecutionError(f"{label}.write must be 'preview', 'copy' or 'in_place'")
        picks = {c.label: selection.get(c.sites[0], c.current) for c in space.choices}
        baseline = space.baseline
        winner = Trial(tuple((label_, picks[label_]) for label_, _ in baseline.picks), None)
        comment = str(arguments.get("comment") or "specialized by host://optimizer")
        changes = rewrite(program, space, baseline, winner, comment)
        diff = "".join(change.diff(target.parent) for change in changes)
        outputs: list[str] = []
        if changes and write != "preview":
            for change in changes:
                destination = self._destination(change.path, target, write, arguments)
                destination.write_text(change.after, encoding="utf-8")
                outputs.append(self._shown(destination))
        return {
            "ok": True,
            "changed": bool(changes),
            "outputs": outputs,
            "diff": diff,
            "snapshot_id": _snapshot(program),
        }

    # ------------------------------------------------------------------ helpers

    def _load(
        self, arguments: dict[str, Any], label: str
    ) -> tuple[Path, Any, dict[str, Any] | None]:
        from agentscript.app.programs import check, load

        name = arguments.get("target")
        if not isinstance(name, str) or not name:
            raise ExecutionError(f"{label}.target is required")
        target = self._inside(name)
        try:
            program = load(target)
        except AgentScriptError as error:
            return target, None, {"ok": False, "code": "load_error", "message": str(error)}
        errors = [d.format() for d in check(program) if d.severity == "error"]
        if errors:
            return target, program, {"ok": False, "code": "semantic_error", "diagnostics": errors}
        return target, program, None

    def _destination(self, path: Path, target: Path, write: str, arguments: dict[str, Any]) -> Path:
        if write == "in_place":
            return path
        output = arguments.get("output")
        if isinstance(output, str) and output and path == target:
            return self._inside(output)
        return path.with_name(f"{path.stem}.specialized{path.suffix}")

    def _inside(self, name: str) -> Path:
        """`name`'s path in the workspace, symlinks resolved; a refusal when it leaves it."""
        return self._jail.root.joinpath(*self._jail.parts(name))

    def _shown(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self._jail.root).as_posix()
        except ValueError:
            return str(path)


def _selection(
    arguments: dict[str, Any], space: SearchSpace
) -> tuple[dict[str, str], dict[str, Any] | None]:
    raw = arguments.get("selection") or {}
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise ExecutionError("selection must be an object of site id → candidate name")
    sites = {site: choice for choice in space.choices for site in choice.sites}
    for site, pick in raw.items():
        if site not in sites:
            return {}, {"ok": False, "code": "unknown_selection_key", "site_id": site}
        if pick not in sites[site].candidates:
            return {}, {"ok": False, "code": "unknown_variant", "site_id": site, "variant": pick}
    return dict(raw), None


def _snapshot(program: Any) -> str:
    from agentscript.app.programs import program_digest

    return f"sha256:{program_digest(program)}"


def _snapshot_warnings(arguments: dict[str, Any], program: Any) -> list[dict[str, Any]]:
    expected = arguments.get("snapshot_id")
    actual = _snapshot(program)
    if expected and expected != actual:
        return [{"code": "snapshot_mismatch", "expected": expected, "actual": actual}]
    return []


def _files(program: Any) -> list[str]:
    from agentscript.app.programs import program_files

    return program_files(program)


def _picked(trace: list[dict[str, Any]]) -> dict[str, Any]:
    """The `use one of` picks a trial's trace shows, by site id (nested calls included)."""
    picked: dict[str, Any] = {}
    for event in _events(trace):
        variant = event.get("data", {}).get("variant")
        if isinstance(variant, dict) and isinstance(variant.get("site_id"), str):
            picked[variant["site_id"]] = {
                "variant": variant.get("picked"),
                "reason": variant.get("reason"),
                "empty": bool(variant.get("empty")),
            }
    return picked


def _events(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for event in trace:
        found.append(event)
        data = event.get("data", {})
        if isinstance(data.get("trace"), list):
            found.extend(_events(data["trace"]))
        for iteration in data.get("iterations") or []:
            if isinstance(iteration, dict) and isinstance(iteration.get("trace"), list):
                found.extend(_events(iteration["trace"]))
    return found
