"""Showing URIs safely: a password in a URI's user part or in a `password=` parameter is
replaced by *** wherever a URI is shown (traces, errors, reprs). Used for memory URIs such as
`postgresql://user:secret@host/db#team`, and safe for any URI."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

HIDDEN = "***"
_PASSWORD_PARAMETER = re.compile(r"([?&]password=)[^&]*")


def scrub_uri(uri: str) -> str:
    """`uri` with its password (in the user part or a `password=` parameter) replaced by ***,
    everything else as written. Safe to show for any URI."""
    if "://" not in uri:
        return uri
    parts = SplitUri.split(uri)
    fragment = f"#{parts.fragment}" if parts.has_fragment else ""
    return f"{parts.scheme}://{parts.shown_userinfo}{parts.shown_address}{fragment}"


def uri_password(uri: str) -> str | None:
    """The password a URI carries (user part or `password=` parameter), or None."""
    if "://" not in uri:
        return None
    return SplitUri.split(uri).password or None


def uri_secrets(uri: str) -> list[str]:
    """Every form in which a URI's password can be sent, for the redaction set: the password,
    and the Basic-auth token (`base64(user:password)`) an HTTP client sends for it."""
    if "://" not in uri:
        return []
    split = SplitUri.split(uri)
    if not split.password:
        return []
    return [split.password, basic_token(unquote(split.user), split.password)]


def basic_token(user: str, password: str) -> str:
    """What an `Authorization: Basic …` header carries for these credentials."""
    import base64

    return base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


@dataclass(frozen=True, slots=True)
class SplitUri:
    """A connection URI cut into credentials and the rest, erring towards hiding.

    libpq wants reserved characters in passwords percent-encoded, but people forget: the user
    part is taken to end at the last `@`, so a raw `/`, `?`, `#` or `@` in a password still
    stays inside it, and the namespace fragment starts at the first `#` after that.
    """

    scheme: str
    user: str
    # Percent-decoded; from the user part, else from a `password=` parameter.
    password: str | None
    has_userinfo: bool
    has_password_in_userinfo: bool
    # Host, port, database and parameters, without any `password=` parameter.
    address: str
    # The same as written, with a `password=` parameter's value hidden.
    shown_address: str
    fragment: str
    has_fragment: bool

    @classmethod
    def split(cls, uri: str) -> SplitUri:
        scheme, _, rest = uri.partition("://")
        at = rest.rfind("@")
        hash_mark = rest.find("#", at + 1)
        body, fragment = (rest[:hash_mark], rest[hash_mark + 1 :]) if hash_mark >= 0 else (rest, "")
        userinfo, written = (body[:at], body[at + 1 :]) if at >= 0 else ("", body)
        user, colon, userinfo_password = userinfo.partition(":")
        address, parameter_password = _without_password_parameter(written)
        return cls(
            scheme=scheme,
            user=user,
            password=unquote(userinfo_password) if colon else parameter_password,
            has_userinfo=at >= 0,
            has_password_in_userinfo=bool(colon),
            address=address,
            shown_address=_PASSWORD_PARAMETER.sub(rf"\g<1>{HIDDEN}", written),
            fragment=fragment,
            has_fragment=hash_mark >= 0,
        )

    @property
    def shown_userinfo(self) -> str:
        if not self.has_userinfo:
            return ""
        return f"{self.user}:{HIDDEN}@" if self.has_password_in_userinfo else f"{self.user}@"


def _without_password_parameter(address: str) -> tuple[str, str | None]:
    """`address` without its `password=` parameter, and that parameter's decoded value."""
    path, question_mark, query = address.partition("?")
    if not question_mark:
        return address, None
    kept: list[str] = []
    password = None
    for item in query.split("&"):
        key, _, value = item.partition("=")
        if key == "password":
            password = unquote(value)
        else:
            kept.append(item)
    return (f"{path}?{'&'.join(kept)}" if kept else path), password
