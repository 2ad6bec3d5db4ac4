"""The run journal's use cases: list, show, replay, trace, draw, view and export (as spans or
as a cassette) the runs of a workspace. Each opens the workspace (agentscript.app.workspace), reads its journal and closes it,
so the CLI and other clients only name the workspace and the run (an id, an id prefix or
`last`) and render what comes back."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from agentscript.app.workspace import Workspace

if TYPE_CHECKING:
    from agentscript.app.telemetry import ExportReport
    from agentscript.learn.execution_trace import TaskExecutionTrace
    from agentscript.learn.journal import Journal, RunDetail, RunView
    from agentscript.learn.pictures import RunPicture

Result = TypeVar("Result")


def _reading(workspace: str | Path | None, read: Callable[[Journal], Result]) -> Result:
    with Workspace(workspace) as place:
        return read(place.journal)


def list_runs(workspace: str | Path | None, limit: int | None = 20) -> list[RunView]:
    """The newest runs first, at most `limit` (None: all)."""
    from agentscript.learn import journal

    return _reading(workspace, lambda opened: journal.list_runs(opened, limit))


def show_run(workspace: str | Path | None, run: str) -> RunDetail:
    """Everything the journal holds about `run`."""
    from agentscript.learn import journal

    return _reading(workspace, lambda opened: journal.show_run(opened, run))


def replay_trace(workspace: str | Path | None, run: str) -> list[dict[str, Any]]:
    """`run`'s trace rebuilt from its events, as the run returned it."""
    from agentscript.learn import journal

    return _reading(workspace, lambda opened: journal.replay_run(opened, run))


def execution_trace(workspace: str | Path | None, run: str) -> TaskExecutionTrace:
    """`run`'s execution trace: goal, tool chain, approvals, files, result, success."""
    from agentscript.learn import journal

    return _reading(workspace, lambda opened: journal.run_trace(opened, run))


@dataclass(frozen=True)
class RunGraph:
    """`run`'s picture (its tool chain and task graph) and the page written, if one was."""

    picture: RunPicture
    page: Path | None


def draw_run(workspace: str | Path | None, run: str, html_file: str | Path | None) -> RunGraph:
    """`run`'s picture; with `html_file`, also its task graph as a self-contained SVG page."""
    from agentscript.learn.pictures import render_run_html, run_picture

    def draw(opened: Journal) -> RunGraph:
        picture = run_picture(opened, run)
        page = render_run_html(opened, run, html_file) if html_file is not None else None
        return RunGraph(picture, page)

    return _reading(workspace, draw)


def view_run(workspace: str | Path | None, run: str, out_file: str | Path | None) -> list[Path]:
    """Write `run`'s page (default .agentscript/views/<run id>.html); the page comes first."""
    from agentscript.app.run_view.page import write_run_pages

    return _reading(workspace, lambda opened: write_run_pages(opened, run, out_file))


def export_otlp(
    workspace: str | Path | None, run: str, endpoint: str | None, environ: Mapping[str, str]
) -> ExportReport:
    """Send `run` as OpenTelemetry spans to `endpoint` (default: OTEL_EXPORTER_OTLP_ENDPOINT
    in `environ`, else http://localhost:4318), with the times it happened."""
    from agentscript.app.telemetry import export_run
    from agentscript.providers.telemetry.settings import OtlpSettings

    settings = OtlpSettings.from_environ(environ, endpoint)
    return _reading(workspace, lambda opened: export_run(opened, run, settings))


@dataclass(frozen=True, slots=True)
class ExportedCassette:
    """What `export_cassette` wrote: how many exchanges of each kind, from which run."""

    run_id: str
    path: Path
    model: int
    tools: int
    memory: int


def export_cassette(
    workspace: str | Path | None,
    run: str,
    path: str | Path,
    environ: Mapping[str, str] | None = None,
) -> ExportedCassette:
    """Write `run` as a recording for `run --replay FILE`: its model, tool and memory calls,
    scrubbed with the provider keys in `environ` (default: this process's; what the journal
    keeps was scrubbed with the run's whole redaction set already)."""
    import os

    from agentscript.learn.cassettes import journaled_run
    from agentscript.providers.llm.endpoints import endpoint_secrets
    from agentscript.providers.storage.cassette_file import write_cassette
    from agentscript.runtime.secrets import SecretSet

    found = _reading(workspace, lambda opened: journaled_run(opened, run))
    cassette = found.cassette
    target = Path(path)
    secrets = SecretSet(endpoint_secrets(environ if environ is not None else os.environ))
    write_cassette(cassette, target, secrets)
    return ExportedCassette(
        found.run.run_id, target, len(cassette.model), len(cassette.tools), len(cassette.memory)
    )
