"""`agentscript runs export RUN --otlp`: send a past run to an OpenTelemetry collector.

The journal keeps every event with the time it happened, so a past run's spans are the ones it
would have sent live (the same `SpanRecorder` builds both), at their original times.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentscript.learn.journal import Journal
from agentscript.learn.journal_store import RUN_KIND
from agentscript.providers.telemetry.settings import OtlpSettings
from agentscript.runtime.errors import LoadError


@dataclass(frozen=True, slots=True)
class ExportReport:
    run_id: str
    endpoint: str
    spans: int
    failed_batches: int

    @property
    def ok(self) -> bool:
        return self.failed_batches == 0 and self.spans > 0


def export_run(journal: Journal, reference: str, settings: OtlpSettings) -> ExportReport:
    """Send RUN's spans and wait until the collector took them (or the export timed out)."""
    try:
        from agentscript.providers.telemetry.otel import Pipeline, SpanRecorder
    except ImportError:
        raise LoadError(
            "OpenTelemetry export needs the otel extra: pip install 'agentscript[otel]'"
        ) from None

    run = journal.resolve(reference)
    entries = journal.store.entries(run.run_id)
    pipeline = Pipeline.open(settings)
    recorder = SpanRecorder(pipeline.tracer, settings.capture_content, run.run_id, run.program)
    recorder.run_started(_ns(run.started_at), run.entry)
    ended = False
    for entry in entries:
        at = _ns(entry.at)
        if entry.kind == RUN_KIND:
            if entry.phase == "end":
                data = entry.data if isinstance(entry.data, dict) else {}
                error = data.get("error")
                recorder.run_ended(at, str(data.get("status")), str(error) if error else None)
                ended = True
            continue
        if entry.event_id is None:
            continue
        if entry.phase == "start":
            recorder.call_started(entry.event_id, entry.parent, at, dict(entry.data))
        else:
            recorder.event(entry.kind, entry.event_id, entry.parent, at, dict(entry.data))
    if not ended:
        status = journal.status(run)
        recorder.run_ended(_ns(run.ended_at or run.heartbeat_at), status, None)
    pipeline.shutdown()
    exporter = pipeline.exporter
    return ExportReport(run.run_id, settings.endpoint, exporter.exported, exporter.failures)


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)
