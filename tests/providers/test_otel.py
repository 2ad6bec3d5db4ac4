"""OpenTelemetry export, live and from the journal, against a local OTLP/HTTP collector that
decodes the protobuf payloads: the span tree, GenAI attributes, errors, content capture and
its redaction, and a collector that is down."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from agentscript.app.telemetry import export_run
from agentscript.learn.journal import Journal
from agentscript.providers.telemetry.otel import Pipeline, SpanRecorder, wait_for_telemetry
from agentscript.providers.telemetry.settings import CAPTURE_VARIABLE, OtlpSettings
from local_http import LocalHTTPServer
from otlp_support import Collector, ReceivedSpan, closed_port
from run_view_support import SECRET, run_everything

OK, ERROR = 1, 2
INTERNAL, CLIENT = 1, 3


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = LocalHTTPServer(host="127.0.0.1")
    server.start()
    try:
        yield Collector(server)
    finally:
        server.stop()


@pytest.fixture
def model_server() -> Iterator[HTTPServer]:
    server = LocalHTTPServer(host="127.0.0.1")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def live_run(
    model_server: HTTPServer,
    collector: Collector,
    workspace: Path,
    capture: bool = False,
    writer_fails: bool = False,
) -> str:
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "OTEL_SERVICE_NAME": "tests"}
    if capture:
        environ[CAPTURE_VARIABLE] = "true"
    viewed = run_everything(
        model_server, workspace, writer_fails=writer_fails, extra_environ=environ
    )
    wait_for_telemetry(10)
    assert collector.received.wait(10)
    return viewed.run_id


def by_name(spans: list[ReceivedSpan]) -> dict[str, list[ReceivedSpan]]:
    grouped: dict[str, list[ReceivedSpan]] = {}
    for span in spans:
        grouped.setdefault(span.name, []).append(span)
    return grouped


def test_a_live_run_sends_its_span_tree_with_genai_attributes(
    model_server: HTTPServer, collector: Collector, tmp_path: Path
) -> None:
    run_id = live_run(model_server, collector, tmp_path)
    (root,) = [span for span in collector.spans if not span.parent_id]
    assert root.name == "invoke_workflow everything.as"
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["agentscript.run.id"] == run_id
    assert root.status_code == OK
    assert root.resource["service.name"] == "tests"
    assert {span.trace_id for span in collector.spans} == {root.trace_id}
    names = by_name(collector.spans)
    agents = names["invoke_agent Writer"]
    assert len(agents) == 3 and all(span.parent_id == root.span_id for span in agents)
    assert all(span.attributes["gen_ai.agent.name"] == "Writer" for span in agents)
    chats = names["chat gpt-4.1-mini"]
    assert len(chats) == 4
    writer_chats = [span for span in chats if span.parent_id != root.span_id]
    assert sorted(span.parent_id for span in writer_chats) == sorted(a.span_id for a in agents)
    repaired = [span for span in chats if span.attributes["agentscript.generate.attempts"] == 2]
    (chat,) = repaired
    assert chat.kind == CLIENT
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.provider.name"] == "openai"
    assert chat.attributes["gen_ai.request.model"] == "gpt-4.1-mini"
    assert chat.attributes["gen_ai.response.model"] == "gpt-4.1-mini-2025-04-14"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 240
    assert chat.attributes["gen_ai.usage.output_tokens"] == 24
    assert chat.attributes["gen_ai.response.finish_reasons"] == ["stop", "stop"]
    assert [name for name, _ in chat.events] == ["agentscript.repair"]
    assert "must be a string" in chat.events[0][1]["agentscript.reason"]
    assert chat.start_ns < chat.end_ns
    (write,) = names["execute_tool File.write"]
    assert write.kind == INTERNAL
    assert write.attributes["gen_ai.operation.name"] == "execute_tool"
    assert write.attributes["gen_ai.tool.name"] == "File.write"
    assert write.attributes["agentscript.tool.uri"] == "file://workspace"
    assert write.attributes["agentscript.tool.effects"] == 1
    approvals = [attrs for name, attrs in root.events if name == "agentscript.approval"]
    assert [a["agentscript.decision"] for a in approvals] == ["pending", "approved"]
    assert len(names["memory Notes.add"]) == 3 and len(names["memory Notes.query"]) == 1
    assert len(names["parallel_for topic"]) == 1


def test_content_is_left_out_unless_opted_in(
    model_server: HTTPServer, collector: Collector, tmp_path: Path
) -> None:
    live_run(model_server, collector, tmp_path)
    content_keys = {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }
    for span in collector.spans:
        assert not content_keys & set(span.attributes), span.name
    payload = b"".join(collector.raw)
    assert b"Write one line about the topic." not in payload
    assert SECRET.encode() not in payload


def test_opted_in_content_is_sent_redacted(
    model_server: HTTPServer, collector: Collector, tmp_path: Path
) -> None:
    live_run(model_server, collector, tmp_path, capture=True)
    names = by_name(collector.spans)
    chat = names["chat gpt-4.1-mini"][0]
    assert "Role: writer." in chat.attributes["gen_ai.system_instructions"]
    assert "Write one line about the topic." in chat.attributes["gen_ai.input.messages"]
    assert '"role": "assistant"' in chat.attributes["gen_ai.output.messages"]
    (write,) = names["execute_tool File.write"]
    assert "written with [REDACTED]" in write.attributes["gen_ai.tool.call.arguments"]
    (env,) = names["execute_tool Env.get"]
    assert "[REDACTED]" in env.attributes["gen_ai.tool.call.result"]
    assert SECRET.encode() not in b"".join(collector.raw)


def test_failures_are_error_statuses_with_exception_events(
    model_server: HTTPServer, collector: Collector, tmp_path: Path
) -> None:
    live_run(model_server, collector, tmp_path, writer_fails=True)
    (root,) = [span for span in collector.spans if not span.parent_id]
    assert root.status_code == ERROR and "parallel for failed" in root.status_message
    failed = [span for span in collector.named("chat ") if span.status_code == ERROR]
    assert len(failed) == 3
    chat = failed[0]
    assert chat.attributes["error.type"] == "agentscript.GenerateFailed"
    exceptions = [attrs for name, attrs in chat.events if name == "exception"]
    assert "must be a string" in exceptions[0]["exception.message"]
    assert all(span.status_code == ERROR for span in collector.named("invoke_agent Writer"))


def test_a_collector_that_is_down_neither_fails_nor_holds_up_the_run(
    model_server: HTTPServer, tmp_path: Path
) -> None:
    down = f"http://127.0.0.1:{closed_port()}"
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": down, "OTEL_EXPORTER_OTLP_TIMEOUT": "300"}
    viewed = run_everything(model_server, tmp_path, extra_environ=environ)
    assert viewed.result is not None
    assert viewed.result.value == {"summary": "Three lines were written.", "count": 3}
    wait_for_telemetry(10)
    exporter = Pipeline.shared(OtlpSettings.from_environ(environ)).exporter
    assert exporter.failures >= 1 and exporter.exported == 0  # counted, not raised


def test_a_past_run_is_exported_from_the_journal_with_its_times(
    model_server: HTTPServer, collector: Collector, tmp_path: Path
) -> None:
    viewed = run_everything(model_server, tmp_path)  # no collector configured: nothing sent
    assert collector.spans == []
    journal = Journal.for_workspace(tmp_path)
    try:
        report = export_run(journal, "last", OtlpSettings.from_environ({}, collector.endpoint))
        run = journal.resolve(viewed.run_id)
    finally:
        journal.close()
    assert report.ok and report.run_id == viewed.run_id
    # run, Env.get, parallel for, 3 Writer calls, 4 generates, 4 memory operations, File.write
    assert report.spans == len(collector.spans) == 15
    (root,) = [span for span in collector.spans if not span.parent_id]
    assert root.start_ns == int(run.started_at * 1e9)
    assert run.ended_at is not None and root.end_ns == int(run.ended_at * 1e9)
    names = by_name(collector.spans)
    assert len(names["chat gpt-4.1-mini"]) == 4 and len(names["invoke_agent Writer"]) == 3
    assert all(
        root.start_ns <= span.start_ns <= span.end_ns <= root.end_ns for span in collector.spans
    )


def test_a_span_whose_duration_reaches_back_never_starts_before_the_one_it_is_in(
    collector: Collector,
) -> None:
    """A parallel for's duration is whole milliseconds: one that began within half a
    millisecond of its run (or of the call it is in) must still start inside it."""
    pipeline = Pipeline.open(OtlpSettings.from_environ({}, collector.endpoint))
    recorder = SpanRecorder(pipeline.tracer, False, "r1", "p.as")
    began = 1_800_000_000_000_000_000
    loop = {"item": "x", "items": 2, "concurrency": 2, "duration_ms": 1}
    recorder.run_started(began)
    recorder.event("parallel_for", 1, None, began + 200_000, loop)
    recorder.call_started(2, None, began + 300_000, {"agent": "Writer", "function": "main"})
    recorder.event("parallel_for", 3, 2, began + 500_000, loop)
    recorder.event("agent", 2, None, began + 600_000, {"result": None})
    recorder.run_ended(began + 700_000, "ok")
    pipeline.shutdown()
    (root,) = collector.named("invoke_workflow")
    (call,) = collector.named("invoke_agent")
    outer, inner = sorted(collector.named("parallel_for"), key=lambda span: span.end_ns)
    assert outer.start_ns == root.start_ns and inner.start_ns == call.start_ns


def test_exporting_to_a_collector_that_is_down_says_so(
    model_server: HTTPServer, tmp_path: Path
) -> None:
    run_everything(model_server, tmp_path)
    down = OtlpSettings.from_environ(
        {"OTEL_EXPORTER_OTLP_TIMEOUT": "500"}, f"http://127.0.0.1:{closed_port()}"
    )
    journal = Journal.for_workspace(tmp_path)
    try:
        report = export_run(journal, "last", down)
    finally:
        journal.close()
    assert not report.ok and report.failed_batches >= 1


def test_settings_follow_the_standard_variables() -> None:
    settings = OtlpSettings.from_environ(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-team=agents,authorization=Bearer%20abc",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
            "OTEL_SERVICE_NAME": "billing-agent",
        }
    )
    assert settings.endpoint == "http://collector:4318/v1/traces"
    assert settings.headers == {"x-team": "agents", "authorization": "Bearer abc"}
    assert settings.timeout_seconds == 2.5
    assert settings.service_name == "billing-agent"
    assert not settings.capture_content
    traces = OtlpSettings.from_environ(
        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://tempo:4318/custom/traces"}
    )
    assert traces.endpoint == "http://tempo:4318/custom/traces"


def test_only_our_bounded_wait_runs_at_exit_not_the_sdks_own_shutdown() -> None:
    """The SDK's own exit handler waits out the exporter's retries to a collector that is down
    (3 s and more, where the docs promise at most 2 s): a pipeline never registers it, and
    `wait_for_telemetry`, bounded by EXIT_WAIT_SECONDS, is what runs at exit."""
    pipeline = Pipeline.open(OtlpSettings.from_environ({}, f"http://127.0.0.1:{closed_port()}"))
    try:
        assert getattr(pipeline.provider, "_atexit_handler", None) is None
    finally:
        pipeline.shutdown()
