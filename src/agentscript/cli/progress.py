"""Live progress while a run works: which agent is running, the generate in flight with its
elapsed time, the answer as it streams, and tool calls as they happen.

A trace sink, so it sees exactly what the trace records. At a terminal it draws a small rich
panel on stderr that disappears when the run ends (stdout keeps only the result); elsewhere it
draws nothing, except the streamed answer text when streaming was asked for explicitly.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from agentscript.cli.trace_tree import brief, duration
from agentscript.runtime.trace import TraceEvent, TraceSink

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.live import Live

Answer = TypeVar("Answer")

_RECENT = 4  # finished steps kept on screen
_TAIL = 240  # characters of the streaming answer kept on screen


class LiveProgress(TraceSink):
    """The run's progress on a terminal. Use as a context manager around the run."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._agents: dict[int, str] = {}
        self._step: tuple[str, float] | None = None
        self._answer = ""
        self._recent: deque[str] = deque(maxlen=_RECENT)
        self._live: Live | None = None

    def __enter__(self) -> LiveProgress:
        from rich.console import Console
        from rich.live import Live

        console = Console(file=self._stream, highlight=False)
        self._live = Live(
            get_renderable=self._renderable,
            console=console,
            refresh_per_second=8,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def pausing(self, ask: Callable[[Any], Answer]) -> Callable[[Any], Answer]:
        """`ask` with the panel taken down while it runs, so a question at the terminal (a
        missing input, an approval) is not drawn over."""

        def paused(question: Any) -> Answer:
            live = self._live
            if live is None:
                return ask(question)
            live.stop()
            try:
                return ask(question)
            finally:
                live.start()

        return paused

    # ------------------------------------------------------------------ TraceSink

    def agent_started(self, call: TraceEvent) -> None:
        with self._lock:
            self._agents[call.id] = f"{call.data.get('agent')}.{call.data.get('function')}"

    def step_started(self, kind: str, data: dict[str, Any]) -> None:
        with self._lock:
            self._step = (describe_step(kind, data), time.monotonic())
            self._answer = ""

    def text_delta(self, text: str) -> None:
        with self._lock:
            self._answer = (self._answer + text)[-_TAIL:]

    def event(self, event: TraceEvent) -> None:
        with self._lock:
            if event.kind == "agent":
                self._agents.pop(event.id, None)
            if event.kind in ("generate", "tool", "agent"):
                self._step = None
                self._answer = ""
                self._recent.append(describe_finished(event.kind, event.data))

    # ------------------------------------------------------------------ drawing

    def _renderable(self) -> RenderableType:
        from rich.text import Text

        with self._lock:
            text = Text()
            if self._agents:
                text.append("agent ", style="dim")
                text.append(list(self._agents.values())[-1] + "\n", style="bold magenta")
            for line in self._recent:
                text.append("✓ " + line + "\n", style="dim")
            if self._step is not None:
                label, started = self._step
                elapsed = time.monotonic() - started
                text.append(f"… {label}  {elapsed:.1f} s\n", style="cyan")
            if self._answer:
                text.append(self._answer.replace("\n", " ")[-_TAIL:] + "\n")
            return text


class StreamEcho(TraceSink):
    """`--stream` without a terminal: the answer text as it arrives, on `stream`, one line per
    answer (the validated value is still the run's output)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._open = False
        self._lock = threading.Lock()

    def text_delta(self, text: str) -> None:
        with self._lock:
            self._stream.write(text)
            self._stream.flush()
            self._open = True

    def event(self, event: TraceEvent) -> None:
        if event.kind == "generate":
            with self._lock:
                if self._open:
                    self._stream.write("\n")
                    self._stream.flush()
                    self._open = False


def describe_step(kind: str, data: dict[str, Any]) -> str:
    """A step in flight, e.g. `generate "Say what…" (attempt 2/3)` or `tool Search.run`."""
    if kind == "generate":
        attempt = data.get("attempt", 1)
        allowed = data.get("max_attempts", 1)
        tries = f" (attempt {attempt}/{allowed})" if allowed != 1 else ""
        return f"{data.get('agent')}.{data.get('function')}: generate {brief(data.get('instruction'), 48)}{tries}"
    if kind == "tool":
        return f"tool {data.get('tool')}.{data.get('method')}"
    return kind


def describe_finished(kind: str, data: dict[str, Any]) -> str:
    """A finished step in one line, with its duration."""
    took = duration(data.get("duration_ms"))
    took = f"  {took}" if took else ""
    if kind == "generate":
        outcome = "failed" if data.get("ok") is False else brief(data.get("result"), 48)
        return f"generate → {outcome}{took}"
    if kind == "tool":
        outcome = "failed" if "error" in data else brief(data.get("result"), 48)
        return f"tool {data.get('tool')}.{data.get('method')} → {outcome}{took}"
    return f"{data.get('agent')}.{data.get('function')} done{took}"
