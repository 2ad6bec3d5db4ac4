"""The TLS context every HTTP client shares: built once per process, verifying."""

from __future__ import annotations

import ssl

from agentscript.providers.llm.transport import HttpTransport
from agentscript.providers.tls import shared_ssl_context


def test_one_verifying_context_per_trust_setting() -> None:
    context = shared_ssl_context()
    assert context is shared_ssl_context()
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.check_hostname
    assert shared_ssl_context(trust_env=False) is shared_ssl_context(trust_env=False)


def test_model_transports_reuse_the_process_context() -> None:
    first, second = HttpTransport("openai"), HttpTransport("openai")
    try:
        pools = [transport.client()._transport._pool for transport in (first, second)]  # type: ignore[attr-defined]
        assert pools[0]._ssl_context is pools[1]._ssl_context is shared_ssl_context()
    finally:
        first.close()
        second.close()
