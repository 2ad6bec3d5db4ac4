"""Record and replay model exchanges, so realistic sessions run offline and deterministically.

A recording is JSONL, one exchange per line (providers/storage/cassette_file.py): the request
digest, the prompt that produced it, and the answer (value, raw text, usage) or the not-JSON
failure (so repairs replay too). A journaled run keeps the same exchanges in its journal, so
any journaled run is a cassette. Replay serves answers by digest, in recorded order for
identical requests; a miss stops with a short diff against the recorded request, or, with a
fallback provider (lenient replay, resume), goes live from there on. Keys never enter a
recording: the digest covers only the prompt and the generate options, and each line is
scrubbed with the run's redaction set (provider keys, allowed environment secrets, URI
passwords) before it is written.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from pathlib import Path
from typing import Any, TextIO

from agentscript.providers.llm.endpoints import endpoint_secrets
from agentscript.providers.storage.cassette_file import (
    FORMAT_VERSION,
    entry_digest,
    material_digest,
    read_cassette,
)
from agentscript.runtime.context import PromptLayout
from agentscript.runtime.errors import LoadError, ModelOutputError, ReplayMismatch
from agentscript.runtime.generate import prompt_layout_of
from agentscript.runtime.jsjson import stringify
from agentscript.runtime.ports import (
    MODEL_EXCHANGE,
    Cassette,
    ExchangeLog,
    GenerateRequest,
    GenerateResponse,
    LlmProvider,
)
from agentscript.runtime.secrets import SecretSet
from agentscript.runtime.usage import Usage
from agentscript.runtime.values import LlmBinding, sanitize


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


class RecordingLlm:
    """Wraps a provider and keeps every exchange as it happens, scrubbed with `secrets` (the
    run's redaction set; by default the provider keys of the process): appended to a JSONL
    file, or handed to an ExchangeLog (the run journal). There the digest is left out (it is
    computed when the journal is read as a cassette), and `durable` says whether the run waits
    until the answer is on disk: worth it for a real model, whose answer costs money and
    would be asked again after a kill; not for the mock, which answers again for free."""

    def __init__(
        self,
        inner: LlmProvider,
        target: str | Path | ExchangeLog,
        secrets: SecretSet | None = None,
        durable: bool = False,
    ) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._secrets = secrets if secrets is not None else SecretSet()
        self._durable = durable
        self._file: TextIO | None = None
        self._log: ExchangeLog | None = None
        if isinstance(target, str | Path):
            if secrets is None:
                self._secrets = SecretSet(endpoint_secrets(os.environ))
            path = Path(target)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._file = path.open("w", encoding="utf-8")
            except OSError as problem:
                raise LoadError(f"Cannot write recording {path}: {problem.strerror}") from None
        else:
            self._log = target

    def prompt_layout(self, model: LlmBinding | None) -> PromptLayout:
        return prompt_layout_of(self._inner, model)

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        material = request_material(request)
        entry: dict[str, Any] = {"version": FORMAT_VERSION, "call": request.call_key}
        if self._log is None:
            entry["digest"] = material_digest(material)
        entry["request"] = material
        try:
            response = self._inner.generate(request)
        except ModelOutputError as error:
            entry["outcome"] = "not_json"
            entry["error"] = str(error)
            entry["raw_text"] = error.raw_text
            entry["usage"] = error.usage.to_json() if error.usage else None
            if error.details:
                entry["details"] = sanitize(error.details)
            if error.cut_off:
                entry["cut_off"] = True
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
        if self._log is not None:
            # The journal scrubs what it keeps with the same redaction set.
            self._log.exchange(MODEL_EXCHANGE, entry, durable=self._durable)
            return
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
    """Answers from a cassette by request digest (see the module doc). Without a `fallback`
    a request it has no answer for stops the run with a ReplayMismatch; with one, that
    request and every one after it go to the fallback (lenient replay, resume)."""

    def __init__(
        self,
        source: str | Path | Cassette,
        fallback: LlmProvider | None = None,
        secrets: SecretSet | None = None,
    ) -> None:
        cassette = source if isinstance(source, Cassette) else read_cassette(Path(source))
        # A recording keeps its requests scrubbed; a live request is compared the same way.
        self._secrets = secrets if secrets is not None else SecretSet()
        self._source = cassette.source
        self._fallback = fallback
        self._live = False
        self._lock = threading.Lock()
        self._answers: dict[str, deque[dict[str, Any]]] = {}
        self._recorded = cassette.model
        self._unused = len(cassette.model)
        self._layout = PromptLayout.ORIGINAL
        for entry in self._recorded:
            self._answers.setdefault(entry_digest(entry), deque()).append(entry)
            if _recorded_layout(entry) is PromptLayout.COMPACT:
                self._layout = PromptLayout.COMPACT

    def prompt_layout(self, model: LlmBinding | None) -> PromptLayout:
        """The layout the recording was made with, so replayed prompts are the recorded ones;
        once the recording is used up, the fallback's."""
        if self._fallback is not None and (self._live or not self._unused):
            return prompt_layout_of(self._fallback, model)
        return self._layout

    def generate(self, request: GenerateRequest) -> GenerateResponse:
        raw = request_material(request)
        material = self._secrets.scrub(raw) if self._secrets else raw
        digest = material_digest(material)
        # A journal keeps requests scrubbed; a `--record` file has the digest of the raw one.
        digests = (digest,) if material == raw else (digest, material_digest(raw))
        with self._lock:
            queue = None
            if not self._live:
                queue = next((self._answers[d] for d in digests if self._answers.get(d)), None)
            entry = queue.popleft() if queue else None
            if entry is not None:
                self._unused -= 1
            elif self._fallback is not None:
                self._live = True
        if entry is None:
            if self._fallback is not None:
                return self._fallback.generate(request)
            raise ReplayMismatch(
                f"Replay {self._source} has no recorded answer for {request.call_key} "
                f"(request {digest[:12]}); the prompt or options changed since it was recorded",
                self._what_changed(request.call_key, material),
            )
        usage = Usage.from_json(entry.get("usage"))
        if entry.get("outcome") == "not_json":
            raise ModelOutputError(
                str(entry.get("error") or "LLM provider did not return JSON"),
                raw_text=entry.get("raw_text"),
                usage=usage,
                details=dict(entry.get("details") or {}),
                cut_off=entry.get("cut_off") is True,
            )
        provider = str(entry.get("provider"))
        return GenerateResponse(
            value=entry.get("value"),
            raw_text=entry.get("raw_text"),
            usage=usage,
            # A replay of a replay still names the provider that answered first.
            provider=provider if provider.startswith("replay:") else f"replay:{provider}",
            details=dict(entry.get("details") or {}),
            # A replay that may go live (a resume) spends its budgets on the live part only.
            budgeted=self._fallback is None,
        )

    def _what_changed(self, call_key: str, material: dict[str, Any]) -> list[str]:
        """A short diff against the recorded request of the same call (the first one)."""
        same_call = [entry for entry in self._recorded if entry.get("call") == call_key]
        if not same_call or not isinstance(same_call[0].get("request"), dict):
            return [f"The recording has no request of {call_key}"]
        return [
            *material_diff(same_call[0]["request"], material),
            "(--replay-lenient answers this call and the rest from the live model)",
        ]


_DIFF_LINES = 8


def material_diff(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What differs between two requests: changed options as `name: old -> new`, changed
    prompt texts as the first few lines of a unified diff."""
    import difflib  # only when a replay missed

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


def _recorded_layout(entry: dict[str, Any]) -> PromptLayout:
    material = entry.get("request")
    layout = material.get("layout") if isinstance(material, dict) else None
    return PromptLayout.COMPACT if layout == PromptLayout.COMPACT.value else PromptLayout.ORIGINAL
