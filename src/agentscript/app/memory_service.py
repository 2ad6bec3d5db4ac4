"""The configured memory service: opened the way memory.yml says, with the models it names.

`MemoryService.open` gives the bare service: no model is ever called (tests and tools that ask
for exactly that use it). `open_memory_service` adds what the workspace's memory.yml asks for:
compaction on reads (always: extractive without a timeline model; with one, that model rewrites
the summaries on a background worker, asked through the real model router) and semantic
re-ranking when it names an embedding model. The worker and the model clients close with the
service. Every use case opens the service here: the memory commands, the MCP server,
`memory://` tools, learning after a run, reflection, feedback and compaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from agentscript.memory.adapter import MemoryTools
from agentscript.memory.compaction import enable_compaction
from agentscript.memory.errors import MemoryServiceError
from agentscript.memory.semantic import SemanticRanker
from agentscript.memory.service import MemoryService
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.secrets import SecretSet


def open_memory_service(
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


def memory_tools(
    workspace: str | Path,
    database: str | Path | None,
    environ: Mapping[str, str] | None,
    granted_scopes: Iterable[str] = (),
    secrets: SecretSet | None = None,
) -> MemoryTools:
    """The `memory://` tools of a run, over the configured service of `workspace`, whose
    reads first learn from the runs waiting in the workspace's journal; `granted_scopes` are
    the other workspaces the approval policy lets the program name; the service refuses to
    store any of `secrets` (the run's redaction set). A broken memory.yml is an
    ExecutionError, reported at the program's call."""
    from agentscript.app.learning import LearningBeforeReads

    try:
        service = open_memory_service(workspace, database=database, environ=environ)
    except MemoryServiceError as error:
        raise ExecutionError(error.message) from None
    if secrets is not None:
        service.secret_sets.append(secrets)
    try:
        tools = MemoryTools(service, granted_scopes)
    except BaseException:
        service.close()
        raise
    LearningBeforeReads(service, [Path(workspace)], database)
    read_tool_links(service, Path(workspace))
    return tools


def read_tool_links(service: MemoryService, workspace: Path) -> None:
    """Let `Memory.experiences` rank by the tool links of the workspace's task graph."""
    from agentscript.learn.journal import journal_path
    from agentscript.learn.tool_usage import JournalToolUsage

    usage = JournalToolUsage(journal_path(workspace))
    service.tool_usage = usage
    service.on_close.append(usage.close)


def serve_memory(
    workspace: str | Path | None,
    *,
    database: str | Path | None = None,
    port: int | None = None,
    token: str | None = None,
    on_ready: Callable[[str | None, str], None] | None = None,
) -> None:
    """Serve the configured service of `workspace` over MCP until stopped: on stdio when
    `port` is None, else Streamable HTTP on 127.0.0.1:`port` behind the bearer `token`;
    `on_ready(workspace scope, url)` is called once the HTTP server listens."""
    from agentscript.app.workspace import Workspace
    from agentscript.memory import mcp_server

    checked = None if port is None else mcp_server.check_token(token or "")
    with Workspace.current(workspace, database) as place:
        service = place.memory()
        if port is None or checked is None:
            mcp_server.serve_stdio(service)
            return

        def ready(url: str) -> None:
            if on_ready is not None:
                on_ready(service.workspace, url)

        mcp_server.serve_http(service, checked, port, on_ready=ready)


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
