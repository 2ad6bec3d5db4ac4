"""The parts of the machine that some tests need and a fresh machine may lack.

A test that needs one carries its marker (`@pytest.mark.browser`, `node`, `postgres`,
`real_model`). Outside CI a test whose part is missing is skipped, and the run ends with one line
per missing part saying what is missing and the command that installs it. With `CI=true` the
same test fails instead: CI installs every part (`.ci/run`), so a missing one is CI's fault and
must never pass unnoticed.

Each check is cheap (a PATH look-up, a file test) and made once per session.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest


@dataclass(frozen=True)
class SystemPart:
    """A thing outside Python that some tests use: how to tell it is missing, how to get it."""

    marker: str
    name: str
    install: str
    check: Callable[[], str | None] = field(repr=False)

    @functools.cached_property
    def missing(self) -> str | None:
        """Why the part cannot be used here (None when it can)."""
        return self.check()

    def skip_reason(self) -> str:
        return f"needs {self.name} ({self.missing}): {self.install}"


def _chromium() -> str | None:
    from browser import BrowserError, find_chromium

    try:
        executable = find_chromium()
    except BrowserError:
        return "no chromium on PATH"
    return None if os.access(executable, os.X_OK) else f"{executable} cannot be run"


def _node() -> str | None:
    absent = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    return f"no {' or '.join(absent)} on PATH" if absent else None


def _postgres() -> str | None:
    import pg_cluster

    return pg_cluster.unavailable_reason()


def _local_model() -> str | None:
    import local_model  # scripts/local_model.py

    return local_model.local_model_missing()


def in_ci() -> bool:
    """Whether this run is CI's, where every part is required."""
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


SYSTEM_PARTS: dict[str, SystemPart] = {
    part.marker: part
    for part in (
        SystemPart(
            "browser",
            "Chromium",
            "install it with `apt-get install -y chromium` (.ci/run does this)",
            _chromium,
        ),
        SystemPart(
            "node",
            "Node.js and npm",
            "install them with `apt-get install -y nodejs npm` (.ci/run does this)",
            _node,
        ),
        SystemPart(
            "postgres",
            "PostgreSQL",
            "install it with `apt-get install -y postgresql` (the tests start their own server)",
            _postgres,
        ),
        SystemPart(
            "real_model",
            "the local model",
            "build it with `make local-model` (.ci/run does this)",
            _local_model,
        ),
    )
}


# --- the pytest plugin (tests/conftest.py loads this module with `pytest_plugins`) ---------


def pytest_configure(config: pytest.Config) -> None:
    for part in SYSTEM_PARTS.values():
        config.addinivalue_line("markers", f"{part.marker}: needs {part.name}")


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker in SYSTEM_PARTS:
        if item.get_closest_marker(marker):
            require(marker)


def require(marker: str) -> None:
    """Skip the test being set up (fail it under CI) unless the part `marker` names is here.

    Markers call this before a test; a fixture that reaches a part only for some parameters
    (a store run on SQLite and on PostgreSQL) calls it itself.
    """
    part = SYSTEM_PARTS[marker]
    if part.missing is None:
        return
    if in_ci():
        pytest.fail(f"CI=true and this test {part.skip_reason()}", pytrace=False)
    pytest.skip(part.skip_reason())


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per missing part: how many tests it cost and the command that installs it."""
    reasons = [str(report.longrepr) for report in terminalreporter.stats.get("skipped", [])]
    for part in SYSTEM_PARTS.values():
        if part.missing is None:
            continue
        count = sum(part.skip_reason() in reason for reason in reasons)
        if count:
            tests = "test" if count == 1 else "tests"
            terminalreporter.write_line(
                f"skipped {count} {tests} that need {part.name} ({part.missing}): {part.install}",
                yellow=True,
            )
