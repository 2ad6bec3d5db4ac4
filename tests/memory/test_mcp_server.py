"""`agentscript memory serve` with the official MCP SDK's client: over stdio (the client spawns
`python -m agentscript memory serve` itself) and over Streamable HTTP (a server process started
with `--http 0` and a bearer token). Every server gets a temporary database and workspace.
"""

from __future__ import annotations

import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from agentscript.cli.main import main
from agentscript.memory import MemoryService
from agentscript.memory.tools import TOOLS

PYTHON = sys.executable
TOKEN = "test-token-0123456789abcdef"
# A deadline for a server to say where it listens; a guard against a hang, not a measurement.
START_LIMIT = 120
T = TypeVar("T")


def serve_args(database: Path, workspace: Path, *extra: str) -> list[str]:
    return [
        "-m",
        "agentscript",
        "memory",
        "serve",
        "--db",
        str(database),
        "--workspace",
        str(workspace),
        *extra,
    ]


def run(session: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(session)


def leaves(error: BaseException) -> list[BaseException]:
    """The errors inside (nested) exception groups."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    workspace = tmp_path / "project"
    workspace.mkdir()
    return tmp_path / "memory.db", workspace


def stdio_server(database: Path, workspace: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=PYTHON, args=serve_args(database, workspace), cwd=workspace
    )


# ------------------------------------------------------------------------------- stdio


def test_stdio_lists_the_tools_with_their_schemas_and_annotations(
    places: tuple[Path, Path],
) -> None:
    async def session() -> dict[str, Any]:
        async with Client(stdio_server(*places)) as client:
            listed = await client.list_tools()
            return {tool.name: tool for tool in listed.tools}

    tools = run(session)
    assert list(tools) == [tool.name for tool in TOOLS]
    for definition in TOOLS:
        seen = tools[definition.name]
        assert seen.input_schema == definition.input_schema
        assert seen.description == definition.description
        assert seen.title == definition.title
    assert tools["recall"].annotations.read_only_hint is True
    assert tools["memory_digest"].annotations.read_only_hint is True
    forget = tools["forget"].annotations
    assert (forget.read_only_hint, forget.destructive_hint, forget.idempotent_hint) == (
        False,
        True,
        True,
    )
    remember = tools["remember"].annotations
    assert (remember.read_only_hint, remember.destructive_hint) == (False, False)
    assert all(tool.annotations.open_world_hint is False for tool in tools.values())


def test_stdio_tool_calls_answer_from_the_database_given(places: tuple[Path, Path]) -> None:
    database, workspace = places

    async def session() -> dict[str, Any]:
        async with Client(stdio_server(database, workspace)) as client:
            created = await client.call_tool(
                "remember", {"text": "Deploy with make release", "tags": ["deploy"]}
            )
            found = await client.call_tool("recall", {"query": "deploy"})
            invalid = await client.call_tool("recall", {"limit": 500})
            unknown = await client.call_tool("memorize", {})
            secret = await client.call_tool(
                "remember", {"text": "api token abc", "kind": "fact", "key": "token"}
            )
            assert secret.structured_content is not None
            purged = await client.call_tool(
                "forget", {"id": secret.structured_content["id"], "purge": True}
            )
            return {
                "created": created,
                "found": found,
                "invalid": invalid,
                "unknown": unknown,
                "purged": purged,
            }

    results = run(session)
    created = results["created"]
    assert created.is_error is False
    assert created.structured_content["action"] == "created"
    entry_id = created.structured_content["id"]
    found = results["found"]
    assert [item["id"] for item in found.structured_content["results"]] == [entry_id]
    # The same JSON as text, for clients that read only text content.
    assert '"count": 1' in found.content[0].text
    invalid = results["invalid"]
    assert invalid.is_error is True
    assert invalid.structured_content == {
        "error": {
            "code": "invalid_argument",
            "message": "limit: Input should be less than or equal to 200",
            "field": "limit",
        }
    }
    assert results["unknown"].is_error is True
    assert results["unknown"].structured_content["error"]["code"] == "unknown_tool"
    assert results["purged"].structured_content["action"] == "purged"
    with MemoryService.open(workspace, database=database) as memory:
        assert memory.get(entry_id)["title"] == "Deploy with make release"
        assert memory.history("token")["versions"] == []


def test_stdio_keeps_a_compacted_context_and_answers_with_the_notice(
    places: tuple[Path, Path],
) -> None:
    database, workspace = places
    arguments = {"session": "host-7", "summary": "Release job fixed; cache bug open"}

    async def session() -> list[dict[str, Any]]:
        async with Client(stdio_server(database, workspace)) as client:
            first = await client.call_tool("memory_checkpoint", arguments)
            again = await client.call_tool("memory_checkpoint", arguments)
            check = await client.call_tool("memory_check", {})
            return [dict(result.structured_content or {}) for result in (first, again, check)]

    first, again, check = run(session)
    assert first["action"] == "written" and first["id"] in first["notice"]
    assert (again["action"], again["id"]) == ("exists", first["id"])
    assert [item["signal"] for item in check["suggestions"]] == ["undistilled_checkpoints"]
    with MemoryService.open(workspace, database=database) as memory:
        assert memory.get(first["id"])["tags"] == ["compaction"]


def test_stdio_serves_the_digest_as_a_resource(places: tuple[Path, Path]) -> None:
    database, workspace = places
    with MemoryService.open(workspace, database=database) as memory:
        memory.remember("User prefers short answers", kind="fact", key="style", scope="global")
        expected = memory.digest()["text"]

    async def session() -> tuple[Any, Any, BaseException, str | None]:
        async with Client(stdio_server(database, workspace)) as client:
            instructions = client.instructions
            listed = await client.list_resources()
            read = await client.read_resource("memory://digest")
            try:
                await client.read_resource("memory://other")
            except MCPError as error:
                return listed, read, error, instructions
            raise AssertionError("an unknown resource was read")

    listed, read, error, instructions = run(session)
    # Hosts that read a server's instructions get the session start without asking.
    assert instructions is not None
    assert instructions.startswith("Long-term memory across sessions.")
    assert instructions.endswith(expected)
    (resource,) = listed.resources
    assert (resource.uri, resource.name, resource.mime_type) == (
        "memory://digest",
        "digest",
        "text/plain",
    )
    (content,) = read.contents
    assert content.text == expected
    assert "- style: User prefers short answers" in content.text
    assert "unknown resource 'memory://other'" in str(error)


# -------------------------------------------------------------------------------- http


@dataclass
class HttpServer:
    url: str
    port: int
    database: Path
    workspace: Path


def start_http_server(
    database: Path, workspace: Path, log: queue.Queue[str]
) -> subprocess.Popen[str]:
    environ = {key: value for key, value in os.environ.items() if key != "AGENTSCRIPT_MEMORY_DB"}
    environ["AGENTSCRIPT_MEMORY_TOKEN"] = TOKEN
    process = subprocess.Popen(
        [PYTHON, *serve_args(database, workspace, "--http", "0")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=workspace,
        env=environ,
    )

    def drain() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            log.put(line)
        log.put("")

    threading.Thread(target=drain, daemon=True).start()
    return process


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root = tmp_path_factory.mktemp("memory-http")
    workspace = root / "project"
    workspace.mkdir()
    database = root / "memory.db"
    log: queue.Queue[str] = queue.Queue()
    process = start_http_server(database, workspace, log)
    try:
        line = log.get(timeout=START_LIMIT)
        assert " at http://127.0.0.1:" in line, f"the server did not start: {line!r}"
        url = line.split(" at ", 1)[1].split(" ", 1)[0]
        yield HttpServer(url, int(url.rsplit(":", 1)[1].split("/", 1)[0]), database, workspace)
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def http_client(url: str, statuses: list[int], headers: dict[str, str]) -> Client:
    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    http = httpx2.AsyncClient(headers=headers, event_hooks={"response": [record]})
    return Client(streamable_http_client(url, http_client=http))


def test_http_with_the_bearer_token_serves_tools_and_the_digest(http_server: HttpServer) -> None:
    statuses: list[int] = []

    async def session() -> tuple[Any, Any, Any]:
        async with http_client(
            http_server.url, statuses, {"Authorization": f"Bearer {TOKEN}"}
        ) as client:
            tools = await client.list_tools()
            created = await client.call_tool(
                "remember", {"text": "Release notes live in CHANGES.md", "tags": ["release"]}
            )
            digest = await client.read_resource("memory://digest")
            return tools, created, digest

    tools, created, digest = run(session)
    assert [tool.name for tool in tools.tools] == [tool.name for tool in TOOLS]
    assert {tool.name for tool in tools.tools if tool.annotations.read_only_hint} == {
        tool.name for tool in TOOLS if tool.read_only
    }
    assert created.is_error is False
    assert "Release notes live in CHANGES.md" in digest.contents[0].text
    assert statuses and all(status < 400 for status in statuses)
    with MemoryService.open(http_server.workspace, database=http_server.database) as memory:
        assert memory.get(created.structured_content["id"])["tags"] == ["release"]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-token-0123456789abcdef"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": TOKEN},
    ],
    ids=["no-header", "wrong-token", "other-scheme", "bare-token"],
)
def test_http_without_the_bearer_token_is_rejected(
    http_server: HttpServer, headers: dict[str, str]
) -> None:
    statuses: list[int] = []

    async def session() -> None:
        async with http_client(http_server.url, statuses, headers) as client:
            await client.call_tool("remember", {"text": "must never be stored"})

    with pytest.raises(Exception) as caught:
        run(session)
    assert any(isinstance(leaf, MCPError) for leaf in leaves(caught.value))
    assert statuses and set(statuses) == {401}
    with MemoryService.open(http_server.workspace, database=http_server.database) as memory:
        assert memory.recall("stored")["count"] == 0


def test_http_rejects_every_request_without_the_token_before_mcp(http_server: HttpServer) -> None:
    with httpx2.Client() as http:
        for method in ("GET", "POST", "DELETE"):
            response = http.request(method, http_server.url, json={} if method == "POST" else None)
            assert response.status_code == 401
            assert response.headers["www-authenticate"].startswith("Bearer")
        assert http.get(http_server.url.replace("/mcp", "/other")).status_code == 401
        # The scheme is case-insensitive, the token is not.
        accepted = http.get(http_server.url, headers={"Authorization": f"bearer {TOKEN}"})
        assert accepted.status_code != 401
        refused = http.get(http_server.url, headers={"Authorization": f"Bearer {TOKEN.upper()}"})
        assert refused.status_code == 401


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="127.0.0.2 and /proc are Linux")
def test_http_listens_on_127_0_0_1_only(http_server: HttpServer) -> None:
    socket.create_connection(("127.0.0.1", http_server.port), timeout=30).close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.2", http_server.port), timeout=30)
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port = local.split(":")
            if int(port, 16) == http_server.port and state == "0A":
                listening.append(address)
    assert listening == ["0100007F"]


# ------------------------------------------------------------------------ start checks


def test_http_refuses_to_start_without_a_token(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    database, workspace = places
    monkeypatch.delenv("AGENTSCRIPT_MEMORY_TOKEN", raising=False)
    base = ["memory", "serve", "--db", str(database), "--workspace", str(workspace)]
    assert main([*base, "--http", "0"]) == 1
    assert capsys.readouterr().err == (
        "serve --http needs a bearer token: set AGENTSCRIPT_MEMORY_TOKEN (or pass --token); "
        "none is generated\n"
    )
    assert main([*base, "--http", "0", "--token", "short"]) == 1
    assert capsys.readouterr().err == (
        "the bearer token must be at least 16 characters (it is 5)\n"
    )
    monkeypatch.setenv("AGENTSCRIPT_MEMORY_TOKEN", " ")
    assert main([*base, "--http", "0"]) == 1
    assert "the bearer token must be at least 16 characters" in capsys.readouterr().err
    assert main([*base, "--token", TOKEN]) == 1
    assert capsys.readouterr().err == "--token is for --http: stdio needs no token\n"
    # Nothing was opened: refusing to start creates no database.
    assert not database.exists()


def test_a_port_in_use_is_reported_in_one_line(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    database, workspace = places
    monkeypatch.setenv("AGENTSCRIPT_MEMORY_TOKEN", TOKEN)
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        serve = ["memory", "serve", "--db", str(database), "--workspace", str(workspace)]
        code = main([*serve, "--http", str(port)])
    assert code == 1
    assert capsys.readouterr().err == f"cannot listen on 127.0.0.1:{port}: Address already in use\n"


def test_the_docs_list_every_tool_and_count_them_right() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "memory-service.md").read_text()
    numbers = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    said = re.search(r"lists the (\w+) tools", docs)
    assert said is not None
    assert numbers.split().index(said.group(1)) + 1 == len(TOOLS)
    table = set(re.findall(r"^\| `([a-z_]+)` \|", docs, re.MULTILINE))
    assert {tool.name for tool in TOOLS} <= table


def test_a_lone_surrogate_over_stdio_gets_an_error_reply_and_stores_nothing(
    places: tuple[Path, Path],
) -> None:
    database, workspace = places
    server = subprocess.Popen(
        [PYTHON, *serve_args(database, workspace)],
        cwd=workspace,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdin is not None and server.stdout is not None

    def ask(line: str) -> dict[str, Any]:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(line.encode() + b"\n")
        server.stdin.flush()
        return dict(json.loads(server.stdout.readline()))

    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {},
                 "clientInfo": {"name": "test", "version": "1"}}  # fmt: skip
        ask(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}))
        server.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        reply = ask(
            '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": '
            '{"name": "remember", "arguments": {"text": "bad \\ud800 text"}}}'
        )
        stats = ask(
            '{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": '
            '{"name": "memory_stats", "arguments": {}}}'
        )
    finally:
        server.kill()
        server.wait()
    assert reply["id"] == 2 and reply["result"]["isError"] is True
    assert reply["result"]["structuredContent"]["error"] == {
        "code": "invalid_argument",
        "message": "text contains a lone surrogate; text must be valid Unicode",
        "field": "text",
    }
    assert stats["result"]["structuredContent"]["scopes"][0]["active"] == 0
