"""What a well-formed request is, decided once, before the guard or a route reads any part of it.

- The path and the query are percent-encoded UTF-8: every ``%`` starts a two-digit hex escape,
  the bytes decode as strict UTF-8 (no overlong forms, no encoded surrogates), and the text has
  no control character (C0, DEL, C1). A route never sees U+FFFD where a byte was undecodable.
- The headers together fit in :data:`MAX_HEADER_BYTES` (431 otherwise).
- The headers the playground reads (:data:`READ_HEADERS`) are printable ASCII, and those that
  hold one value (:data:`SINGLE_HEADERS`: the Host, the token, the Origin, the body's type and
  length) come at most once: with two, which one counts would be up to whoever reads them.
  Other headers (a cookie another local app set on 127.0.0.1) are never read, so never judged.
- A body is at most :data:`MAX_BODY_BYTES`: a larger ``Content-Length`` is refused (413) before
  a byte of the body is read, and :func:`read_body` counts a chunked body as it arrives and
  stops at the limit, so no route ever reads a body itself.

Each refusal is a :class:`Refused` with a host-worded reason; the guard answers it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any, Final, final
from urllib.parse import unquote_to_bytes

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_HEADER_BYTES",
    "READ_HEADERS",
    "SINGLE_HEADERS",
    "TOKEN_HEADER",
    "ClientLeft",
    "Refused",
    "WellFormed",
    "read_body",
    "well_formed",
]

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]

#: The header API calls carry the token in.
TOKEN_HEADER: Final = "x-nr-llm-token"  # noqa: S105  # a header name, not a secret
#: The request line and all headers together (h11's own default for an incomplete head).
MAX_HEADER_BYTES: Final = 16 * 1024
#: The largest request body read (the API's bodies are small JSON objects).
MAX_BODY_BYTES: Final = 1_000_000
#: Headers that hold one value: a second one is refused.
SINGLE_HEADERS: Final = frozenset(
    {b"host", b"origin", TOKEN_HEADER.encode(), b"content-type", b"content-length"}
)
#: Every header the guard or a route reads; each value must be printable ASCII.
READ_HEADERS: Final = SINGLE_HEADERS | {b"accept", b"transfer-encoding"}

_BAD_ESCAPE: Final = re.compile(rb"%(?![0-9A-Fa-f]{2})")
_CONTROL: Final = re.compile("[\x00-\x1f\x7f-\x9f]")
_PRINTABLE: Final = re.compile(rb"[\x20-\x7e\t]*")
_MAX_LENGTH_DIGITS: Final = len(str(MAX_BODY_BYTES))


@final
class Refused(Exception):
    """The request is refused with ``status`` and the host-worded ``reason``."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@final
class ClientLeft(Exception):
    """The client disconnected before its body was read: there is no one to answer."""


@final
class WellFormed:
    """The parts of a well-formed request the guard reads: the decoded query, and each
    header of :data:`SINGLE_HEADERS` that is present (by its lowercase name)."""

    __slots__ = ("headers", "query")

    def __init__(self, query: dict[str, list[str]], headers: dict[bytes, bytes]) -> None:
        self.query = query
        self.headers = headers


def _decode(raw: bytes, *, plus: bool) -> str:
    """Strict percent-decoding to UTF-8 text without controls (``plus``: ``+`` is a space)."""
    if not raw.isascii() or _BAD_ESCAPE.search(raw):
        raise Refused(400, "the request target is not percent-encoded")
    if plus:
        raw = raw.replace(b"+", b" ")
    try:
        text = unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(400, "the request target is not UTF-8") from None
    if _CONTROL.search(text):
        raise Refused(400, "the request target holds a control character")
    return text


def _query(raw: bytes) -> dict[str, list[str]]:
    query: dict[str, list[str]] = {}
    for part in raw.split(b"&"):
        if part:
            name, _, value = part.partition(b"=")
            query.setdefault(_decode(name, plus=True), []).append(_decode(value, plus=True))
    return query


def _check_path(scope: Mapping[str, Any]) -> None:
    raw = scope.get("raw_path")
    if isinstance(raw, bytes):
        _decode(raw, plus=False)
    elif _CONTROL.search(scope.get("path", "")):  # a server that gives the decoded path only
        raise Refused(400, "the request target holds a control character")


def _check_length(value: bytes) -> None:
    if not value.isdigit():
        raise Refused(400, "the content-length header is not a number")
    digits = value.lstrip(b"0")
    if len(digits) > _MAX_LENGTH_DIGITS or int(digits or b"0") > MAX_BODY_BYTES:
        raise Refused(413, f"the body is larger than {MAX_BODY_BYTES} bytes")


def well_formed(scope: Mapping[str, Any]) -> WellFormed:
    """The checked parts of the request in ``scope``; raises :class:`Refused` otherwise."""
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    size = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
    size += sum(len(name) + len(value) + 4 for name, value in headers)
    if size > MAX_HEADER_BYTES:
        raise Refused(431, f"the request head is larger than {MAX_HEADER_BYTES} bytes")
    single: dict[bytes, bytes] = {}
    for name, value in headers:
        if name not in READ_HEADERS:
            continue
        label = name.decode("ascii")  # one of ours
        if _PRINTABLE.fullmatch(value) is None:
            raise Refused(400, f"the {label} header is not printable ASCII")
        if name in SINGLE_HEADERS:
            if name in single:
                raise Refused(400, f"the {label} header is repeated")
            single[name] = value
    _check_path(scope)
    query = _query(scope.get("query_string", b""))
    if b"content-length" in single:
        _check_length(single[b"content-length"])
    return WellFormed(query, single)


async def read_body(receive: Receive) -> bytes:
    """The whole request body, counted as it arrives: :class:`Refused` (413) as soon as it
    passes :data:`MAX_BODY_BYTES`, :class:`ClientLeft` if the client disconnects first."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientLeft
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise Refused(413, f"the body is larger than {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
