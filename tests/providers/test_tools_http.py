"""`http://` and `https://` tools against real local HTTP servers (pytest-httpserver on 127.0.0.1)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug.wrappers import Request, Response

import agentscript
from agentscript.providers.tools.http import MAX_BODY_BYTES, HttpTools
from agentscript.providers.tools.registry import ToolRegistry
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall
from local_http import LocalHTTPServer
from timings import without_timings


def start_server() -> HTTPServer:
    server = LocalHTTPServer(host="127.0.0.1", port=0)
    server.start()
    return server


@pytest.fixture
def server() -> Iterator[HTTPServer]:
    started = start_server()
    yield started
    started.clear()
    started.stop()


@pytest.fixture
def other_server() -> Iterator[HTTPServer]:
    started = start_server()
    yield started
    started.clear()
    started.stop()


@pytest.fixture
def tools() -> Iterator[HttpTools]:
    created = HttpTools()
    yield created
    created.close()


def origin_of(server: HTTPServer) -> str:
    return f"http://127.0.0.1:{server.port}"


def call(tools: HttpTools, uri: str, method: str, *args: Any) -> Any:
    return tools.call(ToolCall("Api", uri, method, list(args)))


def redirect(location: str, status: int = 302) -> Response:
    return Response("", status=status, headers={"Location": location})


def free_port() -> int:
    """A port nothing listens on: bound once by the OS, then released."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# ----------------------------------------------------------------------------- verbs and results


@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete", "options", "purge"])
def test_method_name_upper_cased_is_the_http_verb(
    server: HTTPServer, tools: HttpTools, method: str
) -> None:
    server.expect_request("/items", method=method.upper()).respond_with_data("done")

    result = call(tools, origin_of(server), method, {"url": "/items"})

    assert result == {"ok": True, "status": 200, "body": "done", "json": None}
    assert [request.method for request, _ in server.log] == [method.upper()]


def test_head_answers_with_an_empty_body(server: HTTPServer, tools: HttpTools) -> None:
    server.expect_request("/items", method="HEAD").respond_with_data("ignored", status=204)

    result = call(tools, origin_of(server), "head", {"url": "/items"})

    assert result == {"ok": True, "status": 204, "body": "", "json": None}


def test_json_response_is_parsed_and_kept_as_text(server: HTTPServer, tools: HttpTools) -> None:
    server.expect_request("/users/1").respond_with_json({"id": 1, "name": "Ada", "tags": []})

    result = call(tools, origin_of(server), "get", {"url": "/users/1"})

    assert result["ok"] is True
    assert result["status"] == 200
    assert json.loads(result["body"]) == {"id": 1, "name": "Ada", "tags": []}
    assert result["json"] == {"id": 1, "name": "Ada", "tags": []}


def test_text_response_has_null_json(server: HTTPServer, tools: HttpTools) -> None:
    server.expect_request("/hello").respond_with_data("hello, world", content_type="text/plain")

    result = call(tools, origin_of(server), "get", {"url": "/hello"})

    assert result == {"ok": True, "status": 200, "body": "hello, world", "json": None}


def test_body_is_decoded_in_its_declared_charset(server: HTTPServer, tools: HttpTools) -> None:
    server.expect_request("/latin").respond_with_data(
        "café".encode("latin-1"), content_type="text/plain; charset=iso-8859-1"
    )

    assert call(tools, origin_of(server), "get", {"url": "/latin"})["body"] == "café"


@pytest.mark.parametrize("status", [301, 404, 500])
def test_non_2xx_status_is_ok_false_not_an_error(
    server: HTTPServer, tools: HttpTools, status: int
) -> None:
    # A 301 without Location is an answer, not a redirect to follow.
    server.expect_request("/missing").respond_with_json({"error": "nope"}, status=status)

    result = call(tools, origin_of(server), "get", {"url": "/missing"})

    assert result["ok"] is False
    assert result["status"] == status
    assert result["json"] == {"error": "nope"}


# ----------------------------------------------------------------------------- what is sent


def test_headers_are_sent_as_given(server: HTTPServer, tools: HttpTools) -> None:
    server.expect_request("/me").respond_with_data("ok")

    call(
        tools,
        origin_of(server),
        "get",
        {"url": "/me", "headers": {"Authorization": "Bearer abc123", "X-Request-Id": "r-7"}},
    )

    request, _ = server.log[0]
    assert request.headers["Authorization"] == "Bearer abc123"
    assert request.headers["X-Request-Id"] == "r-7"


def test_string_body_is_sent_as_is_without_a_content_type(
    server: HTTPServer, tools: HttpTools
) -> None:
    server.expect_request("/notes", method="POST").respond_with_data("created", status=201)

    result = call(tools, origin_of(server), "post", {"url": "/notes", "body": "plain {not json"})

    request, _ = server.log[0]
    assert request.get_data() == b"plain {not json"
    assert "Content-Type" not in request.headers
    assert result["status"] == 201


def test_other_bodies_are_sent_as_json_text_without_a_content_type(
    server: HTTPServer, tools: HttpTools
) -> None:
    server.expect_request("/users", method="POST").respond_with_data("ok")

    body = {"name": "Zoë", "age": 36, "admin": False, "tags": ["a", None]}
    call(tools, origin_of(server), "post", {"url": "/users", "body": body})

    request, _ = server.log[0]
    assert request.get_data() == '{"name":"Zoë","age":36,"admin":false,"tags":["a",null]}'.encode()
    assert "Content-Type" not in request.headers


def test_a_content_type_the_program_gives_is_sent(server: HTTPServer, tools: HttpTools) -> None:
    server.expect_request("/users", method="PUT").respond_with_data("ok")

    call(
        tools,
        origin_of(server),
        "put",
        {"url": "/users", "body": [1, 2], "headers": {"Content-Type": "application/json"}},
    )

    request, _ = server.log[0]
    assert request.headers["Content-Type"] == "application/json"
    assert request.get_json() == [1, 2]


def test_cookies_from_one_answer_are_not_sent_with_the_next_call(
    server: HTTPServer, tools: HttpTools
) -> None:
    server.expect_request("/login").respond_with_data(
        "ok", headers={"Set-Cookie": "session=s3cr3t; Path=/"}
    )
    server.expect_request("/me").respond_with_data("ok")

    call(tools, origin_of(server), "post", {"url": "/login"})
    call(tools, origin_of(server), "get", {"url": "/me"})

    second, _ = server.log[1]
    assert "Cookie" not in second.headers


# ----------------------------------------------------------------------------- URLs and origins


def test_relative_urls_resolve_against_the_import_uri(server: HTTPServer, tools: HttpTools) -> None:
    server.expect_request("/v1/users/1").respond_with_data("relative")
    server.expect_request("/users/1").respond_with_data("rooted")
    base = origin_of(server) + "/v1/"

    assert call(tools, base, "get", {"url": "users/1"})["body"] == "relative"
    assert call(tools, base, "get", {"url": "/users/1"})["body"] == "rooted"


def test_absolute_url_on_the_import_origin_is_allowed(server: HTTPServer, tools: HttpTools) -> None:
    server.expect_request("/users", query_string="page=2").respond_with_data("page two")

    result = call(tools, origin_of(server), "get", {"url": origin_of(server) + "/users?page=2"})

    assert result["body"] == "page two"


@pytest.mark.parametrize(
    ("url", "target"),
    [
        ("http://localhost:{port}/users", "http://localhost:{port}"),
        ("https://127.0.0.1:{port}/users", "https://127.0.0.1:{port}"),
        ("//example.com/users", "http://example.com"),
        ("http://127.0.0.1:1/users", "http://127.0.0.1:1"),
    ],
)
def test_url_on_another_origin_is_refused_before_any_request(
    server: HTTPServer, tools: HttpTools, url: str, target: str
) -> None:
    port = server.port
    with pytest.raises(ExecutionError) as raised:
        call(tools, origin_of(server), "get", {"url": url.format(port=port)})

    assert raised.value.bare_message == (
        f"HTTP tool URL origin '{target.format(port=port)}' does not match import origin "
        f"'http://127.0.0.1:{port}'"
    )
    assert server.log == []


def test_default_port_is_the_same_origin() -> None:
    tools = HttpTools()
    # Refused for the verb, which is checked after the origin: so the origin check passed.
    with pytest.raises(ExecutionError, match="HTTP method 'CONNECT' is not allowed"):
        call(tools, "https://api.example.com", "connect", {"url": "https://api.example.com:443/"})


def test_invalid_import_uri_and_url_are_clear_errors(tools: HttpTools) -> None:
    with pytest.raises(ExecutionError) as raised:
        call(tools, "http://", "get", {"url": "/x"})
    assert raised.value.bare_message == "Invalid HTTP tool URI 'http://'"

    with pytest.raises(ExecutionError) as raised:
        call(tools, "http://127.0.0.1:8080", "get", {"url": "http://127.0.0.1:99999/"})
    assert raised.value.bare_message == "Invalid HTTP tool URL 'http://127.0.0.1:99999/'"


# ----------------------------------------------------------------------------- redirects


def test_redirects_within_the_origin_are_followed(server: HTTPServer, tools: HttpTools) -> None:
    server.expect_request("/old").respond_with_response(redirect("/middle", 301))
    server.expect_request("/middle").respond_with_response(redirect(origin_of(server) + "/new"))
    server.expect_request("/new").respond_with_json({"moved": True})

    result = call(tools, origin_of(server), "get", {"url": "/old"})

    assert result["json"] == {"moved": True}
    assert [request.path for request, _ in server.log] == ["/old", "/middle", "/new"]


def test_303_after_post_becomes_a_get_without_body(server: HTTPServer, tools: HttpTools) -> None:
    server.expect_request("/submit", method="POST").respond_with_response(redirect("/done", 303))
    server.expect_request("/done", method="GET").respond_with_data("thanks")

    result = call(
        tools,
        origin_of(server),
        "post",
        {"url": "/submit", "body": "a=1", "headers": {"Content-Type": "text/plain", "X-K": "v"}},
    )

    assert result["body"] == "thanks"
    followed, _ = server.log[1]
    assert followed.method == "GET"
    assert followed.get_data() == b""
    assert "Content-Type" not in followed.headers
    assert followed.headers["X-K"] == "v"


def test_307_repeats_the_request_with_its_body(server: HTTPServer, tools: HttpTools) -> None:
    server.expect_request("/a", method="PUT").respond_with_response(redirect("/b", 307))
    server.expect_request("/b", method="PUT").respond_with_data("stored")

    result = call(tools, origin_of(server), "put", {"url": "/a", "body": {"x": 1}})

    assert result["body"] == "stored"
    followed, _ = server.log[1]
    assert followed.get_data() == b'{"x":1}'


def test_redirect_to_another_origin_is_refused(
    server: HTTPServer, other_server: HTTPServer, tools: HttpTools
) -> None:
    elsewhere = origin_of(other_server) + "/steal"
    server.expect_request("/go").respond_with_response(redirect(elsewhere))
    other_server.expect_request("/steal").respond_with_data("should not be reached")

    with pytest.raises(ExecutionError) as raised:
        call(tools, origin_of(server), "get", {"url": "/go", "headers": {"Authorization": "t"}})

    assert raised.value.bare_message == (
        f"HTTP GET {origin_of(server)}/go was redirected to '{elsewhere}' on another origin; "
        f"only redirects within '{origin_of(server)}' are followed"
    )
    assert other_server.log == []


def test_at_most_five_redirects_are_followed(server: HTTPServer, tools: HttpTools) -> None:
    for hop in range(6):
        server.expect_request(f"/hop{hop}").respond_with_response(redirect(f"/hop{hop + 1}"))
    server.expect_request("/hop6").respond_with_data("too far")
    server.expect_request("/short5").respond_with_data("arrived")
    for hop in range(5):
        server.expect_request(f"/short{hop}").respond_with_response(redirect(f"/short{hop + 1}"))

    assert call(tools, origin_of(server), "get", {"url": "/short0"})["body"] == "arrived"

    server.clear_log()
    with pytest.raises(ExecutionError) as raised:
        call(tools, origin_of(server), "get", {"url": "/hop0"})

    assert raised.value.bare_message == (
        f"HTTP GET {origin_of(server)}/hop0 was redirected more than 5 times"
    )
    assert [request.path for request, _ in server.log] == [f"/hop{hop}" for hop in range(6)]


# ----------------------------------------------------------------------------- limits and failures


def test_a_body_of_exactly_one_mebibyte_is_read(server: HTTPServer, tools: HttpTools) -> None:
    server.expect_request("/big").respond_with_data(b"x" * MAX_BODY_BYTES)

    result = call(tools, origin_of(server), "get", {"url": "/big"})

    assert len(result["body"]) == MAX_BODY_BYTES


def test_a_larger_declared_body_is_refused(server: HTTPServer, tools: HttpTools) -> None:
    server.expect_request("/huge").respond_with_data(b"x" * (MAX_BODY_BYTES + 1))

    with pytest.raises(ExecutionError) as raised:
        call(tools, origin_of(server), "get", {"url": "/huge"})

    assert raised.value.bare_message == (
        f"HTTP GET {origin_of(server)}/huge response body is larger than the 1 MiB cap "
        "(1048576 bytes) of the HTTP tool"
    )


def test_a_declared_length_over_the_cap_is_refused_before_reading(
    server: HTTPServer, tools: HttpTools
) -> None:
    # The server announces more than the cap but sends one byte: only the announcement is judged.
    announced = Response([b"x"], headers={"Content-Length": str(MAX_BODY_BYTES + 1)})
    server.expect_request("/announced").respond_with_response(announced)

    with pytest.raises(ExecutionError) as raised:
        call(tools, origin_of(server), "get", {"url": "/announced"})

    assert raised.value.bare_message.endswith(
        "larger than the 1 MiB cap (1048576 bytes) of the HTTP tool"
    )


def test_a_larger_streamed_body_is_refused(server: HTTPServer, tools: HttpTools) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(20):
            yield b"y" * 65_536

    # No Content-Length: the cap must hold while reading.
    server.expect_request("/stream").respond_with_response(Response(chunks()))

    with pytest.raises(ExecutionError, match=r"larger than the 1 MiB cap"):
        call(tools, origin_of(server), "get", {"url": "/stream"})


def test_a_slow_server_times_out(server: HTTPServer, tools: HttpTools) -> None:
    release = threading.Event()

    def stall(request: Request) -> Response:
        release.wait(10)
        return Response("late")

    server.expect_request("/slow").respond_with_handler(stall)
    try:
        with pytest.raises(ExecutionError) as raised:
            call(tools, origin_of(server), "get", {"url": "/slow", "timeout": 200})
    finally:
        release.set()

    assert raised.value.bare_message == (f"HTTP GET {origin_of(server)}/slow timed out after 200ms")


def test_an_unreachable_server_is_a_clear_error(tools: HttpTools) -> None:
    uri = f"http://127.0.0.1:{free_port()}"

    with pytest.raises(ExecutionError) as raised:
        call(tools, uri, "post", {"url": "/x", "body": "hi"})

    assert raised.value.bare_message.startswith(f"HTTP POST {uri}/x failed: could not connect (")


def test_credentials_in_the_url_stay_out_of_messages(tools: HttpTools) -> None:
    uri = f"http://ada:hunter2@127.0.0.1:{free_port()}"

    with pytest.raises(ExecutionError) as raised:
        call(tools, uri, "get", {"url": "/x"})

    assert "hunter2" not in raised.value.bare_message
    assert "127.0.0.1" in raised.value.bare_message


# ----------------------------------------------------------------------------- arguments and risk


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "Http.get expects one json object argument"),
        (["/users"], "Http.get expects one json object argument"),
        ([{"url": "/a"}, {"url": "/b"}], "Http.get expects one json object argument"),
        ([{}], "Http.url is required"),
        ([{"url": ""}], "Http.url is required"),
        ([{"url": 7}], "Http.url is required"),
        ([{"url": "/a", "timeout": 0}], "Expected a positive integer, got 0"),
        ([{"url": "/a", "timeout": 1.5}], "Expected a positive integer, got 1.5"),
        ([{"url": "/a", "timeout": "5"}], 'Expected a positive integer, got "5"'),
        ([{"url": "/a", "headers": "x"}], 'Http.headers must be an object of strings, got "x"'),
        ([{"url": "/a", "headers": {"X-N": 1}}], "Http.headers.X-N must be a string, got 1"),
        (
            [{"url": "/a", "headers": {"X-N": "日本"}}],
            "Http.headers.X-N cannot be sent: header names and values are Latin-1 text",
        ),
    ],
)
def test_argument_errors_use_the_original_messages(
    server: HTTPServer, tools: HttpTools, args: list[Any], message: str
) -> None:
    with pytest.raises(ExecutionError) as raised:
        call(tools, origin_of(server), "get", *args)

    assert raised.value.bare_message == message
    assert server.log == []


@pytest.mark.parametrize(
    ("method", "risk"),
    [
        ("get", "read"),
        ("HEAD", "read"),
        ("options", "read"),
        ("post", "effect"),
        ("put", "effect"),
        ("patch", "effect"),
        ("delete", "effect"),
        ("purge", "effect"),
    ],
)
def test_risk_follows_the_verb(tools: HttpTools, method: str, risk: str) -> None:
    request = ToolCall("Api", "https://api.example.com", method, [{"url": "/x"}])

    assert tools.risk(request) == risk


def test_close_can_be_called_for_each_scheme(server: HTTPServer) -> None:
    tools = HttpTools()
    server.expect_request("/x").respond_with_data("ok")
    call(tools, origin_of(server), "get", {"url": "/x"})

    registry = ToolRegistry({"http": tools, "https": tools})
    registry.close()
    registry.close()


# ----------------------------------------------------------------------------- end to end


PROGRAM = """
import tool Api from "{origin}/api/"

main agent Client {{
    main func() {{
        created = Api.post({{ url: "users", body: {{ name: "Ada" }}, headers: {{ "X-Key": "k1" }} }})
        return {{ ok: created.ok, id: created.json.id }}
    }}
}}
"""


def test_a_program_calls_the_api_and_traces_the_call(server: HTTPServer, tools: HttpTools) -> None:
    server.expect_request("/api/users", method="POST").respond_with_data(
        '{"id": 42}', status=201, content_type="application/json"
    )
    source = PROGRAM.format(origin=origin_of(server))
    registry = ToolRegistry({"http": tools, "https": tools})

    result = agentscript.run(
        agentscript.load_source(source), {}, agentscript.RunConfig(model="mock", tools=registry)
    )

    assert result.value == {"ok": True, "id": 42}
    request, _ = server.log[0]
    assert json.loads(request.get_data()) == {"name": "Ada"}
    assert request.headers["X-Key"] == "k1"
    tool_events = [without_timings(e["data"]) for e in result.trace if e["kind"] == "tool"]
    assert tool_events == [
        {
            "tool": "Api",
            "method": "post",
            "scheme": "http",
            "uri": origin_of(server) + "/api/",
            "args": [{"url": "users", "body": {"name": "Ada"}, "headers": {"X-Key": "k1"}}],
            "result": {"ok": True, "status": 201, "body": '{"id": 42}', "json": {"id": 42}},
            "effects": None,
        }
    ]


def test_a_failing_call_names_the_tool_and_the_reason(server: HTTPServer, tools: HttpTools) -> None:
    source = PROGRAM.format(origin=origin_of(server)).replace('"users"', '"http://localhost/x"')
    registry = ToolRegistry({"http": tools, "https": tools})

    with pytest.raises(agentscript.ExecutionError) as raised:
        agentscript.run(
            agentscript.load_source(source), {}, agentscript.RunConfig(model="mock", tools=registry)
        )

    assert raised.value.bare_message == (
        f"Tool Api.post ({origin_of(server)}/api/) failed: HTTP tool URL origin "
        f"'http://localhost' does not match import origin '{origin_of(server)}'"
    )
