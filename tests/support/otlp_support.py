"""A local OpenTelemetry collector for tests: a real HTTP server on 127.0.0.1 that takes
OTLP/HTTP protobuf posts at /v1/traces and decodes them into plain span records."""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from pytest_httpserver import HTTPServer
from werkzeug.wrappers import Request, Response


@dataclass(slots=True)
class ReceivedSpan:
    name: str
    span_id: str
    parent_id: str
    trace_id: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    status_code: int
    status_message: str
    events: list[tuple[str, dict[str, Any]]]
    resource: dict[str, Any] = field(default_factory=dict)


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_value(item) for item in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, which) if which else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


class Collector:
    """Decodes every export request it receives; `raw` keeps the request bodies as sent."""

    def __init__(self, server: HTTPServer) -> None:
        self.server = server
        self.spans: list[ReceivedSpan] = []
        self.raw: list[bytes] = []
        self.headers: list[dict[str, str]] = []
        self.received = threading.Event()
        server.expect_request("/v1/traces", method="POST").respond_with_handler(self._handle)

    @property
    def endpoint(self) -> str:
        return self.server.url_for("/").rstrip("/")

    def _handle(self, request: Request) -> Response:
        body = request.get_data()
        self.raw.append(body)
        self.headers.append(dict(request.headers))
        export = ExportTraceServiceRequest.FromString(body)
        for resource_spans in export.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append(
                        ReceivedSpan(
                            name=span.name,
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            trace_id=span.trace_id.hex(),
                            kind=span.kind,
                            start_ns=span.start_time_unix_nano,
                            end_ns=span.end_time_unix_nano,
                            attributes=_attributes(span.attributes),
                            status_code=span.status.code,
                            status_message=span.status.message,
                            events=[(e.name, _attributes(e.attributes)) for e in span.events],
                            resource=resource,
                        )
                    )
        self.received.set()
        return Response(
            ExportTraceServiceResponse().SerializeToString(),
            content_type="application/x-protobuf",
        )

    def named(self, prefix: str) -> list[ReceivedSpan]:
        return [span for span in self.spans if span.name.startswith(prefix)]

    def children(self, parent: ReceivedSpan) -> list[ReceivedSpan]:
        return [span for span in self.spans if span.parent_id == parent.span_id]


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port
