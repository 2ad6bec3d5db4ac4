"""The local real model for the `real_model` tests: one llama-server for the whole session, on
a free port of 127.0.0.1, stopped when the session ends (scripts/local_model.py).

tests/conftest.py loads this module as a plugin; a test that uses its fixtures is marked
`@pytest.mark.real_model`, so it is skipped (failed under CI=true) where the model is not built.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

# A CPU model may take minutes for a long answer; these tests wait for it.
REQUEST_TIMEOUT_MS = "600000"


@pytest.fixture(scope="session")
def local_model_url() -> Iterator[str]:
    """The base URL (`…/v1`) of the session's llama-server."""
    import local_model
    from system_parts import require

    require("real_model")
    with local_model.serve() as url:
        yield url


@pytest.fixture
def on_local_model(local_model_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every `openai://` model of a run goes to the local server (which serves its one model
    whatever name a program gives it)."""
    monkeypatch.setenv("OPENAI_BASE_URL", local_model_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("AGENTSCRIPT_LLM_TIMEOUT_MS", REQUEST_TIMEOUT_MS)
    return local_model_url
