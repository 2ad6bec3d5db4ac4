"""Record and replay model exchanges, so realistic sessions run offline and deterministically.

A recording is JSONL, one exchange per line: the request digest, the prompt that produced it,
and the answer (value, raw text, usage) or the not-JSON failure (so repairs replay too). Replay
serves answers by digest, in recorded order for identical requests, and fails loudly on a miss.
Keys never enter a recording: the digest covers only the prompt and the generate options, and
each line is scrubbed with the run's redaction set (provider keys, allowed environment secrets,
URI passwords) before it is written.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import threading
from collections import deque
from pathlib import Path
from typing import Any, TextIO

from agentscript.providers.llm.endpoints import endpoint_secrets
from agentscript.runtime.context import PromptLayout
from agentscript.runtime.errors import ExecutionError, LoadError, ModelOutputError
from agentscript.runtime.generate import prompt_layout_of
from agentscript.runtime.jsjson import parse, stringify
from agentscript.runtime.ports import GenerateRequest, GenerateResponse, LlmProvider
from agentscript.runtime.secrets import SecretSet
from agentscript.runtime.usage import Usage
from agentscript.runtime.values import LlmBinding, sanitize

FORMAT_VERSION = 1


def request_material(request: GenerateRequest) -> dict[str, Any]:
    """Everything that decides the model's answer, and nothing else (no keys, no endpoints).
    The layout is named only when it is not the 0.1.0 one, so older recordings keep matching."""
    material: dict[str, Any] = {
        "model": request.model.uri if request.model else None,
        "system": request.built.system,
        "user": request.built.final_user_message,
        "schema": request.schema,
        "max_output_tokens": request.max_output_tokens,
        "temperature": request.temperature,
        "think": request.think,
        "strict": request.strict,
    }
    if request.built.layout is not PromptLayout.ORIGINAL:
        material["layout"] = request.built.layout.value
    return material


def request_digest(request: GenerateRequest) -> str:
    return hashlib.sha256(stringify(request_material(request)).encode("utf-8")).hexdigest()


class RecordingLlm:
    """Wraps a provider and appends every exchange to a JSONL file as it happens, scrubbed
    with `secrets` (the run's redaction set; by default the provider keys of the process)."""

    def __init__(
        self, inner: LlmProvider, path: str | Path, secrets: SecretSet | None = None
    ) -> None:
        self._inner = inner
        self._path = Path(path)
        self._lock = threading.Lock()
        self._secrets = secrets if secrets is not None else SecretSet(endpoint_secrets(os.environ))
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._file: TextIO | None = self._path.open("w", encoding="utf-8")
        except OSError as problem:
            raise LoadError(f"Cannot write recording {self._path}: {problem.strerror}") from None

    def prompt_layout(self, model: LlmBinding | None) -> PromptLayout:
        return prompt_layout_of(self._inner, model)

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        entry: dict[str, Any] = {
            "version": FORMAT_VERSION,
            "digest": request_digest(request),
            "call": request.call_key,
            "request": request_material(request),
        }
        try:
            response = self._inner.generate(request)
        except ModelOutputError as error:
            entry["outcome"] = "not_json"
            entry["error"] = str(error)
            entry["raw_text"] = error.raw_text
            entry["usage"] = error.usage.to_json() if error.usage else None
            self._write(entry)
            raise
        entry["outcome"] = "ok"
        entry["provider"] = response.provider
        entry["value"] = sanitize(response.value)
        entry["raw_text"] = response.raw_text
        entry["usage"] = response.usage.to_json() if response.usage else None
        if response.details:
            entry["details"] = sanitize(response.details)
        self._write(entry)
        return response

    def _write(self, entry: dict[str, Any]) -> None:
        line = stringify(self._secrets.scrub(entry))
        with self._lock:
            if self._file is not None:
                self._file.write(line + "\n")
                self._file.flush()

    def close(self) -> None:
        """Close the recording file (the wrapped provider is closed by whoever owns it)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class ReplayLlm:
    """Answers from a recording by request digest; a request never recorded is an error."""

    def __init__(self, path: str | Path) -> None:
        self._path = Path(path)
        self._lock = threading.Lock()
        self._answers: dict[str, deque[dict[str, Any]]] = {}
        self._layout = PromptLayout.ORIGINAL
        self._recorded = _read_recording(self._path)
        for entry in self._recorded:
            self._answers.setdefault(str(entry["digest"]), deque()).append(entry)
            if _recorded_layout(entry) is PromptLayout.COMPACT:
                self._layout = PromptLayout.COMPACT

    def prompt_layout(self, model: LlmBinding | None) -> PromptLayout:
        """The layout the recording was made with, so replayed prompts are the recorded ones."""
        return self._layout

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        digest = request_digest(request)
        with self._lock:
            queue = self._answers.get(digest)
            entry = queue.popleft() if queue else None
        if entry is None:
            raise ExecutionError(
                f"Replay {self._path} has no recorded answer for {request.call_key} "
                f"(request {digest[:12]}); the prompt or options changed since it was recorded"
                + self._what_changed(request)
            )
        usage = _usage(entry.get("usage"))
        if entry.get("outcome") == "not_json":
            raise ModelOutputError(
                str(entry.get("error") or "LLM provider did not return JSON"),
                raw_text=entry.get("raw_text"),
                usage=usage,
            )
        return GenerateResponse(
            value=entry.get("value"),
            raw_text=entry.get("raw_text"),
            usage=usage,
            provider=f"replay:{entry.get('provider')}",
            details=dict(entry.get("details") or {}),
        )

    def _what_changed(self, request: GenerateRequest) -> str:
        """A short diff against the recorded request of the same call (the first one)."""
        same_call = [entry for entry in self._recorded if entry.get("call") == request.call_key]
        if not same_call or not isinstance(same_call[0].get("request"), dict):
            return f". The recording has no request of {request.call_key}"
        return ":\n" + "\n".join(material_diff(same_call[0]["request"], request_material(request)))


_DIFF_LINES = 8


def material_diff(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What differs between two requests: changed options as `name: old -> new`, changed
    prompt texts as the first few lines of a unified diff."""
    lines: list[str] = []
    for name in sorted(set(recorded) | set(now)):
        before, after = recorded.get(name), now.get(name)
        if before == after:
            continue
        if isinstance(before, str) and isinstance(after, str):
            changed = [
                line
                for line in difflib.unified_diff(
                    before.splitlines(), after.splitlines(), "recorded", "now", n=0, lineterm=""
                )
                if not line.startswith(("---", "+++", "@@"))
            ]
            shown = [f"  {line[:120]}" for line in changed[:_DIFF_LINES]]
            if len(changed) > _DIFF_LINES:
                shown.append(f"  … {len(changed) - _DIFF_LINES} more changed lines")
            lines += [f"{name} prompt changed:", *shown]
        else:
            lines.append(f"{name}: {stringify(before)} -> {stringify(after)}")
    return lines or ["(the same request was recorded, and its answers are used up)"]


def _read_recording(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as problem:
        raise LoadError(f"Cannot read recording {path}: {problem.strerror}") from None
    entries: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = parse(line)
        except ValueError as problem:
            raise LoadError(f"Invalid recording line {path}:{number}: {problem}") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("digest"), str):
            raise LoadError(f"Invalid recording line {path}:{number}: not an exchange")
        entries.append(entry)
    return entries


def _recorded_layout(entry: dict[str, Any]) -> PromptLayout:
    material = entry.get("request")
    layout = material.get("layout") if isinstance(material, dict) else None
    return PromptLayout.COMPACT if layout == PromptLayout.COMPACT.value else PromptLayout.ORIGINAL


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    return Usage(int(raw.get("input_tokens") or 0), int(raw.get("output_tokens") or 0))
