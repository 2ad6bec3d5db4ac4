"""Telemetry providers: trace sinks that send a run to observability tools."""
