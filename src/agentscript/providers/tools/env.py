"""Environment tools: `import tool Env from "env://process"`, then `Env.get({name: "HOME"})`.

Environment variables often hold credentials, and whatever a program reads can reach a prompt or
the trace. So a variable whose name (or value) looks like a secret is refused unless the user
allowed it by name (`--env-allow NAME`), and an allowed secret is redacted from the trace.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Collection, Mapping

from agentscript.providers.tools.base import Risk, object_argument, required_string
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall

# The rule for secret-like names (docs/tools.md, docs/security.md): the name is split into word
# parts (on `_`, `-`, `.`, camelCase and digits) and compared in upper case. A part is secret-like
# when it starts with a marker, or ends with one once a plural `S` is dropped: OPENAIKEY,
# APIKEYS, AUTHORIZATION, CONNECTION, PASSCODE, PGPASSWORD, ACCESSTOKEN all are.
SECRET_MARKERS = (
    "KEY SECRET TOKEN PASS PASSWORD PASSWD PASSPHRASE AUTH CREDENTIAL CREDS PRIVATE CONN DSN "
    "HOOK SEED COOKIE SESSION CERT JWT BEARER SALT".split()
)
# Short words that mark a name only when they are a whole part (MYSQL_PWD, GITHUB_PAT, OTP).
SECRET_PARTS = frozenset({"PWD", "PAT", "OTP"})
# Ordinary words that merely begin or end with a marker; as a whole part they are not secrets.
ORDINARY_WORDS = frozenset(
    "KEYBOARD KEYBOARDS MONKEY DONKEY TURKEY HOCKEY JOCKEY WHISKEY PASSENGER PASSENGERS PASSAGE "
    "PASSIVE COMPASS BYPASS AUTHOR AUTHORS".split()
)
# The shell's working directories: PWD as a word part is a password (MYSQL_PWD), but not these.
NOT_SECRETS = frozenset({"PWD", "OLDPWD"})
# Word parts: runs of capitals, capitalised or lower-case words, digits (`apiKey` → api, Key).
WORD_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


class EnvTools:
    """The `env` scheme: `get {name}` returns the variable's value, or null when it is unset.

    `allow`, when given, lists the only names a program may read; it is also the one way to let
    a program read a variable that looks like a secret (see `secret_reason`).
    """

    def __init__(
        self, environ: Mapping[str, str] = os.environ, allow: Collection[str] | None = None
    ) -> None:
        self._environ = environ
        self._allow = frozenset(allow) if allow is not None else None

    def risk(self, request: ToolCall) -> Risk:
        return "read"

    def call(self, request: ToolCall) -> str | None:
        if request.method != "get":
            raise ExecutionError(f"Unsupported env method '{request.method}'. Supported: get")
        name = required_string(object_argument(request, "Env.get"), "name", "Env.get")
        allowed = self._allow is not None and name in self._allow
        if self._allow is not None and not allowed:
            listed = ", ".join(sorted(self._allow)) or "none"
            raise ExecutionError(
                f"Env.get refused '{name}': it is not in the allowed names ({listed}); "
                f"allow it with --env-allow {name}"
            )
        value = self._environ.get(name)
        reason = secret_reason(name, value)
        if reason is None:
            return value
        if not allowed:
            raise ExecutionError(
                f"Env.get refused '{name}': {reason}; allow it with --env-allow {name}"
            )
        if value is not None:
            request.secret(value)
        return value


# Environment values shorter than this are not taken as secrets to refuse in memory: a
# RANDOM_SEED=42 must not make every "42" unrememberable.
MIN_ENVIRONMENT_SECRET = 8


def environment_secrets(environ: Mapping[str, str]) -> list[str]:
    """The values in `environ` that are secrets by the rule above and look like credentials:
    at least MIN_ENVIRONMENT_SECRET characters, not a plain word (`AUTH_MODE=disabled`) and
    not an absolute path (`SSH_AUTH_SOCK=/tmp/…`), which point at secrets but are not ones."""
    return [
        value
        for name, value in environ.items()
        if len(value) >= MIN_ENVIRONMENT_SECRET
        and not value.isalpha()
        and not value.startswith("/")
        and secret_reason(name, value) is not None
    ]


def secret_reason(name: str, value: str | None) -> str | None:
    """Why the variable looks like a secret, or None when it does not.

    The name is split into word parts (on `_`, `-`, `.` and camelCase) and compared without
    case. The value counts too when it is a URL with a password (`DATABASE_URL=postgres://u:p@h`),
    because such names look harmless.
    """
    if looks_like_secret_name(name):
        return "the name looks like a secret"
    if value is not None and has_url_password(value):
        return "its value looks like a secret (a URL with a password)"
    return None


def looks_like_secret_name(name: str) -> bool:
    """Whether `name` follows the secret-name rule (see SECRET_MARKERS)."""
    if name.upper() in NOT_SECRETS:
        return False
    return any(_secret_part(part.upper()) for part in WORD_PART.findall(name))


def _secret_part(part: str) -> bool:
    if part in SECRET_PARTS:
        return True
    if part in ORDINARY_WORDS:
        return False
    singular = part[:-1] if part.endswith("S") else part
    return any(part.startswith(marker) or singular.endswith(marker) for marker in SECRET_MARKERS)


def has_url_password(value: str) -> bool:
    try:
        return bool(urllib.parse.urlsplit(value.strip()).password)
    except ValueError:
        return False
