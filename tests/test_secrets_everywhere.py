"""One redaction set per run: a secret the run learns (an allowed environment secret, a provider
key, a password in an import URI) never lands in clear, percent-encoded or JSON-escaped form in
anything the run writes — trace, recording, journal, task graph, errors, memory — and a program
cannot launder it through the memory service into a later run."""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus, unquote

import pytest
from pytest_httpserver import HTTPServer
from werkzeug.wrappers import Request, Response

import agentscript
from agentscript.cli.main import main
from agentscript.memory.errors import MemoryServiceError
from agentscript.memory.service import MemoryService
from agentscript.providers.tools.approvals import Answer, ApprovalRequest
from agentscript.runtime.secrets import SecretSet
from agentscript.runtime.trace import Tracer
from local_http import LocalHTTPServer
from timings import without_timings

# Quotes, a backslash, a slash, a plus, a space and a non-ASCII letter: every escaping differs.
TOKEN = 'ghp_Tok"en\\é/+ 0123456789abcdef'
PROVIDER_KEY = "sk-test-provider-key-0123456789"
URI_PASSWORD = "pw-9f8e7d6c"
# What an HTTP client sends for robot:URI_PASSWORD in an `Authorization: Basic` header.
BASIC_TOKEN = base64.b64encode(f"robot:{URI_PASSWORD}".encode()).decode()


def forms(secret: str) -> list[str]:
    """How the secret would look if it leaked: as is, percent-encoded, JSON-escaped."""
    escaped = json.dumps(secret)[1:-1]
    return [
        secret,
        quote(secret, safe=""),
        quote_plus(secret),
        escaped,
        json.dumps(secret, ensure_ascii=False)[1:-1],
        json.dumps(escaped)[1:-1],
    ]


def leaks(text: str, secret: str) -> list[str]:
    return [form for form in forms(secret) if form in text]


def every_file_text(root: Path) -> str:
    """Everything the run stored under `root` (its program aside): plain files as text, SQLite
    databases as their dump."""
    texts: list[str] = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.name.endswith(("-wal", "-shm", ".lock", ".as")):
            continue
        if path.read_bytes()[:16] == b"SQLite format 3\x00":
            with sqlite3.connect(path) as connection:
                texts.extend(connection.iterdump())
        else:
            texts.append(path.read_text(errors="replace"))
    return "\n".join(texts)


@pytest.fixture
def echo_server() -> Iterator[HTTPServer]:
    """Answers with the request URL as sent (percent-encoded), the query decoded and JSON-
    escaped in the body, and the token as an object key."""
    server = LocalHTTPServer(host="127.0.0.1", port=0)
    server.start()

    def echo(request: Request) -> Response:
        seen = unquote(request.query_string.decode().removeprefix("t="))
        # The Authorization header too: the Basic-auth form of the URI's password.
        auth = request.headers.get("Authorization", "")
        body = json.dumps({"url": request.url, "seen": seen, seen: 1, "auth": auth})
        return Response(body, content_type="application/json")

    server.expect_request("/echo").respond_with_handler(echo)
    yield server
    server.clear()
    server.stop()


def leaking_program(port: int) -> str:
    return f"""
import llm Model from "openai://gpt-4.1-mini"
import tool Env from "env://process"
import tool File from "file://workspace"
import tool Api from "http://robot:{URI_PASSWORD}@127.0.0.1:{port}"
import memory Notes from "file://notes.jsonl"

main agent Leaker {{
    model Model
    role "tester"
    description "Tries to leak a secret."
    main func() {{
        token = Env.get({{ name: "GITHUB_TOKEN" }})
        echoed = Api.get({{ url: "/echo?t=" + token }})
        Notes.add({{ text: "remember " + token, echoed: echoed.json }})
        use token as "token"
        generate({{ input: "Summarise the token " + token }}) -> {{ summary }}
        File.read({{ path: "missing/" + token }})
    }}
}}
"""


def test_no_secret_lands_in_anything_a_run_writes(tmp_path: Path, echo_server: HTTPServer) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    program = workspace / "leak.as"
    program.write_text(leaking_program(echo_server.port))
    config = agentscript.RunConfig(
        model="mock",
        record=tmp_path / "recording.jsonl",
        environ={"GITHUB_TOKEN": TOKEN, "OPENAI_API_KEY": PROVIDER_KEY},
        env_allow=["GITHUB_TOKEN"],
        approve="auto",
        memory_db=tmp_path / "memory.db",
    )
    with pytest.raises(agentscript.ExecutionError) as failed:
        agentscript.run(program, {}, config)
    assert failed.value.journal.wait(30) == []

    assert "File not found: missing/[REDACTED]" in failed.value.located()
    assert "robot:***@" in json.dumps(failed.value.trace)
    tool_events = [e["data"] for e in failed.value.trace if e["kind"] == "tool"]
    http_result = tool_events[1]["result"]
    assert "[REDACTED]" in http_result["json"]  # the token as an object key
    assert http_result["json"]["seen"] == "[REDACTED]"
    stored = every_file_text(tmp_path)
    assert "[REDACTED]" in (workspace / "notes.jsonl").read_text()
    assert http_result["json"]["auth"] == "Basic [REDACTED]"  # it was sent, then hidden
    for secret in (TOKEN, URI_PASSWORD, BASIC_TOKEN):
        assert leaks(json.dumps(failed.value.trace), secret) == []
        assert leaks(failed.value.located(), secret) == []
        assert leaks(stored, secret) == [], f"{secret!r} stored under {tmp_path}"


def test_the_recording_never_holds_an_allowed_secret_or_a_provider_key(tmp_path: Path) -> None:
    program = tmp_path / "p.as"
    program.write_text(
        """
import llm Model from "openai://gpt-4.1-mini"
import tool Env from "env://process"

main agent Asker {
    model Model
    role "tester"
    description "Tries to leak a secret."
    main func() {
        token = Env.get({ name: "GITHUB_TOKEN" })
        key = Env.get({ name: "OPENAI_API_KEY" })
        use token as "token"
        use key as "key"
        generate({ input: "Say hello" }) -> { greeting }
    }
}
"""
    )
    recording = tmp_path / "recording.jsonl"
    agentscript.run(
        program,
        {},
        agentscript.RunConfig(
            model="mock",
            record=recording,
            environ={"GITHUB_TOKEN": TOKEN, "OPENAI_API_KEY": PROVIDER_KEY},
            env_allow=["GITHUB_TOKEN", "OPENAI_API_KEY"],
            journal=False,
        ),
    )
    text = recording.read_text()
    assert "[REDACTED]" in text
    assert leaks(text, TOKEN) == [] and leaks(text, PROVIDER_KEY) == []
    # The redacted recording still answers the same run.
    replayed = agentscript.run(
        program,
        {},
        agentscript.RunConfig(
            replay=recording,
            environ={"GITHUB_TOKEN": TOKEN, "OPENAI_API_KEY": PROVIDER_KEY},
            env_allow=["GITHUB_TOKEN", "OPENAI_API_KEY"],
        ),
    )
    assert set(replayed.value) == {"greeting"}


def test_a_program_cannot_launder_a_secret_through_the_memory_service(tmp_path: Path) -> None:
    program = tmp_path / "p.as"
    program.write_text(
        """
import tool Env from "env://process"
import tool Memory from "memory://workspace"

main agent Launderer {
    main func() {
        token = Env.get({ name: "GITHUB_TOKEN" })
        Memory.remember({ text: "the deploy token is " + token })
    }
}
"""
    )
    memory_db = tmp_path / "memory.db"
    config = agentscript.RunConfig(
        model="mock",
        environ={"GITHUB_TOKEN": TOKEN},
        env_allow=["GITHUB_TOKEN"],
        approve="auto",
        memory_db=memory_db,
        journal=False,
    )
    with pytest.raises(agentscript.ExecutionError, match="credentials are never remembered"):
        agentscript.run(program, {}, config)
    with MemoryService.open(tmp_path, database=memory_db) as service:
        assert service.stats()["active"] == 0


def test_the_memory_service_refuses_secrets_of_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "live/key+7f3a9b2c1d"
    monkeypatch.setenv("DEPLOY_APIKEYS", key)
    # Too short, a plain word, a path: pointers and settings, not credentials.
    monkeypatch.setenv("RANDOM_SEED", "42")
    monkeypatch.setenv("AUTH_MODE", "disabled")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/ssh-agent.sock")
    with MemoryService.open(tmp_path, database=tmp_path / "m.db") as service:
        for text in (f"use {key}", f"see https://x.example/?k={quote(key, safe='')}"):
            with pytest.raises(MemoryServiceError) as refused:
                service.remember(text)
            assert refused.value.code == "contains_secret" and refused.value.field == "text"
        with pytest.raises(MemoryServiceError, match="never remembered"):
            service.remember("notes", tags=[key])
        created = service.remember("the answer is 42; auth disabled; see /tmp/ssh-agent.sock")
        with pytest.raises(MemoryServiceError, match="never remembered"):
            service.update(created["id"], text=f"now {key}")


def test_the_set_hides_every_form_in_keys_and_values() -> None:
    secrets = SecretSet([TOKEN, "abc"])  # "abc" is too short to be a secret
    data = {f"k-{quote(TOKEN, safe='')}": [json.dumps({"v": TOKEN}), f"x {TOKEN} y"], "abc": 1}
    scrubbed = secrets.scrub(data)
    assert scrubbed == {
        "k-[REDACTED]": ['{"v": "[REDACTED]"}', "x [REDACTED] y"],
        "abc": 1,
    }
    assert secrets.found_in({"a": [quote_plus(TOKEN)]}) and not secrets.found_in({"abc": "abc"})


def test_the_tracer_scrubs_object_keys_and_late_secrets() -> None:
    tracer = Tracer()
    tracer.emit("tool", {"result": {TOKEN: "value"}})
    tracer.redact(TOKEN)
    tracer.emit("tool", {"result": {"k": TOKEN}})
    assert leaks(json.dumps(tracer.to_json()), TOKEN) == []


def test_the_approval_question_never_shows_a_uri_password(tmp_path: Path) -> None:
    program = tmp_path / "p.as"
    program.write_text(
        f"""
import tool Api from "http://robot:{URI_PASSWORD}@127.0.0.1:9"

main agent Caller {{
    main func() {{
        Api.post({{ url: "/x", body: "hi" }})
    }}
}}
"""
    )
    asked: list[ApprovalRequest] = []

    def refuse(request: ApprovalRequest) -> Answer:
        asked.append(request)
        return "no"

    config = agentscript.RunConfig(model="mock", ask_user=refuse, journal=False)
    with pytest.raises(agentscript.ExecutionError) as refused:
        agentscript.run(program, {}, config)
    assert [request.uri for request in asked] == ["http://robot:***@127.0.0.1:9"]
    assert leaks(json.dumps(refused.value.trace) + refused.value.located(), URI_PASSWORD) == []


def test_the_cli_neither_remembers_nor_imports_a_known_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "live/key+7f3a9b2c1d"
    (tmp_path / "project").mkdir()
    where = ["--workspace", str(tmp_path / "project"), "--db", str(tmp_path / "m.db")]
    assert main(["memory", "remember", "Deploys go through the release branch", *where]) == 0
    capsys.readouterr()
    assert main(["memory", "export", *where]) == 0
    exported = json.loads(capsys.readouterr().out)
    monkeypatch.setenv("DEPLOY_APIKEYS", key)
    assert main(["memory", "remember", f"the key is {key}", *where]) == 1
    assert "credentials are never remembered" in capsys.readouterr().err
    source = tmp_path / "import.jsonl"
    source.write_text(json.dumps({**exported, "body": f"the key is {key}"}) + "\n")
    copy = ["--workspace", str(tmp_path / "project"), "--db", str(tmp_path / "copy.db")]
    assert main(["memory", "import", str(source), *copy]) == 1
    assert capsys.readouterr().err == (
        f"{source}:1: text contains a secret (a provider key, an allowed environment secret or "
        "a password from a URI): credentials are never remembered; leave it out and note where "
        "it is kept instead; nothing was imported\n"
    )


def test_a_run_with_secrets_replays_from_its_redacted_journal(
    tmp_path: Path, echo_server: HTTPServer
) -> None:
    """The journal keeps secrets redacted, so a replay compares what the run asks for in the
    same redacted form; a read whose answer lost a secret to redaction is read again."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    program = workspace / "leak.as"
    program.write_text(leaking_program(echo_server.port))
    options: dict[str, Any] = {
        "model": "mock",
        "environ": {"GITHUB_TOKEN": TOKEN, "OPENAI_API_KEY": PROVIDER_KEY},
        "env_allow": ["GITHUB_TOKEN"],
        "approve": "auto",
        "memory_db": tmp_path / "memory.db",
    }
    with pytest.raises(agentscript.ExecutionError) as failed:
        agentscript.run(program, {}, agentscript.RunConfig(**options))
    journal = failed.value.journal
    assert journal.wait(30) == []
    served = len(echo_server.log)

    with pytest.raises(agentscript.ExecutionError) as replayed:
        agentscript.run(program, {}, agentscript.RunConfig(**{**options, "replay": journal.run_id}))

    assert replayed.value.located() == failed.value.located()
    assert without_timings(replayed.value.trace) == without_timings(failed.value.trace)
    assert len(echo_server.log) == served  # the request with the token was not sent again
