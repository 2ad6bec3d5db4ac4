"""LLM URIs and provider configuration from the environment (reference §4.1)."""

from __future__ import annotations

import pytest

from agentscript.providers.llm.endpoints import parse_llm_uri, resolve_endpoint
from agentscript.runtime.errors import ExecutionError


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("openai://gpt-4.1-mini", ("openai", "gpt-4.1-mini", None)),
        ("openai://org/model", ("openai", "org/model", None)),
        ("openai://Qwen/Qwen3-8B", ("openai", "Qwen/Qwen3-8B", None)),
        ("anthropic://claude-sonnet-4-5", ("anthropic", "claude-sonnet-4-5", None)),
        ("ollama://llama3.1", ("ollama", "llama3.1", None)),
        ("ollama://gpu-box:11434/qwen3%3A8b", ("ollama", "qwen3:8b", "http://gpu-box:11434")),
    ],
)
def test_uris_name_protocol_model_and_base(uri: str, expected: tuple[str, str, str | None]) -> None:
    assert parse_llm_uri(uri) == expected


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("ollama:qwen3.6", "LLM URI must use an explicit protocol URL form"),
        ("gemini://pro", "Unsupported LLM provider protocol 'gemini'"),
        ("openai://", "openai URI must include a model name"),
    ],
)
def test_bad_uris_are_rejected_with_the_original_messages(uri: str, message: str) -> None:
    with pytest.raises(ExecutionError, match=message):
        parse_llm_uri(uri)


def test_base_url_precedence_is_uri_then_argument_then_environment_then_default() -> None:
    environ = {"OPENAI_BASE_URL": "http://env:1/v1/", "OLLAMA_BASE_URL": "http://env:2"}
    assert resolve_endpoint("openai://m", {}).base_url == "https://api.openai.com/v1"
    assert resolve_endpoint("openai://m", environ).base_url == "http://env:1/v1"
    assert (
        resolve_endpoint("openai://m", environ, base_url="http://arg/v1").base_url
        == "http://arg/v1"
    )
    assert (
        resolve_endpoint("ollama://h:3/m", environ, base_url="http://arg").base_url == "http://h:3"
    )
    assert resolve_endpoint("anthropic://m", {}).base_url == "https://api.anthropic.com/v1"
    assert (
        resolve_endpoint("openai://m", {"OPENAI_API_BASE": "http://old/v1"}).base_url
        == "http://old/v1"
    )


@pytest.mark.parametrize(
    ("value", "base"),
    [
        ("0.0.0.0", "http://0.0.0.0:11434"),
        ("gpu:8080", "http://gpu:8080"),
        ("https://ollama.example.com", "https://ollama.example.com:11434"),
    ],
)
def test_ollama_host_is_completed_like_the_ollama_cli_does(value: str, base: str) -> None:
    assert resolve_endpoint("ollama://m", {"OLLAMA_HOST": value}).base_url == base


def test_timeout_comes_from_the_environment_and_must_be_positive() -> None:
    assert resolve_endpoint("openai://m", {}).timeout_ms == 300_000
    assert resolve_endpoint("openai://m", {"AGENTSCRIPT_LLM_TIMEOUT_MS": "1500"}).timeout_ms == 1500
    with pytest.raises(
        ExecutionError, match="AGENTSCRIPT_LLM_TIMEOUT_MS must be a positive integer"
    ):
        resolve_endpoint("openai://m", {"AGENTSCRIPT_LLM_TIMEOUT_MS": "0"})


def test_key_is_required_for_hosted_apis_only_and_never_shown() -> None:
    hosted = resolve_endpoint("openai://m", {"OPENAI_API_KEY": "sk-hidden"})
    assert "sk-hidden" not in repr(hosted)
    with pytest.raises(ExecutionError, match="OPENAI_API_KEY is required for openai:// models"):
        resolve_endpoint("openai://m", {}).require_key()
    resolve_endpoint("openai://m", {"OPENAI_BASE_URL": "http://localhost:8000/v1"}).require_key()
    resolve_endpoint("ollama://m", {}).require_key()
