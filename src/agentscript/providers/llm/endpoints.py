"""Where a model lives: LLM URIs (reference §4.1) resolved against the environment.

`openai://gpt-4.1-mini`, `anthropic://claude-sonnet-4-5`, `ollama://llama3.1` or
`ollama://host:11434/llama3.1`. Keys and base URLs come from the standard variables; a key is
kept only in memory and never appears in a repr, an error, a trace or a recording.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from agentscript.runtime.errors import ExecutionError

PROTOCOLS = ("openai", "anthropic", "ollama")
# The protocols with an embedding API (embeddings.py).
EMBEDDING_PROTOCOLS = ("openai", "ollama")

DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com/v1",
    "ollama": "http://localhost:11434",
}
# Variables consulted for the base URL, first set wins. OPENAI_API_BASE is the pre-1.0 name
# some users still set; OLLAMA_HOST is what the ollama CLI itself reads.
BASE_URL_VARIABLES = {
    "openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "anthropic": ("ANTHROPIC_BASE_URL",),
    "ollama": ("OLLAMA_BASE_URL", "OLLAMA_HOST"),
}
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
TIMEOUT_VARIABLE = "AGENTSCRIPT_LLM_TIMEOUT_MS"
# Five minutes: a CPU model writing the default 1,024 output tokens at 4–10 tokens/s needs
# 100–250 s, and its first answer after the server starts comes later still (warm-up). The
# timeout bounds each wait on the server (each piece, when the answer streams) and never the
# run's own `--max-seconds`; hosted APIs answer far sooner, and a dead server fails at once.
DEFAULT_TIMEOUT_MS = 300_000
OLLAMA_DEFAULT_PORT = 11434


@dataclass(frozen=True, slots=True)
class ModelEndpoint:
    """A resolved model: protocol, model name, base URL, timeout, and the key if one is set."""

    protocol: str
    model: str
    base_url: str
    timeout_ms: int
    api_key: str | None = field(default=None, repr=False)

    @property
    def key_variable(self) -> str | None:
        return KEY_VARIABLES.get(self.protocol)

    @property
    def uses_default_base_url(self) -> bool:
        return self.base_url == DEFAULT_BASE_URLS[self.protocol]

    @property
    def key_required(self) -> bool:
        """Hosted APIs need a key. OpenAI-compatible local servers (vLLM, llama.cpp, LM Studio)
        usually do not, so a custom base URL makes the key optional."""
        return self.key_variable is not None and self.uses_default_base_url

    def require_key(self) -> None:
        if self.key_required and not self.api_key:
            raise ExecutionError(f"{self.key_variable} is required for {self.protocol}:// models")


def endpoint_secrets(environ: Mapping[str, str]) -> list[str]:
    """What a run could send to a model provider that must never be written down: the API keys
    and any password in a base URL from the environment."""
    found = [environ.get(variable, "") for variable in KEY_VARIABLES.values()]
    for variables in BASE_URL_VARIABLES.values():
        for variable in variables:
            try:
                found.append(urlsplit(environ.get(variable, "")).password or "")
            except ValueError:
                continue
    return [secret for secret in found if secret]


def parse_llm_uri(uri: str) -> tuple[str, str, str | None]:
    """(protocol, model, base URL named by the URI or None); errors as reference §4.1."""
    if "://" not in uri:
        raise ExecutionError("LLM URI must use an explicit protocol URL form")
    protocol = uri.split("://", 1)[0]
    if protocol not in PROTOCOLS:
        raise ExecutionError(f"Unsupported LLM provider protocol '{protocol}'")
    parts = urlsplit(uri)
    host = parts.netloc
    path = unquote(parts.path)
    if protocol == "ollama" and host and path.strip("/"):
        return protocol, path.lstrip("/"), f"http://{host}"
    model = (unquote(host) + path).strip("/")
    if not model:
        raise ExecutionError(f"{protocol} URI must include a model name")
    return protocol, model, None


def check_embedding_uri(uri: str) -> None:
    """Raise ExecutionError unless `uri` names a model of a protocol that has embeddings."""
    protocol, _, _ = parse_llm_uri(uri)
    if protocol not in EMBEDDING_PROTOCOLS:
        raise ExecutionError(
            f"{protocol}:// has no embedding models: use openai:// or ollama:// for embeddings"
        )


def resolve_endpoint(
    uri: str, environ: Mapping[str, str], base_url: str | None = None
) -> ModelEndpoint:
    """Resolve `uri` with base URL precedence: URI (ollama) → `base_url` → env → default."""
    protocol, model, uri_base = parse_llm_uri(uri)
    chosen = uri_base or base_url or _base_from_environment(protocol, environ)
    key_variable = KEY_VARIABLES.get(protocol)
    return ModelEndpoint(
        protocol=protocol,
        model=model,
        base_url=(chosen or DEFAULT_BASE_URLS[protocol]).rstrip("/"),
        timeout_ms=timeout_from_environment(environ),
        api_key=environ.get(key_variable) or None if key_variable else None,
    )


def _base_from_environment(protocol: str, environ: Mapping[str, str]) -> str | None:
    for variable in BASE_URL_VARIABLES[protocol]:
        value = environ.get(variable, "").strip()
        if value:
            return _normalise_ollama_host(value) if variable == "OLLAMA_HOST" else value
    return None


def _normalise_ollama_host(value: str) -> str:
    """OLLAMA_HOST may be `host`, `host:port` or a URL; the ollama CLI fills in the rest."""
    if "://" not in value:
        value = f"http://{value}"
    parts = urlsplit(value)
    if parts.port is None:
        return f"{parts.scheme}://{parts.hostname or 'localhost'}:{OLLAMA_DEFAULT_PORT}"
    return value


def timeout_from_environment(environ: Mapping[str, str]) -> int:
    raw = environ.get(TIMEOUT_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_MS
    if not raw.isdigit() or int(raw) <= 0:
        raise ExecutionError(
            f"{TIMEOUT_VARIABLE} must be a positive integer number of milliseconds, got '{raw}'"
        )
    return int(raw)


@dataclass(frozen=True, slots=True)
class ModelReport:
    """What `agentscript models` shows for one llm import: where it goes and whether its key is
    set. Never the key itself."""

    name: str
    uri: str
    protocol: str | None = None
    model: str | None = None
    base_url: str | None = None
    key_variable: str | None = None
    key_present: bool = False
    key_required: bool = False
    problem: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "uri": self.uri,
            "protocol": self.protocol,
            "model": self.model,
            "endpoint": self.base_url,
            "key_variable": self.key_variable,
            "key_present": self.key_present,
            "key_required": self.key_required,
            "problem": self.problem,
        }


def report_model(name: str, uri: str, environ: Mapping[str, str]) -> ModelReport:
    """Resolve one llm import for display; a bad URI or setting becomes `problem`."""
    try:
        endpoint = resolve_endpoint(uri, environ)
    except ExecutionError as problem:
        return ModelReport(name=name, uri=uri, problem=str(problem))
    missing_key = endpoint.key_required and not endpoint.api_key
    return ModelReport(
        name=name,
        uri=uri,
        protocol=endpoint.protocol,
        model=endpoint.model,
        base_url=endpoint.base_url,
        key_variable=endpoint.key_variable,
        key_present=bool(endpoint.api_key),
        key_required=endpoint.key_required,
        problem=f"{endpoint.key_variable} is not set" if missing_key else None,
    )
