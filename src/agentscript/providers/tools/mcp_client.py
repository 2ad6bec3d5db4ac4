"""Live MCP servers for a run: started on first use, kept open, closed together at the end.

A server starts only after the `approve` callback its caller passes has allowed that launch,
called right before the start: there is no path that starts a server without asking.

The MCP SDK is async (anyio), and each connection lives inside task groups that must be entered
and left by the same task. So every server runs as one long-lived task on a private event loop
thread (an anyio blocking portal) that connects, lists the server's tools, then waits to be
told to stop and disconnects. The interpreter is synchronous: its calls cross into that loop
with `portal.call`, which also lets calls from several threads share one connection.

Everything that can wait has a bound: connecting and listing tools (`start_timeout`), each
tool call (the server's `timeout`), and disconnecting. A stdio server's stderr goes to a
temporary file so that a server that fails or dies can be explained with its last words.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from contextlib import AsyncExitStack, ExitStack, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
from anyio.abc import TaskStatus
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client import Transport
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CONNECTION_CLOSED, CallToolResult, Implementation, Tool

from agentscript import __version__
from agentscript.providers.tools.mcp_config import (
    HttpServer,
    ServerConfig,
    StdioServer,
    expand,
    launch_of,
    load_servers,
)
from agentscript.providers.tools.mcp_launch import CONFIG_FILE, McpConfigSnapshot, ServerLaunch
from agentscript.runtime.budgets import CallDeadline, Interrupted
from agentscript.runtime.errors import AgentScriptError, ExecutionError

# Seconds a server has to start, answer the handshake and list its tools.
DEFAULT_START_TIMEOUT = 20.0
# Seconds a server has to shut down once asked (a stdio child is then killed by the SDK).
_CLOSE_TIMEOUT = 10.0
# How often a waiting call looks whether the run was interrupted from another thread.
_POLL_SECONDS = 0.1
# HTTP: connecting and sending are quick or broken; reading waits on the tool itself, which
# the call timeout bounds, so the read limit only guards the server's event stream.
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
# A server that pages its tool list forever must not hang the start.
_MAX_TOOL_PAGES = 100
_STDERR_LINES = 20


@dataclass(frozen=True, slots=True)
class _HttpTarget:
    url: str
    headers: dict[str, str]


@dataclass(frozen=True, slots=True)
class _Loop:
    """The event loop thread every server runs on, and where stdio servers' stderr goes."""

    portal: BlockingPortal
    stderr_dir: Path
    resources: ExitStack


@dataclass(slots=True)
class _Live:
    """A connected server: its client, its tools by name, and how to stop it."""

    key: str
    portal: BlockingPortal
    client: Client
    tools: dict[str, Tool]
    call_timeout: float
    stderr: Path | None
    stop: anyio.Event
    done: Future[None] | None = None


# Called before a server starts; raises when the start is not allowed.
ApproveLaunch = Callable[[ServerLaunch], None]


class McpConnections:
    """The MCP servers of one workspace, each connected on first use until `close()`.

    `config` is the workspace's configuration as read at run start (read now when not given).
    `environ` is where `$VAR` in the config file is looked up (the process environment by
    default); a stdio child gets the SDK's safe default variables plus its configured `env`.
    After `close()` the object can be used again: servers then start afresh (approved again).
    """

    def __init__(
        self,
        workspace: Path,
        environ: Mapping[str, str] | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        config: McpConfigSnapshot | None = None,
    ) -> None:
        self.workspace = workspace.resolve()
        self._snapshot = config or McpConfigSnapshot.read(self.workspace)
        self._environ = environ
        self._start_timeout = start_timeout
        self._lock = threading.Lock()
        self._starting: dict[str, threading.Lock] = {}
        self._live: dict[str, _Live] = {}
        self._servers: dict[str, ServerConfig] | None = None
        self._config_loaded = False
        # Created with the first server, stopped by close().
        self._loop: _Loop | None = None
        self._stderr_names = itertools.count(1)

    # ------------------------------------------------------------------ public

    def server(self, key: str) -> ServerConfig:
        """The configuration of server `key`; an error when the file does not configure it."""
        with self._lock:
            return self._config(key)

    def tools(self, key: str, approve: ApproveLaunch) -> dict[str, Tool]:
        """The server's tools by name, starting the server (once `approve` allows it) if it is
        not running yet."""
        return self._connect(key, approve).tools

    def call_tool(
        self,
        key: str,
        name: str,
        arguments: dict[str, Any],
        approve: ApproveLaunch,
        deadline: CallDeadline | None = None,
    ) -> CallToolResult:
        """Run one `tools/call`. A result with isError is returned; only protocol and
        transport failures, timeouts and a server that went away raise ExecutionError. The
        call ends at the server's timeout or at `deadline` (the run's end, Ctrl-C), whichever
        comes first; the SDK then tells the server the request is cancelled."""
        live = self._connect(key, approve)
        run = deadline if deadline is not None else CallDeadline()
        timeout = run.seconds_left(live.call_timeout)
        by_run = run.binds(live.call_timeout)
        try:
            result = self._wait(
                live.portal.start_task_soon(self._call, live, name, arguments, timeout), run
            )
        except AgentScriptError:
            raise
        except Exception as raised:
            problem = _root(raised)
            if isinstance(problem, MCPError) and problem.code == CONNECTION_CLOSED:
                # The next use starts the server again instead of failing forever.
                self._discard(live)
                raise ExecutionError(
                    f"MCP server '{key}' closed the connection during tool '{name}' "
                    f"(the server may have exited){_stderr_tail(live.stderr)}"
                ) from None
            if isinstance(problem, MCPError):
                raise ExecutionError(
                    f"MCP server '{key}' rejected tool '{name}': {problem.message} "
                    f"(error {problem.code})"
                ) from None
            raise ExecutionError(
                f"MCP server '{key}' failed during tool '{name}': {_describe(problem)}"
            ) from None
        if result is None and by_run:
            raise run.exceeded()
        if result is None:
            raise ExecutionError(
                f"MCP server '{key}' did not answer tool '{name}' within "
                f"{_seconds(live.call_timeout)} (set \"timeout\" for '{key}' in {CONFIG_FILE} "
                "to allow longer)"
            )
        return result

    def close(self) -> None:
        """Disconnect every server and stop the event loop thread. Stdio children are asked to
        exit and killed if they do not, so none outlives this call. Safe to call twice."""
        with self._lock:
            servers = list(self._live.values())
            loop = self._loop
            self._live.clear()
            self._starting.clear()
            self._loop = None
        for live in servers:
            live.portal.call(live.stop.set)
        for live in servers:
            _wait_stopped(live)
        if loop is not None:
            loop.resources.close()

    # ------------------------------------------------------------------ starting

    def _connect(self, key: str, approve: ApproveLaunch) -> _Live:
        """The running server for `key`, started now if need be (one start per server even
        when several threads ask at once), and only once `approve` has allowed it."""
        with self._lock:
            live = self._live.get(key)
            if live is not None:
                return live
            starter = self._starting.setdefault(key, threading.Lock())
        with starter:
            with self._lock:
                live = self._live.get(key)
                if live is not None:
                    return live
                config = self._config(key)
            approve(launch_of(key, config))
            with self._lock:
                loop = self._running_loop()
                stderr = None
                if isinstance(config, StdioServer):
                    stderr = loop.stderr_dir / f"server-{next(self._stderr_names)}.log"
            live = self._start(key, config, loop.portal, stderr)
            with self._lock:
                self._live[key] = live
            return live

    def _config(self, key: str) -> ServerConfig:
        if not self._config_loaded:
            self._servers = load_servers(self._snapshot)
            self._config_loaded = True
        path = self._snapshot.path
        if self._servers is None:
            raise ExecutionError(
                f"MCP server '{key}' not found in {CONFIG_FILE} (looked for {path}, which "
                "does not exist)"
            )
        config = self._servers.get(key)
        if config is None:
            known = ", ".join(sorted(self._servers)) or "none"
            raise ExecutionError(
                f"MCP server '{key}' not found in {CONFIG_FILE} ({path} configures: {known})"
            )
        return config

    def _running_loop(self) -> _Loop:
        """The event loop thread, started on first need. Call with the lock held."""
        if self._loop is None:
            resources = ExitStack()
            portal = resources.enter_context(start_blocking_portal())
            stderr_dir = resources.enter_context(
                tempfile.TemporaryDirectory(prefix="agentscript-mcp-", ignore_cleanup_errors=True)
            )
            self._loop = _Loop(portal, Path(stderr_dir), resources)
        return self._loop

    def _start(
        self, key: str, config: ServerConfig, portal: BlockingPortal, stderr: Path | None
    ) -> _Live:
        target = self._target(key, config)
        try:
            done, ready = portal.start_task(
                self._serve,
                key,
                portal,
                target,
                config.start_timeout or self._start_timeout,
                config.timeout,
                stderr,
                name=f"mcp:{key}",
            )
        except Exception as raised:
            problem = _root(raised)
            if isinstance(problem, ExecutionError):
                raise problem from None
            raise ExecutionError(_start_failure(key, target, problem, stderr)) from None
        live: _Live = ready
        live.done = done
        return live

    def _target(self, key: str, config: ServerConfig) -> StdioServerParameters | _HttpTarget:
        """How to reach the server, with `$VAR` expanded now, when it is about to start."""
        # AGENTSCRIPT_PYTHON lets a config start a Python server with the interpreter that
        # runs AgentScript ("command": "${AGENTSCRIPT_PYTHON}"), whatever the PATH says.
        environ = {
            "AGENTSCRIPT_PYTHON": sys.executable,
            **(self._environ if self._environ is not None else os.environ),
        }
        if isinstance(config, HttpServer):
            headers = {
                name: expand(value, environ, key, f"headers.{name}")
                for name, value in config.headers.items()
            }
            return _HttpTarget(config.url, headers)
        cwd = self.workspace / config.cwd if config.cwd else self.workspace
        if not cwd.is_dir():
            raise ExecutionError(
                f"MCP server '{key}': working directory {cwd} does not exist (cwd in {CONFIG_FILE})"
            )
        env = {
            name: expand(value, environ, key, f"env.{name}") for name, value in config.env.items()
        }
        command = expand(config.command, environ, key, "command")
        args = [
            expand(value, environ, key, f"args.{index}") for index, value in enumerate(config.args)
        ]
        return StdioServerParameters(command=command, args=args, env=env, cwd=cwd)

    async def _serve(
        self,
        key: str,
        portal: BlockingPortal,
        target: StdioServerParameters | _HttpTarget,
        start_timeout: float,
        call_timeout: float,
        stderr: Path | None,
        *,
        task_status: TaskStatus[_Live],
    ) -> None:
        """One server's whole life in one task: connect and list tools within the start
        timeout, report ready, wait for `stop`, then disconnect within the close timeout."""
        started = False
        with anyio.CancelScope(deadline=anyio.current_time() + start_timeout) as scope:
            async with AsyncExitStack() as stack:
                client = Client(
                    await _transport(stack, target, stderr),
                    client_info=Implementation(name="agentscript", version=__version__),
                    # tools/list is read once per start; the SDK's response cache adds nothing.
                    cache=None,
                )
                await stack.enter_async_context(client)
                tools = await _list_tools(client)
                scope.deadline = math.inf
                live = _Live(key, portal, client, tools, call_timeout, stderr, anyio.Event())
                started = True
                task_status.started(live)
                await live.stop.wait()
                scope.deadline = anyio.current_time() + _CLOSE_TIMEOUT
        if scope.cancelled_caught and not started:
            raise ExecutionError(
                f"MCP server '{key}' did not start within {_seconds(start_timeout)} (set "
                f"\"startTimeout\" for '{key}' in {CONFIG_FILE} to allow longer)"
                f"{_stderr_tail(stderr)}"
            )

    @staticmethod
    def _wait(future: Future[CallToolResult | None], run: CallDeadline) -> CallToolResult | None:
        """The call's outcome; on Ctrl-C (here or in another thread of the run) the call is
        cancelled on the loop and the interrupt goes on."""
        try:
            while True:
                try:
                    return future.result(timeout=_POLL_SECONDS)
                except TimeoutError:
                    if run.stopped.is_set():
                        future.cancel()
                        raise Interrupted("Interrupted while the tool was running") from None
        except KeyboardInterrupt:
            future.cancel()
            raise

    @staticmethod
    async def _call(
        live: _Live, name: str, arguments: dict[str, Any], timeout: float
    ) -> CallToolResult | None:
        """The call's result, or None when it ran out of time (the SDK then tells the server
        the request is cancelled)."""
        with anyio.move_on_after(timeout):
            return await live.client.call_tool(name, arguments)
        return None

    def _discard(self, live: _Live) -> None:
        """Forget and disconnect a server whose connection is gone."""
        with self._lock:
            if self._live.get(live.key) is live:
                del self._live[live.key]
        live.portal.call(live.stop.set)
        _wait_stopped(live)


async def _transport(
    stack: AsyncExitStack, target: StdioServerParameters | _HttpTarget, stderr: Path | None
) -> Transport:
    """The SDK transport for `target`; what it opens is closed with `stack`."""
    if isinstance(target, _HttpTarget):
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=target.headers, timeout=_HTTP_TIMEOUT)
        )
        return streamable_http_client(target.url, http_client=http)
    if stderr is None:
        return stdio_client(target)
    errlog = stack.enter_context(stderr.open("a", encoding="utf-8", errors="replace"))
    return stdio_client(target, errlog=errlog)


async def _list_tools(client: Client) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    cursor: str | None = None
    for _ in range(_MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.update((tool.name, tool) for tool in page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _wait_stopped(live: _Live) -> None:
    """Wait until a server has disconnected. A failure while disconnecting is not reported:
    the server is gone either way, and closing must go on to close the others."""
    if live.done is not None:
        with suppress(Exception):
            live.done.result()


def _start_failure(
    key: str,
    target: StdioServerParameters | _HttpTarget,
    problem: BaseException,
    stderr: Path | None,
) -> str:
    if isinstance(target, StdioServerParameters) and isinstance(problem, OSError):
        return (
            f"MCP server '{key}' could not be started: {target.command}: "
            f"{problem.strerror or problem}"
        )
    if isinstance(target, _HttpTarget) and isinstance(problem, httpx2.HTTPError):
        return (
            f"MCP server '{key}' failed to start: cannot reach {target.url}: {_describe(problem)}"
        )
    return f"MCP server '{key}' failed to start: {_describe(problem)}{_stderr_tail(stderr)}"


def _root(problem: BaseException) -> BaseException:
    """The first real error inside anyio's exception groups, which wrap errors raised in task
    groups however deep they are."""
    while isinstance(problem, BaseExceptionGroup) and problem.exceptions:
        problem = problem.exceptions[0]
    return problem


def _describe(problem: BaseException) -> str:
    if isinstance(problem, MCPError):
        return problem.message
    text = str(problem)
    return f"{type(problem).__name__}: {text}" if text else type(problem).__name__


def _stderr_tail(stderr: Path | None) -> str:
    """The server's last stderr lines as a message suffix, or "" when it said nothing."""
    if stderr is None:
        return ""
    try:
        text = stderr.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line.rstrip() for line in text.strip().splitlines()][-_STDERR_LINES:]
    if not lines:
        return ""
    return "\nServer stderr (last lines):\n" + "\n".join(f"  {line}" for line in lines)


def _seconds(value: float) -> str:
    return f"{value:g} s"
