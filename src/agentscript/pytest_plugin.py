"""The pytest plugin (registered under the `pytest11` entry point as `agentscript`).

Fixtures, all offline and writing only into the test's tmp_path (journal, no learning):

* `agentscript_run(program, input, cassette=… | mock=…, **RunConfig fields)` runs a program,
  answering from a recording (`run --record FILE`) or scripted answers, and returns the
  RunResult.
* `agentscript_eval(program, cases, metric="exact", **EvalConfig fields)` runs an eval (with
  `replay=DIR` or `mock=FILE`) and returns its EvalReport; check it with
  `agentscript.testing.assert_score(report, 0.9)`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from agentscript.app.evals.report_data import EvalReport
    from agentscript.runtime.interpreter import RunResult


@pytest.fixture
def agentscript_run(tmp_path: Path) -> Callable[..., RunResult]:
    def run(
        program: str | Path,
        input: Any = None,
        *,
        cassette: str | Path | None = None,
        mock: str | Path | None = None,
        **config: Any,
    ) -> RunResult:
        import agentscript

        if (cassette is None) == (mock is None):
            raise ValueError("agentscript_run needs cassette=FILE or mock=FILE (it runs offline)")
        settings: dict[str, Any] = {
            "journal_path": tmp_path / "runs.db",
            "learn": False,
            "memory_db": tmp_path / "memory.db",
            **config,
        }
        if cassette is not None:
            settings["replay"] = cassette
        else:
            settings.update(model="mock", responses=mock)
        return agentscript.run(program, input, agentscript.RunConfig(**settings))

    return run


@pytest.fixture
def agentscript_eval(tmp_path: Path) -> Callable[..., EvalReport]:
    def evaluate(
        program: str | Path, cases: Any, metric: Any = "exact", **config: Any
    ) -> EvalReport:
        import agentscript

        if config.get("replay") is None and config.get("mock") in (None, False):
            raise ValueError("agentscript_eval needs replay=DIR or mock=FILE (it runs offline)")
        settings: dict[str, Any] = {
            "journal_path": tmp_path / "runs.db",
            "memory_db": tmp_path / "memory.db",
            **config,
        }
        return agentscript.evaluate(program, cases, agentscript.EvalConfig(**settings), metric)

    return evaluate
