"""Where a run's spans go, from the standard OpenTelemetry variables (no OpenTelemetry import:
deciding whether to send spans costs a run nothing when the `otel` extra is not installed)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
DEFAULT_ENDPOINT = "http://localhost:4318"
DEFAULT_SERVICE = "agentscript"
# Seconds one export may take (OTEL_EXPORTER_OTLP_TIMEOUT, in milliseconds, overrides).
DEFAULT_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class OtlpSettings:
    """Where spans go and what they carry, from the standard OTEL_* variables."""

    endpoint: str
    headers: dict[str, str] = field(default_factory=dict)
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    service_name: str = DEFAULT_SERVICE
    capture_content: bool = False

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], endpoint: str | None = None) -> OtlpSettings:
        """`endpoint` (a collector's base URL or its /v1/traces URL) wins over the variables."""
        traces = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
        base = endpoint or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
        if endpoint is None and traces:
            url = traces
        else:
            url = (base or DEFAULT_ENDPOINT).rstrip("/")
            if not url.endswith("/v1/traces"):
                url += "/v1/traces"
        headers = _headers(
            environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            or environ.get("OTEL_EXPORTER_OTLP_HEADERS", "")
        )
        raw_timeout = (
            environ.get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
            or environ.get("OTEL_EXPORTER_OTLP_TIMEOUT", "")
        ).strip()
        try:
            timeout = float(raw_timeout) / 1000 if raw_timeout else DEFAULT_TIMEOUT_SECONDS
        except ValueError:
            timeout = DEFAULT_TIMEOUT_SECONDS
        capture = environ.get(CAPTURE_VARIABLE, "").strip().lower() in ("1", "true", "yes")
        return cls(
            endpoint=url,
            headers=headers,
            timeout_seconds=timeout if timeout > 0 else DEFAULT_TIMEOUT_SECONDS,
            service_name=environ.get("OTEL_SERVICE_NAME", "").strip() or DEFAULT_SERVICE,
            capture_content=capture,
        )


def telemetry_requested(environ: Mapping[str, str]) -> bool:
    """Whether the standard variables ask for traces: an OTLP endpoint is set and the SDK is
    not disabled."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return any(
        environ.get(name, "").strip()
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def _headers(raw: str) -> dict[str, str]:
    """`key=value,key2=value2` (values URL-encoded), as the OTLP exporter specification says."""
    headers: dict[str, str] = {}
    for part in raw.split(","):
        key, sep, value = part.partition("=")
        if sep and key.strip():
            headers[key.strip()] = unquote(value.strip())
    return headers
