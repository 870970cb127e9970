"""Secret-shaped canaries and the encodings a tool's output may wrap them in (ADR 0034).

A :class:`Canary` is a short document that holds one secret of the catalogue's shapes (an AWS
key, a GitHub token, a password in JSON, a bearer header, a private-key block …) and the
*needle*: the part of the secret that every encoding leaves verbatim (letters and digits), so
that finding the needle in stored bytes means the secret was stored. Each document is made for
a ``tag`` (which path of a run carries it), so a leak names its path.

:data:`ENCODINGS` are the encodings REDACTED must see through; :data:`OUT_OF_SCOPE` are those it
does not (each with the reason ADR 0034 gives).
"""

from __future__ import annotations

import base64
import html
import json
import urllib.parse
from collections.abc import Callable
from typing import Final

__all__ = ["CANARIES", "ENCODINGS", "OUT_OF_SCOPE", "Canary", "OutOfScope"]


class Canary:
    """One secret shape: ``document(tag)`` is the text that holds it, ``needle(tag)`` the part
    of the secret that must never be stored, ``trigger`` what makes the shape recognisable
    (written with ``\\u`` escapes by the ``u-letters`` encoding)."""

    def __init__(self, kind: str, template: str, secret: str, trigger: str) -> None:
        self.kind = kind
        self.template = template  # "{secret}" marks where the secret goes
        self.secret = secret  # "{tag}" marks where the tag goes
        self.trigger = trigger

    def needle(self, tag: str) -> str:
        """The letters and digits of the secret that no encoding changes."""
        needle = self.secret.format(tag=tag).rsplit("/", 1)[-1]
        return needle.removeprefix(self.trigger)

    def document(self, tag: str) -> str:
        """The text that holds the secret."""
        return self.template.replace("{secret}", self.secret.format(tag=tag))

    def __repr__(self) -> str:
        return f"Canary({self.kind!r})"


# Tags are four capital letters: they fit every shape's alphabet.
CANARIES: Final = (
    Canary(
        "aws-access-key-id",
        '{"AccessKeyId": "{secret}", "Expiration": "2026-12-01T00:00:00Z"}',
        "AKIAQ7W9{tag}CNRY0001",
        "AKIA",
    ),
    Canary(
        "github-token", "pushed with {secret} to origin", "ghp_Q7w9{tag}" + "Gh0Canary" * 3, "ghp_"
    ),
    Canary(
        "credential-value",
        '{"user": "ann", "password": "{secret}"}',
        "Q7w9{tag}Pw0rdCanary",
        "password",
    ),
    Canary(
        "bearer-token",
        "curl -H 'Authorization: Bearer {secret}' https://api.example.com/v1",
        "Q7w9{tag}HdrTokCanary",
        "Bearer",
    ),
    Canary(
        "private-key",
        '{"key": "-----BEGIN RSA PRIVATE KEY-----\\nMIIEpAIBAAKCAQEA{secret}\\n'
        '-----END RSA PRIVATE KEY-----\\n"}',
        "Q7w9{tag}PemBodyCanary",
        "PRIVATE KEY",
    ),
    Canary(
        "aws-secret-key",
        '{"AccessKeyId": "ASIAEXAMPLE", "SecretAccessKey": "{secret}"}',
        "wJalrXUtnFEMI/K7MDENG/Q7w9{tag}Aws5ecretC",  # 40 characters
        "SecretAccessKey",
    ),
    Canary(
        "url-credentials",
        "DATABASE_URL=postgres://admin:{secret}@db.internal:5432/app",
        "Q7w9{tag}DbPassCanary",
        "postgres",
    ),
    Canary(
        "credential-value-query",
        "GET https://api.example.com/v1/items?page=2&token={secret}&sort=asc",
        "Q7w9{tag}QueryTokCanary",
        "token",
    ),
)


def _json(levels: int) -> Callable[[str], str]:
    def encode(text: str) -> str:
        for _ in range(levels):
            text = json.dumps(text)
        return text

    return encode


def _escape_letters(text: str, trigger: str) -> str:
    # Every letter of the trigger as a \uXXXX escape: "\u0041\u004b\u0049\u0041Q7W9…".
    return text.replace(trigger, "".join(f"\\u{ord(c):04x}" if c.isalpha() else c for c in trigger))


def _percent(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def _url_in_json(text: str) -> str:
    # A redirect URL that carries the document URL-encoded, written by PHP's json_encode (which
    # escapes "/"), then quoted once more as a JSON string.
    inner = json.dumps({"next": "https://app.example.com/cb?state=" + _percent(text)})
    return json.dumps(inner.replace("/", "\\/"))


#: name -> encode(text, trigger): what REDACTED must see through.
ENCODINGS: Final[dict[str, Callable[[str, str], str]]] = {
    "plain": lambda text, trigger: text,
    "json-1": lambda text, trigger: _json(1)(text),
    "json-2": lambda text, trigger: _json(2)(text),
    "json-3": lambda text, trigger: _json(3)(text),
    "json-5": lambda text, trigger: _json(5)(text),
    "u0022-quotes": lambda text, trigger: _json(1)(text).replace('\\"', "\\u0022"),
    "escaped-slashes": lambda text, trigger: _json(1)(text).replace("/", "\\/"),
    "u-letters": _escape_letters,
    "percent": lambda text, trigger: _percent(text),
    "percent-2": lambda text, trigger: _percent(_percent(text)),
    "html-entities": lambda text, trigger: html.escape(text, quote=True),
    "mixed-json-3-u-letters": lambda text, trigger: _json(3)(_escape_letters(text, trigger)),
    "mixed-url-in-json": lambda text, trigger: _url_in_json(text),
    "mixed-html-json-2": lambda text, trigger: html.escape(_json(2)(text), quote=True),
}


class OutOfScope:
    """An encoding REDACTED does not see through, pinned on one canary: ``encode`` hides the
    document, ``reveal`` is what a reader of the stored text would do to get it back."""

    def __init__(
        self,
        name: str,
        canary: Canary,
        encode: Callable[[str, str], str],
        reveal: Callable[[str], str],
        reason: str,
    ) -> None:
        self.name = name
        self.canary = canary
        self.encode = encode
        self.reveal = reveal
        self.reason = reason


_BY_KIND: Final = {c.kind: c for c in CANARIES}

#: What REDACTED does not see through, each with the reason ADR 0034 gives.
OUT_OF_SCOPE: Final = (
    OutOfScope(
        "base64",
        _BY_KIND["credential-value"],
        lambda text, trigger: base64.b64encode(text.encode()).decode(),
        lambda out: base64.b64decode(out).decode(),
        "data encodings are not decoded: hashes, ids and payloads look the same",
    ),
    OutOfScope(
        "zero-width",
        _BY_KIND["aws-access-key-id"],
        lambda text, trigger: text.replace(trigger, "\u200b".join(trigger)),
        lambda out: out.replace("\u200b", ""),
        "text altered to hide a secret is obfuscation, not an encoding",
    ),
    OutOfScope(
        "x-escapes",
        _BY_KIND["aws-access-key-id"],
        lambda text, trigger: text.replace(trigger, "".join(f"\\x{ord(c):02x}" for c in trigger)),
        lambda out: out.encode().decode("unicode_escape"),
        "only the escapes of JSON, URLs and HTML are decoded",
    ),
    OutOfScope(
        "percent-4",
        _BY_KIND["credential-value"],
        lambda text, trigger: _percent(_percent(_percent(_percent(text)))),
        lambda out: urllib.parse.unquote(
            urllib.parse.unquote(urllib.parse.unquote(urllib.parse.unquote(out)))
        ),
        "decoding stops after three layers",
    ),
)
