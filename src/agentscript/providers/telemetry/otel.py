"""OpenTelemetry spans for runs, following the GenAI semantic conventions, sent over OTLP/HTTP.

One `SpanRecorder` turns a run's trace events into spans: the run (`invoke_workflow`), each
agent call (`invoke_agent`), each generate (`chat`, with the requested and answering model,
tokens and finish reasons) and each tool call (`execute_tool`, with the tool's name and URI);
memory operations get spans of their own, approvals, loop steps and retries are events on the
enclosing span, and failures are an error status with an `exception` event. It is fed live by
`OtelTraceSink` (a TraceSink) or afterwards from the journal (`agentscript runs export`); both
give each span the time the event happened.

Prompts, answers, tool arguments and results are attached only when the user opts in with the
conventions' switch, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true; they come from
the trace, so a secret the run handed out is "[REDACTED]" there as in the trace.

Exporting never slows or fails a run: spans leave in a background batch shared by the runs of
a process, the exporter's errors are counted rather than raised, and a process exiting waits
for the last batch only briefly.

This module needs the `otel` extra (opentelemetry-sdk and -exporter-otlp-proto-http).
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import PurePath
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from agentscript.providers.telemetry.settings import OtlpSettings
from agentscript.runtime.jsjson import stringify
from agentscript.runtime.trace import TraceEvent, TraceSink

# How long a process that exits waits for the last spans of its runs to leave.
EXIT_WAIT_SECONDS = 2.0
# The exporter warns at every retry while a collector is down; one error per batch it gives
# up on says enough on a user's terminal.
for _name in (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.common.http",
):
    logging.getLogger(_name).setLevel(logging.ERROR)
SCOPE = "agentscript"
# Kinds of events that become spans; the others become events on the enclosing span.
_SPAN_KINDS = frozenset({"generate", "tool", "memory", "parallel_for"})


class CountingExporter(SpanExporter):
    """The OTLP exporter, with what went wrong counted instead of raised."""

    def __init__(self, settings: OtlpSettings) -> None:
        self._inner = OTLPSpanExporter(
            endpoint=settings.endpoint,
            headers=settings.headers,
            timeout=settings.timeout_seconds,
        )
        self.exported = 0
        self.failures = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self._inner.export(spans)
        except Exception:  # a collector that is down must not break anything
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            self.exported += len(spans)
        else:
            self.failures += 1
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()  # type: ignore[no-untyped-call]

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


@dataclass(slots=True)
class Pipeline:
    """A tracer provider of our own (the host's global one is left alone) with its exporter."""

    provider: TracerProvider
    exporter: CountingExporter
    tracer: trace.Tracer

    @classmethod
    def open(cls, settings: OtlpSettings) -> Pipeline:
        # Not shut down by OpenTelemetry at exit: `wait_for_telemetry` (atexit) bounds that wait,
        # and a second, unbounded one would wait out the exporter's retries to a collector
        # that is down.
        provider = TracerProvider(resource=_resource(settings.service_name), shutdown_on_exit=False)
        exporter = CountingExporter(settings)
        provider.add_span_processor(BatchSpanProcessor(exporter))
        return cls(provider, exporter, provider.get_tracer(SCOPE))

    @classmethod
    def shared(cls, settings: OtlpSettings) -> Pipeline:
        """The process's pipeline for these settings: the runs of a process share one batch
        (and its thread and connection), so a run pays only for its spans."""
        key = (
            settings.endpoint,
            tuple(sorted(settings.headers.items())),
            settings.timeout_seconds,
            settings.service_name,
        )
        with _SHARED_LOCK:
            pipeline = _SHARED.get(key)
            if pipeline is None:
                pipeline = _SHARED[key] = cls.open(settings)
        return pipeline

    def flush(self, timeout: float) -> bool:
        """Send what is waiting; False if `timeout` seconds passed first."""
        return self.provider.force_flush(int(timeout * 1000))

    def shutdown(self) -> None:
        """Send what is left and stop (waits up to the export timeout)."""
        self.provider.shutdown()


_SHARED: dict[tuple[object, ...], Pipeline] = {}
_SHARED_LOCK = threading.Lock()


@cache
def _resource(service_name: str) -> Resource:
    """Built once per name: the resource detectors take milliseconds."""
    return Resource.create({"service.name": service_name})


def wait_for_telemetry(timeout: float = EXIT_WAIT_SECONDS) -> bool:
    """Send the spans of this process's runs, waiting at most `timeout` seconds in all (the
    pipelines flush side by side); False if some were still on their way. Runs at exit."""
    with _SHARED_LOCK:
        pipelines = list(_SHARED.values())
    results: list[bool] = []
    threads = [
        threading.Thread(target=lambda p=pipeline: results.append(p.flush(timeout)), daemon=True)
        for pipeline in pipelines
    ]
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return len(results) == len(threads) and all(results)


atexit.register(wait_for_telemetry)


class SpanRecorder:
    """Builds the spans of one run from its events, each at the time it happened (ns)."""

    def __init__(
        self,
        tracer: trace.Tracer,
        capture_content: bool,
        run_id: str | None = None,
        program: str | None = None,
    ) -> None:
        self.tracer = tracer
        self.capture = capture_content
        self.run_id = run_id
        self.program = program
        self.run_span: Span | None = None
        self.calls: dict[int, Span] = {}
        # When the run and each open call began: no span starts before the one it is in.
        self.run_start = 0
        self.call_starts: dict[int, int] = {}

    # ------------------------------------------------------------------ the run

    def run_started(self, at: int, entry: str | None = None) -> None:
        name = PurePath(self.program).name if self.program else "program"
        attributes: dict[str, Any] = {"gen_ai.operation.name": "invoke_workflow"}
        if self.run_id:
            attributes["agentscript.run.id"] = self.run_id
        if self.program:
            attributes["agentscript.program"] = self.program
        if entry:
            attributes["agentscript.entry"] = entry
        self.run_span = self.tracer.start_span(
            f"invoke_workflow {name}", attributes=attributes, start_time=at
        )
        self.run_start = at

    def run_ended(self, at: int, status: str, error: str | None = None) -> None:
        span = self._root(at)
        span.set_attribute("agentscript.run.status", status)
        for call in list(self.calls.values()):  # calls a killed run left open
            call.end(end_time=at)
        self.calls.clear()
        self.call_starts.clear()
        if status == "ok":
            span.set_status(Status(StatusCode.OK))
        else:
            _fail(span, error or status, "agentscript.RunError", at)
        span.end(end_time=at)

    # ------------------------------------------------------------------ events

    def call_started(
        self, event_id: int, parent: int | None, at: int, data: dict[str, Any]
    ) -> None:
        agent = str(data.get("agent"))
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
            "agentscript.function": str(data.get("function")),
        }
        if self.capture:
            attributes["agentscript.call.arguments"] = _json(data.get("args"))
        self.calls[event_id] = self.tracer.start_span(
            f"invoke_agent {agent}",
            context=self._context(parent, at),
            attributes=attributes,
            start_time=at,
        )
        self.call_starts[event_id] = at

    def event(
        self, kind: str, event_id: int | None, parent: int | None, at: int, data: dict[str, Any]
    ) -> None:
        if kind == "agent" and event_id is not None:
            self._call_finished(event_id, parent, at, data)
        elif kind in _SPAN_KINDS:
            self._span_event(kind, parent, at, data)
        else:
            self._enclosing(parent, at).add_event(
                f"agentscript.{kind}", _event_attributes(kind, data), timestamp=at
            )

    def _call_finished(
        self, event_id: int, parent: int | None, at: int, data: dict[str, Any]
    ) -> None:
        span = self.calls.pop(event_id, None)
        if span is None:  # the start was missed: the end says it all
            self.call_started(event_id, parent, at, data)
            span = self.calls.pop(event_id)
        self.call_starts.pop(event_id, None)
        if "error" in data:
            _fail(span, str(data["error"]), "agentscript.ExecutionError", at)
        elif self.capture:
            span.set_attribute("agentscript.call.result", _json(data.get("result")))
        span.end(end_time=at)

    def _span_event(self, kind: str, parent: int | None, at: int, data: dict[str, Any]) -> None:
        duration = data.get("duration_ms")
        start = at - int(float(duration) * 1e6) if isinstance(duration, int | float) else at
        # A duration in whole milliseconds (a parallel for's) may reach up to half of one
        # before the span it is in began: no span starts before the one it is in.
        start = max(start, self._enclosing_start(parent))
        if kind == "generate":
            name, span_kind, attributes = self._generate(data)
        elif kind == "tool":
            name, span_kind, attributes = self._tool(data)
        elif kind == "memory":
            name = f"memory {data.get('memory')}.{data.get('operation')}"
            span_kind, attributes = SpanKind.INTERNAL, _memory_attributes(data, self.capture)
        else:
            name, span_kind = f"parallel_for {data.get('item')}", SpanKind.INTERNAL
            attributes = {
                "agentscript.parallel.items": int(data.get("items") or 0),
                "agentscript.parallel.concurrency": int(data.get("concurrency") or 1),
            }
        span = self.tracer.start_span(
            name,
            context=self._context(parent, start),
            kind=span_kind,
            attributes=attributes,
            start_time=start,
        )
        errors = data.get("errors") if kind == "generate" else None
        for attempt, reason in enumerate(errors or [], start=1):
            span.add_event(
                "agentscript.repair",
                {"agentscript.attempt": attempt, "agentscript.reason": str(reason)},
                timestamp=start,
            )
        failure = _failure(kind, data)
        if failure is not None:
            _fail(span, failure, _ERROR_TYPES.get(kind, "agentscript.Error"), at)
        span.end(end_time=at)

    def _generate(self, data: dict[str, Any]) -> tuple[str, SpanKind, dict[str, Any]]:
        context = data.get("context") if isinstance(data.get("context"), dict) else {}
        assert isinstance(context, dict)
        model_uri = data.get("model") or (context.get("model") or {}).get("uri")
        provider, model = _provider_and_model(model_uri)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            # The older name of the provider attribute, still read by many backends.
            "gen_ai.system": provider,
            "gen_ai.request.model": model,
            "agentscript.generate.attempts": int(data.get("attempts") or 1),
        }
        agent = context.get("agentName")
        if agent:
            attributes["gen_ai.agent.name"] = str(agent)
        if data.get("response_model"):
            attributes["gen_ai.response.model"] = str(data["response_model"])
        if data.get("finish_reasons"):
            attributes["gen_ai.response.finish_reasons"] = [str(r) for r in data["finish_reasons"]]
        usage = data.get("usage")
        if isinstance(usage, dict):
            attributes["gen_ai.usage.input_tokens"] = int(usage.get("input_tokens") or 0)
            attributes["gen_ai.usage.output_tokens"] = int(usage.get("output_tokens") or 0)
        if self.capture:
            attributes.update(_messages(context, data))
        return f"chat {model}", SpanKind.CLIENT, attributes

    def _tool(self, data: dict[str, Any]) -> tuple[str, SpanKind, dict[str, Any]]:
        name = f"{data.get('tool')}.{data.get('method')}"
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.type": "extension",
            "agentscript.tool.uri": str(data.get("uri")),
            "agentscript.tool.scheme": str(data.get("scheme")),
        }
        effects = data.get("effects")
        if isinstance(effects, list):
            attributes["agentscript.tool.effects"] = len(effects)
        if self.capture:
            attributes["gen_ai.tool.call.arguments"] = _json(data.get("args"))
            attributes["gen_ai.tool.call.result"] = _json(data.get("result"))
        return f"execute_tool {name}", SpanKind.INTERNAL, attributes

    # ------------------------------------------------------------------ parents

    def _root(self, at: int) -> Span:
        if self.run_span is None:
            self.run_started(at)
        assert self.run_span is not None
        return self.run_span

    def _enclosing(self, parent: int | None, at: int) -> Span:
        call = self.calls.get(parent) if parent is not None else None
        return call if call is not None else self._root(at)

    def _enclosing_start(self, parent: int | None) -> int:
        call = self.call_starts.get(parent) if parent is not None else None
        return call if call is not None else self.run_start

    def _context(self, parent: int | None, at: int) -> Any:
        return trace.set_span_in_context(self._enclosing(parent, at))


class OtelTraceSink(TraceSink):
    """Spans of a run as it happens, handed to the process's batch for its collector; the
    batch leaves in the background (and at exit, waited for at most EXIT_WAIT_SECONDS), so a
    collector that is slow or down costs the run nothing."""

    def __init__(
        self,
        settings: OtlpSettings,
        run_id: str | None = None,
        program: str | None = None,
        clock: Any = time.time_ns,
    ) -> None:
        self.settings = settings
        self.pipeline = Pipeline.shared(settings)
        self.recorder = SpanRecorder(
            self.pipeline.tracer, settings.capture_content, run_id, program
        )
        self._clock = clock
        self._lock = threading.Lock()
        self._ended = False
        self.recorder.run_started(self._clock())

    def agent_started(self, call: TraceEvent) -> None:
        with self._lock:
            self.recorder.call_started(call.id, call.parent, self._clock(), dict(call.data))

    def event(self, event: TraceEvent) -> None:
        with self._lock:
            self.recorder.event(event.kind, event.id, event.parent, self._clock(), event.data)

    def run_ended(self, status: str, error: str | None = None) -> None:
        with self._lock:
            if not self._ended:
                self._ended = True
                self.recorder.run_ended(self._clock(), status, error)

    def close(self) -> None:
        """The run's providers close: its spans are complete (they leave with the batch)."""
        self.run_ended("interrupted", "the run ended without saying how")


# ----------------------------------------------------------------------------- attributes


_ERROR_TYPES = {
    "generate": "agentscript.GenerateFailed",
    "tool": "agentscript.ToolFailed",
    "memory": "agentscript.MemoryFailed",
    "parallel_for": "agentscript.ParallelFailed",
}


def _failure(kind: str, data: dict[str, Any]) -> str | None:
    if data.get("error"):
        return str(data["error"])
    if data.get("ok") is False:
        return f"{kind} failed"
    result = data.get("result")
    if kind == "tool" and isinstance(result, dict) and result.get("ok") is False:
        return str(result.get("error") or "the tool answered ok: false")
    return None


def _fail(span: Span, message: str, error_type: str, at: int) -> None:
    span.set_status(Status(StatusCode.ERROR, message))
    span.set_attribute("error.type", error_type)
    span.add_event(
        "exception",
        {"exception.type": error_type, "exception.message": message},
        timestamp=at,
    )


def _provider_and_model(uri: Any) -> tuple[str, str]:
    """`openai://gpt-4.1-mini` → ("openai", "gpt-4.1-mini"); an Ollama host is left out."""
    if not isinstance(uri, str) or "://" not in uri:
        return "unknown", "unknown"
    scheme, rest = uri.split("://", 1)
    rest = rest.split("?", 1)[0].strip("/")
    if scheme == "ollama" and "/" in rest:
        rest = rest.split("/", 1)[1]
    return scheme, rest or "unknown"


def _messages(context: dict[str, Any], data: dict[str, Any]) -> dict[str, str]:
    """The content attributes of a chat span, in the conventions' message format."""
    content: dict[str, str] = {}
    if isinstance(context.get("system"), str):
        content["gen_ai.system_instructions"] = _json(
            [{"type": "text", "content": context["system"]}]
        )
    if isinstance(context.get("finalUserMessage"), str):
        content["gen_ai.input.messages"] = _json(
            [{"role": "user", "parts": [{"type": "text", "content": context["finalUserMessage"]}]}]
        )
    if "result" in data:
        answer = data["result"]
        text = answer if isinstance(answer, str) else stringify(answer)
        message: dict[str, Any] = {
            "role": "assistant",
            "parts": [{"type": "text", "content": text}],
        }
        reasons = data.get("finish_reasons")
        if reasons:
            message["finish_reason"] = reasons[-1]
        content["gen_ai.output.messages"] = _json([message])
    return content


def _memory_attributes(data: dict[str, Any], capture: bool) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "agentscript.memory.name": str(data.get("memory")),
        "agentscript.memory.operation": str(data.get("operation")),
        "agentscript.memory.uri": str(data.get("uri")),
    }
    if isinstance(data.get("count"), int):
        attributes["agentscript.memory.count"] = data["count"]
    if capture:
        attributes["agentscript.memory.arguments"] = _json(data.get("args"))
        attributes["agentscript.memory.result"] = _json(data.get("result"))
    return attributes


def _event_attributes(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """What an event keeps: scalar fields only (no values a program handled)."""
    keep = _EVENT_FIELDS.get(kind, ())
    attributes: dict[str, Any] = {}
    for key in keep:
        value = data.get(key)
        if isinstance(value, str | int | float | bool):
            attributes[f"agentscript.{key}"] = value
    return attributes


_EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "approval": ("tool", "method", "uri", "decision", "by", "risk", "mode", "approval_id"),
    "for": ("item", "index"),
    "use": ("source", "label"),
    "input": ("path",),
    "llm_retry": ("provider", "status", "retry", "wait_ms"),
}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
