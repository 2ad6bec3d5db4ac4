"""`env://` tools: reading variables, the allow-list, refusing secrets and redacting allowed ones."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

import pytest

import agentscript
from agentscript.providers.tools.base import Risk
from agentscript.providers.tools.env import EnvTools
from agentscript.providers.tools.registry import ToolRegistry
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall

SECRET = "sk-live-0123456789abcdef"
ENVIRON = {
    "HOME": "/home/ada",
    "EMPTY": "",
    "OPENAI_API_KEY": SECRET,
    "DATABASE_URL": "postgres://ada:hunter2@db.internal:5432/app",
    "PUBLIC_URL": "https://example.com/app",
}


def get(tools: EnvTools, *args: Any, method: str = "get") -> tuple[Any, list[str]]:
    """The call's result and the secrets it registered."""
    secrets: list[str] = []
    request = ToolCall("Env", "env://process", method, list(args), on_secret=secrets.append)
    return tools.call(request), secrets


def refusal(tools: EnvTools, name: str) -> str:
    with pytest.raises(ExecutionError) as raised:
        get(tools, {"name": name})
    return raised.value.bare_message


# ----------------------------------------------------------------------------- reading


def test_get_returns_the_value_or_null_when_unset() -> None:
    tools = EnvTools(ENVIRON)

    assert get(tools, {"name": "HOME"}) == ("/home/ada", [])
    assert get(tools, {"name": "EMPTY"}) == ("", [])
    assert get(tools, {"name": "NOT_SET"}) == (None, [])


def test_the_process_environment_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSCRIPT_TEST_COLOUR", "teal")

    assert get(EnvTools(), {"name": "AGENTSCRIPT_TEST_COLOUR"}) == ("teal", [])


def test_risk_is_always_read() -> None:
    tools = EnvTools(ENVIRON)
    for method in ("get", "set"):
        assert tools.risk(ToolCall("Env", "env://process", method, [{"name": "HOME"}])) == "read"


@pytest.mark.parametrize(
    ("method", "args", "message"),
    [
        ("set", [{"name": "HOME"}], "Unsupported env method 'set'. Supported: get"),
        ("Get", [{"name": "HOME"}], "Unsupported env method 'Get'. Supported: get"),
        ("get", [], "Env.get expects one json object argument"),
        ("get", ["HOME"], "Env.get expects one json object argument"),
        ("get", [{}], "Env.get.name is required"),
        ("get", [{"name": ""}], "Env.get.name is required"),
        ("get", [{"name": 3}], "Env.get.name is required"),
    ],
)
def test_errors_use_the_original_messages(method: str, args: list[Any], message: str) -> None:
    with pytest.raises(ExecutionError) as raised:
        get(EnvTools(ENVIRON), *args, method=method)

    assert raised.value.bare_message == message


# ----------------------------------------------------------------------------- the allow-list


def test_an_allow_list_limits_the_names_that_can_be_read() -> None:
    tools = EnvTools(ENVIRON, allow=["HOME", "NOT_SET"])

    assert get(tools, {"name": "HOME"}) == ("/home/ada", [])
    assert get(tools, {"name": "NOT_SET"}) == (None, [])
    assert refusal(tools, "PUBLIC_URL") == (
        "Env.get refused 'PUBLIC_URL': it is not in the allowed names (HOME, NOT_SET); "
        "allow it with --env-allow PUBLIC_URL"
    )


def test_an_empty_allow_list_allows_nothing() -> None:
    assert refusal(EnvTools(ENVIRON, allow=[]), "HOME") == (
        "Env.get refused 'HOME': it is not in the allowed names (none); "
        "allow it with --env-allow HOME"
    )


def test_allow_list_names_are_case_sensitive() -> None:
    with pytest.raises(ExecutionError, match="not in the allowed names"):
        get(EnvTools(ENVIRON, allow=["home"]), {"name": "HOME"})


# ----------------------------------------------------------------------------- secrets


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "PGPASSWORD",
        "MYSQL_PWD",
        "SMTP_PASS",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "SSH_PRIVATE_KEY",
        "NPM_CONFIG__AUTH",
        "SESSION_COOKIE",
        "TLS_CERT",
        "SENTRY_DSN",
        "clientSecret",
        "openai-api-key",
        "ACCESSTOKEN",
        # Concatenated, plural and longer forms of the markers (security finding 6).
        "OPENAIKEY",
        "SECRETKEY",
        "PRIVATEKEY",
        "ACCESSKEY",
        "MASTERKEY",
        "SIGNINGKEY",
        "APIKEYS",
        "AUTHORIZATION",
        "CONNECTION_STRING",
        "PG_CONN",
        "PASSCODE",
        "OTP_SEED",
        "DISCORD_HOOK",
        "slackWebhooks",
        "github_pat",
        "openaikey",
        "Authorization",
    ],
)
def test_names_that_look_like_secrets_are_refused(name: str) -> None:
    tools = EnvTools({name: "value"})

    assert refusal(tools, name) == (
        f"Env.get refused '{name}': the name looks like a secret; allow it with --env-allow {name}"
    )


@pytest.mark.parametrize(
    "name", ["HOME", "PATH", "KEYBOARD_LAYOUT", "MONKEY", "PASSENGER_COUNT", "AUTHOR", "PWD"]
)
def test_names_that_only_contain_a_secret_word_are_readable(name: str) -> None:
    assert get(EnvTools({name: "plain"}), {"name": name}) == ("plain", [])


def test_a_secret_looking_name_is_refused_even_when_unset() -> None:
    assert "looks like a secret" in refusal(EnvTools({}), "STRIPE_API_KEY")


def test_a_url_with_a_password_is_refused_whatever_its_name() -> None:
    assert refusal(EnvTools(ENVIRON), "DATABASE_URL") == (
        "Env.get refused 'DATABASE_URL': its value looks like a secret (a URL with a password); "
        "allow it with --env-allow DATABASE_URL"
    )
    assert get(EnvTools(ENVIRON), {"name": "PUBLIC_URL"}) == ("https://example.com/app", [])


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "DATABASE_URL"])
def test_an_allowed_secret_is_read_and_registered_for_redaction(name: str) -> None:
    tools = EnvTools(ENVIRON, allow=["HOME", name])

    assert get(tools, {"name": name}) == (ENVIRON[name], [ENVIRON[name]])
    assert get(tools, {"name": "HOME"}) == ("/home/ada", [])


def test_an_allowed_but_unset_secret_is_null() -> None:
    assert get(EnvTools({}, allow=["GITHUB_TOKEN"]), {"name": "GITHUB_TOKEN"}) == (None, [])


# ----------------------------------------------------------------------------- end to end


class EchoTools:
    """A scheme tool answering with its arguments, to see a secret passed on by the program."""

    def risk(self, request: ToolCall) -> Risk:
        return "read"

    def call(self, request: ToolCall) -> Any:
        return {"received": request.args[0]}


SOURCE = """
import tool Env from "env://process"
import tool Echo from "echo://sink"

main agent Reader {
    main func() {
        key = Env.get({ name: "OPENAI_API_KEY" })
        home = Env.get({ name: "HOME" })
        echoed = Echo.send({ auth: key })
        return { key: key, home: home, echoed: echoed.received.auth }
    }
}
"""


def run(source: str, allow: Collection[str] | None) -> agentscript.RunResult:
    registry = ToolRegistry({"env": EnvTools(ENVIRON, allow), "echo": EchoTools()})
    return agentscript.run(
        agentscript.load_source(source), {}, agentscript.RunConfig(model="mock", tools=registry)
    )


def test_a_program_receives_an_allowed_secret_but_the_trace_never_shows_it() -> None:
    result = run(SOURCE, ["OPENAI_API_KEY", "HOME"])

    assert result.value == {"key": SECRET, "home": "/home/ada", "echoed": SECRET}
    text = json.dumps(result.trace)
    assert SECRET not in text
    tool_events = [event["data"] for event in result.trace if event["kind"] == "tool"]
    assert [event["result"] for event in tool_events] == [
        "[REDACTED]",
        "/home/ada",
        {"received": {"auth": "[REDACTED]"}},
    ]
    assert tool_events[2]["args"] == [{"auth": "[REDACTED]"}]


def test_a_program_reading_a_secret_that_is_not_allowed_fails() -> None:
    with pytest.raises(agentscript.ExecutionError) as raised:
        run(SOURCE, None)

    assert raised.value.bare_message == (
        "Tool Env.get (env://process) failed: Env.get refused 'OPENAI_API_KEY': the name looks "
        "like a secret; allow it with --env-allow OPENAI_API_KEY"
    )


NESTED_SOURCE = """
import tool Env from "env://process"

agent Helper {
    func wrap(key) {
        return { wrapped: key }
    }
}

main agent Reader {
    main func() {
        key = Env.get({ name: "OPENAI_API_KEY" })
        return Helper.wrap(key)
    }
}
"""


def test_a_secret_passed_to_another_agent_is_redacted_from_the_trace() -> None:
    result = run(NESTED_SOURCE, ["OPENAI_API_KEY"])

    assert result.value == {"wrapped": SECRET}
    assert SECRET not in json.dumps(result.trace)
