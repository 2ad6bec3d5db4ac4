"""The memory service as an MCP server, over stdio or Streamable HTTP (`agentscript memory serve`).

It serves the tools of `tools.py` exactly as defined there (names, JSON Schemas, annotations,
results), and the session digest as the resource `memory://digest` and at the end of the
instructions it sends at initialise. The SDK's low-level
`Server` is used rather than `MCPServer`, because MCPServer derives every input schema from a
Python signature, while these schemas are defined once, in `tools.py`, and must reach a model
unchanged. Service calls run in worker threads: SQLite waits on disk and on other writers, and
the event loop must keep answering meanwhile.

Over HTTP the server listens on 127.0.0.1 only, never on another interface, and every request
must carry `Authorization: Bearer <token>`; anything else is answered 401 before it reaches the
MCP layer. The token is compared in constant time (both sides are hashed first, so not even its
length leaks). Loopback alone is not enough: any local process, or a web page through DNS
rebinding, could talk to an unauthenticated port (the SDK also checks the Host header).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import socket
import sys
from collections.abc import Callable
from typing import Any

import anyio
import uvicorn
from anyio import to_thread
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListResourcesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
)
from starlette.types import ASGIApp, Receive, Scope, Send

from agentscript import __version__
from agentscript.memory.errors import INVALID_ARGUMENT, MemoryServiceError
from agentscript.memory.mcp_lines import LONE_SURROGATE_META, GuardedLines, lone_surrogate_error
from agentscript.memory.service import MemoryService
from agentscript.memory.tools import TOOLS, call_tool

SERVER_NAME = "agentscript-memory"
HOST = "127.0.0.1"
MCP_PATH = "/mcp"
DIGEST_URI = "memory://digest"
# A bearer token is the only lock on the port; a short one can be guessed.
MIN_TOKEN_CHARS = 16
# Seconds open streams get to finish when the server is asked to stop.
_GRACEFUL_SHUTDOWN = 5

INSTRUCTIONS = (
    "Long-term memory across sessions. At the start of a session read the resource "
    f"{DIGEST_URI} (or call memory_digest); recall before asking what the user may have said "
    "before; remember facts, reusable knowledge and episodes with their outcome, never "
    "temporary state, content that files already hold, or secrets."
)


def build_server(service: MemoryService) -> Server[Any]:
    """An MCP server answering from `service`; the caller runs it and closes the service."""
    tools = [
        Tool(
            name=tool.name,
            title=tool.title,
            description=tool.description,
            input_schema=tool.input_schema,
            annotations=ToolAnnotations.model_validate(tool.annotations),
        )
        for tool in TOOLS
    ]
    digest = Resource(
        uri=DIGEST_URI,
        name="digest",
        title="Memory digest",
        description=(
            "What long-term memory holds for this workspace, one line per memory, within the "
            "budget of memory.yml: read it at the start of a session. Never store it back."
        ),
        mime_type="text/plain",
    )

    async def list_tools(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def call(ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> CallToolResult:
        field = (params.meta or {}).get(LONE_SURROGATE_META)
        if field is not None:
            result = lone_surrogate_error(str(field))
        else:
            result = await to_thread.run_sync(call_tool, service, params.name, params.arguments)
        return CallToolResult(
            content=[TextContent(text=json.dumps(result, ensure_ascii=False))],
            structured_content=result,
            is_error="error" in result,
        )

    async def list_resources(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        return ListResourcesResult(resources=[digest])

    async def read_resource(
        ctx: ServerRequestContext[Any], params: ReadResourceRequestParams
    ) -> ReadResourceResult:
        if params.uri != DIGEST_URI:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"unknown resource {params.uri!r}; this server has {DIGEST_URI}",
                data={"uri": params.uri},
            )
        text = await to_thread.run_sync(_digest_text, service)
        return ReadResourceResult(
            contents=[TextResourceContents(uri=DIGEST_URI, text=text, mime_type="text/plain")]
        )

    return _MemoryServer(
        service,
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


class _MemoryServer(Server[Any]):
    """A Server whose instructions, sent at initialise, end with the session digest read at
    that moment: hosts that show a server's instructions to their model get the session
    start without asking for the resource. A digest that cannot be read leaves the plain
    instructions; initialise never fails because of it."""

    def __init__(self, service: MemoryService, *args: Any, **options: Any) -> None:
        self._service = service
        self._instructions: str | None = None
        super().__init__(*args, **options)

    @property
    def instructions(self) -> str | None:
        try:
            digest = _digest_text(self._service)
        except Exception:  # the digest is a courtesy; the session must start regardless
            digest = ""
        parts = [part for part in (self._instructions, digest) if part]
        return "\n\n".join(parts) or None

    @instructions.setter
    def instructions(self, value: str | None) -> None:
        self._instructions = value


def _digest_text(service: MemoryService) -> str:
    text = service.digest().text
    return text


def serve_stdio(service: MemoryService) -> None:
    """Serve MCP on this process's stdin and stdout until the client closes them."""

    async def run() -> None:
        server = build_server(service)
        text = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
        lines = GuardedLines(anyio.wrap_file(text))
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)


def check_token(token: str) -> str:
    """The bearer token, refused when it is empty or too short to be a lock."""
    stripped = token.strip()
    if len(stripped) < MIN_TOKEN_CHARS:
        raise MemoryServiceError(
            INVALID_ARGUMENT,
            f"the bearer token must be at least {MIN_TOKEN_CHARS} characters (it is "
            f"{len(stripped)})",
            "token",
        )
    return stripped


def serve_http(
    service: MemoryService,
    token: str,
    port: int,
    *,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve Streamable HTTP at http://127.0.0.1:PORT/mcp until interrupted (SIGINT, SIGTERM).

    Port 0 takes any free port. The listening socket is bound and listening before `on_ready`
    is told the URL, so a client may connect as soon as it knows where.
    """
    secret = check_token(token)
    server = build_server(service)
    app = BearerGate(server.streamable_http_app(host=HOST), secret)
    try:
        listener = socket.create_server((HOST, port), family=socket.AF_INET)
    except OSError as error:
        raise MemoryServiceError(
            INVALID_ARGUMENT,
            f"cannot listen on {HOST}:{port}: "
            + (os.strerror(error.errno) if error.errno else str(error)),
            "port",
        ) from None
    try:
        bound_port = listener.getsockname()[1]
        config = uvicorn.Config(
            app,
            log_level="warning",
            ws="none",
            lifespan="on",
            timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN,
        )
        if on_ready is not None:
            on_ready(f"http://{HOST}:{bound_port}{MCP_PATH}")
        uvicorn.Server(config).run(sockets=[listener])
    finally:
        listener.close()


class BearerGate:
    """ASGI middleware: every HTTP request needs `Authorization: Bearer <token>`, else 401.

    Lifespan events pass through (they come from the server itself, not from a client); the
    server runs without WebSocket support, so every other scope is an HTTP request.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._expected = _fingerprint(token.encode("utf-8"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or self._authorized(scope):
            await self._app(scope, receive, send)
            return
        body = json.dumps(
            {"error": "unauthorized", "message": "send Authorization: Bearer <token>"}
        ).encode("utf-8")
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode("ascii")),
                    (b"www-authenticate", b'Bearer realm="agentscript-memory"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def _authorized(self, scope: Scope) -> bool:
        values = [value for name, value in scope.get("headers", []) if name == b"authorization"]
        if len(values) != 1:
            return False
        scheme, _, presented = values[0].partition(b" ")
        if scheme.lower() != b"bearer":
            return False
        return hmac.compare_digest(_fingerprint(presented.strip()), self._expected)


def _fingerprint(token: bytes) -> bytes:
    return hashlib.sha256(token).digest()
