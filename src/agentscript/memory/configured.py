"""Opening the service the way memory.yml configures it, with the models it names.

`MemoryService.open` gives the bare service: no model is ever called, nothing is compacted.
`open_configured` adds what the workspace's memory.yml asks for: compaction on reads (always;
extractive without a timeline model, rewritten by that model on a background worker when it
names one, asked through the real model router) and semantic re-ranking when it names an
embedding model. The worker and the model clients close with the service. This is how every long-lived reader opens the service:
the CLI, the MCP server, `memory://` tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from agentscript.memory.compaction import enable_compaction
from agentscript.memory.semantic import SemanticRanker
from agentscript.memory.service import MemoryService


def open_configured(
    workspace: str | Path | None,
    *,
    database: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> MemoryService:
    """`MemoryService.open` with the models memory.yml names; `environ` resolves their keys
    and endpoints (default: the process environment)."""
    service = MemoryService.open(workspace, database=database)
    try:
        _compaction(service, environ)
        _semantic(service, environ)
    except BaseException:
        service.close()
        raise
    return service


def _compaction(service: MemoryService, environ: Mapping[str, str] | None) -> None:
    if service.config.timeline.model is None:
        enable_compaction(service, None)
        return
    from agentscript.providers.llm.router import ModelRouter

    router = ModelRouter(environ)
    if enable_compaction(service, router) is None:
        router.close()
    else:
        service.on_close.append(router.close)


def _semantic(service: MemoryService, environ: Mapping[str, str] | None) -> None:
    settings = service.config.recall
    if settings.embeddings is None:
        return
    from agentscript.providers.llm.embeddings import HttpEmbedder

    embedder = HttpEmbedder(settings.embeddings, environ)
    service.semantic = SemanticRanker(
        embedder, weight=settings.semantic_weight, pool=settings.semantic_pool
    )
    service.on_close.append(embedder.close)
