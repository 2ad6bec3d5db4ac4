"""`mcp://` tools against real MCP server processes (tests/fixtures/mcp/echo_server.py).

The servers are started by the code under test, from an `agentscript.mcp.json` written into a
temporary workspace, so these tests cover the whole path: config, spawning, the SDK handshake,
calls, normalisation and shutdown. One McpTools (and so one server process per key) is shared
by the module; tests that kill or close a server get their own.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentscript
from agentscript.providers.tools.mcp import McpTools, approve_every_start, list_server_tools
from agentscript.providers.tools.registry import ToolRegistry
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall

ECHO_SERVER = str(Path(__file__).parents[1] / "fixtures" / "mcp" / "echo_server.py")
PYTHON = sys.executable
TOKEN = "s3cret-token"
ENVIRON = {"MCP_TEST_TOKEN": TOKEN}
ECHO = "mcp://tools/echo"
ALL_TOOLS = [
    "echo",
    "add",
    "fail",
    "blocks",
    "wipe",
    "peek",
    "note",
    "draft",
    "env",
    "cwd",
    "pid",
    "header",
    "sleep",
    "crash",
]


# How the configuration rates some of the echo server's tools (the gate decides from these).
RATINGS = {
    "peek": {"readOnlyHint": True},
    "note": {"readOnlyHint": False, "destructiveHint": False},
    "draft": {"readOnlyHint": False},
}


def echo_server(**extra: Any) -> dict[str, Any]:
    # A generous start limit: a busy test machine must not turn a slow start into a failure.
    return {"command": PYTHON, "args": [ECHO_SERVER], "startTimeout": 120, **extra}


def write_config(workspace: Path, servers: dict[str, Any]) -> None:
    (workspace / "agentscript.mcp.json").write_text(json.dumps({"mcpServers": servers}))


def call(tools: McpTools, uri: str, method: str, *args: Any, name: str = "Echo") -> Any:
    return tools.call(ToolCall(name, uri, method, list(args)))


def failure(tools: McpTools, uri: str, method: str, *args: Any) -> str:
    with pytest.raises(ExecutionError) as raised:
        call(tools, uri, method, *args)
    return str(raised.value)


def pid_alive(pid: int) -> bool:
    """Whether the process runs; an exited process not yet reaped (a zombie) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    if not Path("/proc/self/stat").exists():
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    # The state letter follows the command name, which is in parentheses.
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mcp-workspace")
    (root / "sub").mkdir()
    write_config(
        root,
        {
            "tools/echo": echo_server(
                env={"ECHO_TOKEN": "${MCP_TEST_TOKEN}", "ECHO_MIXED": "a-$MCP_TEST_TOKEN-b"},
                tools=RATINGS,
            ),
            # Runs in sub/, with a short call timeout.
            "sub": echo_server(transport="stdio", cwd="sub", timeout=2),
            "missing-var": echo_server(env={"TOKEN": "$MCP_TEST_UNSET_VARIABLE"}),
            "missing-dir": echo_server(cwd="no-such-dir"),
            "no-such-command": {"command": str(root / "no-such-server")},
            "dies": {
                "command": PYTHON,
                "args": [
                    "-c",
                    "import sys; sys.stderr.write('no token configured\\n'); sys.exit(2)",
                ],
            },
            "hangs": {
                "command": PYTHON,
                "args": ["-c", "import time; time.sleep(60)"],
                "startTimeout": 0.5,
            },
            "unreachable": {"url": f"http://127.0.0.1:{free_port()}/mcp"},
            "cline-style": echo_server(disabled=False, autoApprove=[]),
        },
    )
    return root


@pytest.fixture(scope="module")
def tools(workspace: Path) -> Iterator[McpTools]:
    with McpTools(workspace, environ=ENVIRON, approve_start=approve_every_start) as shared:
        yield shared


# ---------------------------------------------------------------------- calls and results


def test_direct_method_form_normalises_a_text_result(tools: McpTools) -> None:
    assert call(tools, ECHO, "echo", {"text": "hello"}) == {
        "ok": True,
        "text": "hello",
        "content": [{"type": "text", "text": "hello"}],
        "structured": None,
        "isError": False,
    }


def test_call_form_names_the_tool_and_passes_args(tools: McpTools) -> None:
    result = call(tools, ECHO, "call", {"tool": "echo", "args": {"text": "via call"}})
    assert result["text"] == "via call"
    assert result["ok"] is True


def test_call_form_without_args_and_direct_form_without_argument(tools: McpTools) -> None:
    assert call(tools, ECHO, "call", {"tool": "peek"})["text"] == "peeked"
    assert call(tools, ECHO, "call", {"tool": "peek", "args": None})["text"] == "peeked"
    assert call(tools, ECHO, "peek")["text"] == "peeked"


def test_structured_output_is_returned_as_structured(tools: McpTools) -> None:
    result = call(tools, ECHO, "add", {"a": 2, "b": 3})
    assert result["structured"] == {"sum": 5}
    assert json.loads(result["text"]) == {"sum": 5}


def test_text_blocks_are_joined_and_every_block_is_kept_as_json(tools: McpTools) -> None:
    result = call(tools, ECHO, "blocks")
    assert result["text"] == "first\nsecond"
    assert result["content"] == [
        {"type": "text", "text": "first"},
        {"type": "image", "data": "aGk=", "mimeType": "image/png"},
        {"type": "text", "text": "second"},
    ]


def test_a_tool_reporting_is_error_answers_with_ok_false(tools: McpTools) -> None:
    assert call(tools, ECHO, "fail", {"reason": "no results"}) == {
        "ok": False,
        "text": "no results",
        "content": [{"type": "text", "text": "no results"}],
        "structured": None,
        "isError": True,
    }


def test_arguments_the_server_rejects_are_the_tools_error_answer(tools: McpTools) -> None:
    result = call(tools, ECHO, "add", {"a": "two"})
    assert result["ok"] is False
    assert "validation error" in result["text"]


# ---------------------------------------------------------------------- stdio environment


def test_env_values_expand_variables(tools: McpTools) -> None:
    assert call(tools, ECHO, "env", {"name": "ECHO_TOKEN"})["text"] == TOKEN
    assert call(tools, ECHO, "env", {"name": "ECHO_MIXED"})["text"] == f"a-{TOKEN}-b"


def test_child_gets_only_the_safe_default_environment(tools: McpTools) -> None:
    assert "PYTEST_CURRENT_TEST" in os.environ
    assert call(tools, ECHO, "env", {"name": "PYTEST_CURRENT_TEST"})["text"] == "<unset>"
    assert call(tools, ECHO, "env", {"name": "PATH"})["text"] == os.environ["PATH"]


def test_child_runs_in_the_workspace_root_by_default(tools: McpTools, workspace: Path) -> None:
    assert Path(call(tools, ECHO, "cwd")["text"]).resolve() == workspace.resolve()


def test_configured_cwd_is_relative_to_the_workspace(tools: McpTools, workspace: Path) -> None:
    assert Path(call(tools, "mcp://sub", "cwd")["text"]).resolve() == (workspace / "sub").resolve()


def test_keys_other_clients_add_to_an_entry_are_ignored(tools: McpTools) -> None:
    assert call(tools, "mcp://cline-style", "echo", {"text": "ok"})["text"] == "ok"


def test_missing_variable_is_an_error_naming_it(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCP_TEST_UNSET_VARIABLE", raising=False)
    with McpTools(workspace, approve_start=approve_every_start) as fresh:
        message = failure(fresh, "mcp://missing-var", "echo", {"text": "x"})
    assert message == (
        "MCP server 'missing-var': environment variable MCP_TEST_UNSET_VARIABLE is not set "
        "(used in env.TOKEN of agentscript.mcp.json)"
    )


def test_expansion_reads_the_process_environment_by_default(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TEST_UNSET_VARIABLE", "from-process")
    with McpTools(workspace, approve_start=approve_every_start) as fresh:
        assert call(fresh, "mcp://missing-var", "env", {"name": "TOKEN"})["text"] == "from-process"


def test_missing_working_directory_is_reported(tools: McpTools) -> None:
    message = failure(tools, "mcp://missing-dir", "echo", {"text": "x"})
    assert message.startswith("MCP server 'missing-dir': working directory ")
    assert "no-such-dir does not exist" in message


# ---------------------------------------------------------------------- argument errors


@pytest.mark.parametrize(
    ("method", "args", "expected"),
    [
        ("call", [{}], "MCP Echo.call tool is required"),
        ("call", [{"tool": ""}], "MCP Echo.call tool is required"),
        ("call", [{"tool": 3}], "MCP Echo.call tool is required"),
        ("call", [{"tool": "echo", "args": "text"}], "MCP Echo.call args must be an object"),
        ("call", [], "MCP Echo.call expects one object argument {tool, args?}"),
        ("call", ["echo"], "MCP Echo.call expects one object argument {tool, args?}"),
        ("echo", [{"text": "a"}, {"text": "b"}], "MCP Echo.echo expects zero or one argument"),
        ("echo", ["text"], "MCP Echo.echo expects an object argument"),
    ],
)
def test_argument_errors(tools: McpTools, method: str, args: list[Any], expected: str) -> None:
    assert failure(tools, ECHO, method, *args) == expected


def test_unknown_tool_lists_the_servers_tools(tools: McpTools) -> None:
    expected = f"MCP server 'tools/echo' has no tool 'search'. Its tools: {', '.join(ALL_TOOLS)}"
    assert failure(tools, ECHO, "search", {"q": "x"}) == expected
    assert failure(tools, ECHO, "call", {"tool": "search"}) == expected


def test_unknown_server_names_the_key_and_the_configured_ones(
    tools: McpTools, workspace: Path
) -> None:
    message = failure(tools, "mcp://tools/search", "call", {"tool": "x"})
    assert message.startswith("MCP server 'tools/search' not found in agentscript.mcp.json (")
    assert f"{workspace.resolve() / 'agentscript.mcp.json'} configures: " in message
    assert "tools/echo" in message


def test_missing_config_file_says_where_it_was_looked_for(tmp_path: Path) -> None:
    with McpTools(tmp_path, approve_start=approve_every_start) as fresh:
        message = failure(fresh, "mcp://github", "call", {"tool": "x"})
    assert message == (
        "MCP server 'github' not found in agentscript.mcp.json (looked for "
        f"{tmp_path.resolve() / 'agentscript.mcp.json'}, which does not exist)"
    )


def test_uri_without_a_server_is_an_error(tools: McpTools) -> None:
    assert failure(tools, "mcp://", "call", {"tool": "x"}) == (
        "MCP tool URI 'mcp://' names no server (expected mcp://<server>)"
    )


# ---------------------------------------------------------------------- malformed config


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "is not valid JSON: Expecting property name enclosed in double quotes"),
        ("[]", 'must be an object with "mcpServers"'),
        ('{"servers": {}}', "mcpServers: Field required"),
        ('{"mcpServers": {"x": 3}}', "mcpServers.x: Input should be a valid dictionary"),
        (
            '{"mcpServers": {"x": {"args": []}}}',
            'MCP server \'x\' needs "command" (a stdio server) or "url"',
        ),
        (
            '{"mcpServers": {"x": {"transport": "sse", "url": "http://h/sse"}}}',
            'MCP server \'x\' has unsupported transport "sse" (use "stdio" or "http")',
        ),
        (
            '{"mcpServers": {"x": {"transport": "stdio", "url": "http://h/mcp"}}}',
            "MCP server 'x' (stdio) is invalid: command: Field required",
        ),
        (
            '{"mcpServers": {"x": {"command": "s", "args": "--flag"}}}',
            "MCP server 'x' (stdio) is invalid: args: Input should be a valid list",
        ),
        (
            '{"mcpServers": {"x": {"command": "s", "env": {"A": 1}}}}',
            "MCP server 'x' (stdio) is invalid: env.A: Input should be a valid string",
        ),
        (
            '{"mcpServers": {"x": {"command": "s", "timeout": 0}}}',
            "MCP server 'x' (stdio) is invalid: timeout: Input should be greater than 0",
        ),
        (
            '{"mcpServers": {"x": {"url": "http://h/mcp", "startTimeout": -1}}}',
            "MCP server 'x' (http) is invalid: startTimeout: Input should be greater than 0",
        ),
        (
            '{"mcpServers": {"x": {"url": "ftp://h/mcp"}}}',
            "MCP server 'x' (http) is invalid: url: Value error, expected an http:// or "
            "https:// URL, got 'ftp://h/mcp'",
        ),
    ],
)
def test_malformed_config_names_the_file_and_the_problem(
    tmp_path: Path, text: str, problem: str
) -> None:
    (tmp_path / "agentscript.mcp.json").write_text(text)
    with McpTools(tmp_path, approve_start=approve_every_start) as fresh:
        message = failure(fresh, "mcp://x", "call", {"tool": "x"})
    assert str(tmp_path.resolve() / "agentscript.mcp.json") in message
    assert problem in message


# ---------------------------------------------------------------------- risk


@pytest.mark.parametrize(
    ("method", "args", "risk"),
    [
        ("peek", [], "read"),
        ("note", [{"text": "x"}], "effect"),
        ("wipe", [], "destructive"),
        ("draft", [], "destructive"),
        ("echo", [{"text": "x"}], "destructive"),
        ("call", [{"tool": "peek"}], "read"),
        ("call", [{"tool": "note"}], "effect"),
        ("call", [{"tool": "wipe"}], "destructive"),
    ],
)
def test_risk_comes_from_the_configuration_without_starting_the_server(
    workspace: Path, method: str, args: list[Any], risk: str
) -> None:
    with McpTools(workspace, environ=ENVIRON) as unstarted:
        assert unstarted.risk(ToolCall("Echo", ECHO, method, args)) == risk
        # The default approver refuses every start, so nothing can have started.
        assert "was not started" in failure(unstarted, ECHO, method, *args)


def test_a_tool_the_configuration_does_not_rate_is_destructive(tools: McpTools) -> None:
    assert tools.risk(ToolCall("Echo", ECHO, "search", [])) == "destructive"
    assert tools.risk(ToolCall("Echo", "mcp://sub", "peek", [])) == "destructive"


# ---------------------------------------------------------------------- failures and timeouts


def test_a_call_that_takes_too_long_times_out_and_the_server_stays_usable(
    tools: McpTools,
) -> None:
    assert failure(tools, "mcp://sub", "sleep", {"seconds": 60}) == (
        "MCP server 'sub' did not answer tool 'sleep' within 2 s "
        "(set \"timeout\" for 'sub' in agentscript.mcp.json to allow longer)"
    )
    assert call(tools, "mcp://sub", "echo", {"text": "still here"})["text"] == "still here"


def test_a_command_that_does_not_exist_is_reported(tools: McpTools, workspace: Path) -> None:
    assert failure(tools, "mcp://no-such-command", "x") == (
        f"MCP server 'no-such-command' could not be started: {workspace / 'no-such-server'}: "
        "No such file or directory"
    )


def test_a_server_that_exits_at_start_is_explained_with_its_stderr(tools: McpTools) -> None:
    assert failure(tools, "mcp://dies", "x") == (
        "MCP server 'dies' failed to start: Connection closed\n"
        "Server stderr (last lines):\n"
        "  no token configured"
    )


def test_a_server_that_never_answers_the_handshake_times_out(tools: McpTools) -> None:
    assert failure(tools, "mcp://hangs", "x") == (
        "MCP server 'hangs' did not start within 0.5 s "
        "(set \"startTimeout\" for 'hangs' in agentscript.mcp.json to allow longer)"
    )


def test_an_unreachable_http_server_is_reported(tools: McpTools) -> None:
    message = failure(tools, "mcp://unreachable", "x")
    assert message.startswith("MCP server 'unreachable' failed to start: cannot reach http://")


@pytest.mark.skipif(sys.platform == "win32", reason="checks the pid with os.kill(pid, 0)")
def test_a_server_dying_mid_call_is_an_error_and_the_next_call_restarts_it(
    workspace: Path,
) -> None:
    with McpTools(workspace, environ=ENVIRON, approve_start=approve_every_start) as fresh:
        first = int(call(fresh, ECHO, "pid")["text"])
        assert failure(fresh, ECHO, "crash") == (
            "MCP server 'tools/echo' closed the connection during tool 'crash' "
            "(the server may have exited)"
        )
        assert not pid_alive(first)
        second = int(call(fresh, ECHO, "pid")["text"])
        assert second != first


# ---------------------------------------------------------------------- close


@pytest.mark.skipif(sys.platform == "win32", reason="checks the pid with os.kill(pid, 0)")
def test_close_terminates_the_child_and_is_idempotent(workspace: Path) -> None:
    with McpTools(workspace, environ=ENVIRON, approve_start=approve_every_start) as fresh:
        pid = int(call(fresh, ECHO, "pid")["text"])
        assert pid_alive(pid)
        fresh.close()
        assert not pid_alive(pid)
        fresh.close()
        # A closed McpTools starts its servers afresh when used again.
        again = int(call(fresh, ECHO, "pid")["text"])
        assert again != pid
        fresh.close()
        assert not pid_alive(again)


def test_close_without_any_server_started_does_nothing(tmp_path: Path) -> None:
    fresh = McpTools(tmp_path, approve_start=approve_every_start)
    fresh.close()
    fresh.close()


# ---------------------------------------------------------------------- listing tools


def test_list_server_tools_describes_each_tool(workspace: Path) -> None:
    listed = {tool["name"]: tool for tool in list_server_tools(workspace, ECHO, environ=ENVIRON)}
    assert list(listed) == ALL_TOOLS
    assert listed["echo"]["description"] == "Answer with the text it was given."
    assert listed["echo"]["inputSchema"]["properties"]["text"]["type"] == "string"
    assert listed["echo"]["inputSchema"]["required"] == ["text"]
    assert listed["echo"]["annotations"] is None
    assert (listed["echo"]["risk"], listed["echo"]["claimedRisk"]) == ("destructive",) * 2
    assert listed["peek"]["annotations"] == {"readOnlyHint": True}
    assert (listed["peek"]["risk"], listed["peek"]["claimedRisk"]) == ("read", "read")
    assert listed["note"]["annotations"] == {"readOnlyHint": False, "destructiveHint": False}
    assert (listed["note"]["risk"], listed["note"]["claimedRisk"]) == ("effect", "effect")
    # What a server claims is shown, but only the configuration rates a tool.
    unrated = {tool["name"]: tool for tool in list_server_tools(workspace, "mcp://sub")}
    assert unrated["peek"]["annotations"] == {"readOnlyHint": True}
    assert (unrated["peek"]["risk"], unrated["peek"]["claimedRisk"]) == ("destructive", "read")


def test_list_tools_on_a_running_mcp_tools(tools: McpTools) -> None:
    assert [tool["name"] for tool in tools.list_tools(ECHO)] == ALL_TOOLS


# ---------------------------------------------------------------------- Streamable HTTP


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The echo server in Streamable HTTP mode, as a child process on a free local port."""
    port = free_port()
    log = tmp_path_factory.mktemp("mcp-http") / "server.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [PYTHON, ECHO_SERVER, "--http", str(port)], stdout=output, stderr=output
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                pytest.fail(f"the HTTP MCP server exited early:\n{log.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"the HTTP MCP server did not listen:\n{log.read_text()}")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def http_tools(http_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpTools]:
    root = tmp_path_factory.mktemp("mcp-http-workspace")
    write_config(
        root,
        {
            "web": {
                "url": http_url,
                "headers": {"X-Token": "Bearer ${MCP_TEST_TOKEN}"},
                "startTimeout": 120,
                "tools": RATINGS,
            },
            "web/typed": {"type": "http", "url": http_url, "startTimeout": 120},
        },
    )
    with McpTools(root, environ=ENVIRON, approve_start=approve_every_start) as shared:
        yield shared


def test_http_server_call_and_direct_forms(http_tools: McpTools) -> None:
    assert call(http_tools, "mcp://web", "echo", {"text": "over http"})["text"] == "over http"
    result = call(http_tools, "mcp://web", "call", {"tool": "add", "args": {"a": 4, "b": 5}})
    assert result["structured"] == {"sum": 9}
    assert call(http_tools, "mcp://web", "fail")["ok"] is False


def test_http_headers_expand_variables(http_tools: McpTools) -> None:
    result = call(http_tools, "mcp://web", "header", {"name": "x-token"})
    assert result["text"] == f"Bearer {TOKEN}"


def test_http_transport_can_be_given_as_claude_codes_type(http_tools: McpTools) -> None:
    assert call(http_tools, "mcp://web/typed", "echo", {"text": "typed"})["text"] == "typed"
    assert call(http_tools, "mcp://web/typed", "header", {"name": "x-token"})["text"] == "<none>"


def test_http_risk_from_the_configuration(http_tools: McpTools) -> None:
    assert http_tools.risk(ToolCall("Web", "mcp://web", "peek", [])) == "read"
    assert http_tools.risk(ToolCall("Web", "mcp://web", "wipe", [])) == "destructive"


# ---------------------------------------------------------------------- end to end

PROGRAM = """import llm Model from "openai://gpt-4.1-mini"
import tool Echo from "mcp://tools/echo"

main agent Calculator {
    model Model
    role "calculator"
    description "Adds numbers with an MCP tool."

    main func() {
        total = Echo.add({ a: 2, b: 3 })
        said = Echo.call({ tool: "echo", args: { text: "hi" } })
        return { sum: total.structured.sum, ok: total.ok, said: said.text }
    }
}
"""


def test_a_program_calls_an_mcp_tool_end_to_end(tools: McpTools, workspace: Path) -> None:
    program = agentscript.load_source(PROGRAM, path=workspace / "calc.as")
    config = agentscript.RunConfig(model="mock", tools=ToolRegistry({"mcp": tools}))
    result = agentscript.run(program, {}, config)
    assert result.value == {"sum": 5, "ok": True, "said": "hi"}
    events = [event["data"] for event in result.trace if event["kind"] == "tool"]
    assert [(e["tool"], e["method"], e["scheme"], e["uri"]) for e in events] == [
        ("Echo", "add", "mcp", ECHO),
        ("Echo", "call", "mcp", ECHO),
    ]
    assert events[0]["args"] == [{"a": 2, "b": 3}]
    assert events[0]["result"]["structured"] == {"sum": 5}


def test_a_failing_mcp_call_is_wrapped_with_the_tool_and_uri(
    tools: McpTools, workspace: Path
) -> None:
    source = PROGRAM.replace('tool: "echo"', 'tool: "nope"')
    program = agentscript.load_source(source, path=workspace / "calc.as")
    config = agentscript.RunConfig(model="mock", tools=ToolRegistry({"mcp": tools}))
    with pytest.raises(agentscript.AgentScriptError) as raised:
        agentscript.run(program, {}, config)
    assert (
        "Tool Echo.call (mcp://tools/echo) failed: MCP server 'tools/echo' has no tool 'nope'"
        in (str(raised.value))
    )
