"""One TLS context per process for every HTTP client we make.

Building an `ssl.SSLContext` loads the CA certificates, which costs tens of milliseconds of CPU;
httpx does it for every new client. A run makes its own clients (model transport, `https://`
tools), so a program run again and again in one process (evals, `agentscript.run` in a loop,
the REPL) would pay it every time. The context is read-only once built and safe to share
between clients and threads. With `trust_env`, SSL_CERT_FILE / SSL_CERT_DIR are read when the
context is first built, as httpx reads them when a client is.
"""

from __future__ import annotations

import ssl
import threading

import httpx

_contexts: dict[bool, ssl.SSLContext] = {}
_lock = threading.Lock()


def shared_ssl_context(trust_env: bool = True) -> ssl.SSLContext:
    """The process's verifying TLS context (built on first use)."""
    with _lock:
        context = _contexts.get(trust_env)
        if context is None:
            context = httpx.create_ssl_context(trust_env=trust_env)
            _contexts[trust_env] = context
        return context
