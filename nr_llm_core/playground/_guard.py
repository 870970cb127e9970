"""The playground's front door: well-formed requests, Host allow-list, token, bounded bodies,
and security headers on every response.

It is plain ASGI middleware around the whole app, so no route can forget it. In order:

0. A malformed request is refused with a 4xx before anything reads it (see
   :mod:`~nr_llm_core.playground._wellformed`: the target is percent-encoded UTF-8, the headers
   fit their budget, those the playground reads are single printable ASCII values, a declared
   body fits :data:`MAX_BODY_BYTES`).
1. A request whose ``Host`` is missing is refused with 400, one whose ``Host`` is not on the
   allow-list (``127.0.0.1:PORT``, ``localhost:PORT``, ``[::1]:PORT``) with 403: a page on
   another site that rebinds its DNS name to 127.0.0.1 still sends its own name.
2. A POST whose ``Origin`` is present and not this server is refused with 403.
3. The token must be in the ``X-NR-LLM-Token`` header (401 otherwise). Only a page or static
   load (GET/HEAD of ``/`` or ``/static/…``) may carry it as ``?token=`` instead, because a
   browser cannot add a header to a typed URL or a ``<script src>``. State-changing requests
   are POSTs and never accept the query form.
4. The body is read here, once, counted as it arrives (413 past the limit, whether declared or
   chunked), and handed to the app whole: no route reads a body from the socket.

Every response, refusals included, carries the CSP, ``nosniff``, ``no-referrer`` and
``no-store`` headers; an exception before the response started is answered with a 500 that
carries them too (the HTTP parser's own refusals: see ``server.py``).
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from typing import Any, Final, final

from nr_llm_core.encoding import encode_json
from nr_llm_core.playground._wellformed import (
    MAX_BODY_BYTES,
    MAX_HEADER_BYTES,
    TOKEN_HEADER,
    ClientLeft,
    Refused,
    read_body,
    well_formed,
)

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_HEADER_BYTES",
    "SECURITY_HEADERS",
    "TOKEN_HEADER",
    "TokenGuard",
    "allowed_hosts",
    "refusal",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

#: Added to every response.
SECURITY_HEADERS: Final[tuple[tuple[bytes, bytes], ...]] = (
    (b"content-security-policy", CSP.encode("ascii")),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)


def allowed_hosts(port: int, extra: Collection[str] = ()) -> frozenset[str]:
    """The ``Host`` values accepted for a server on ``port``: the loopback names, plus
    ``extra`` host names (an address the operator chose to bind)."""
    names = {"127.0.0.1", "localhost", "[::1]"}
    for name in extra:
        names.add(f"[{name}]" if ":" in name and not name.startswith("[") else name)
    return frozenset(f"{name.lower()}:{port}" for name in names)


def _is_page_load(method: str, path: str) -> bool:
    return method in ("GET", "HEAD") and (path == "/" or path.startswith("/static/"))


@final
class TokenGuard:
    """ASGI middleware enforcing the Host allow-list and the token (see the module doc)."""

    def __init__(self, app: ASGIApp, *, token: str, hosts: Collection[str]) -> None:
        if len(token) < 16:
            raise ValueError("the playground token must be at least 16 characters")
        self.app = app
        self._token = token.encode("utf-8")
        self.hosts = frozenset(h.lower() for h in hosts)
        self.origins = frozenset(f"http://{h}" for h in self.hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # no websockets here
            return
        guarded = _Guarded(send)
        try:
            await self._guard(scope, receive, guarded)
        except Refused as refused:
            if not guarded.started:
                await _refuse(guarded, refused.status, refused.reason)
        except ClientLeft:
            return  # nobody to answer
        except Exception:
            # A fault past the checks (the app's own 500s are answered inside it): never a
            # response without the headers. Re-raised so the server logs it.
            if not guarded.started:
                await _refuse(guarded, 500, "internal error")
            raise

    async def _guard(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = well_formed(scope)
        host = request.headers.get(b"host")
        if host is None:
            raise Refused(400, "a request needs exactly one Host header")
        if host.decode("ascii").lower() not in self.hosts:
            raise Refused(403, "this Host is not served here")
        method: str = scope["method"]
        if method not in ("GET", "HEAD", "POST"):
            raise Refused(405, "method not allowed")
        origin = request.headers.get(b"origin")
        foreign = origin is not None and origin.decode("ascii").lower() not in self.origins
        if method == "POST" and foreign:
            raise Refused(403, "cross-origin request refused")
        supplied = request.headers.get(TOKEN_HEADER.encode())
        if supplied is None and _is_page_load(method, scope.get("path", "")):
            values = request.query.get("token", [])
            supplied = values[0].encode("utf-8") if len(values) == 1 else None
        if supplied is None or not hmac.compare_digest(supplied, self._token):
            raise Refused(401, "a valid token is required")
        body = await read_body(receive)
        await self.app(scope, _replay(body, receive), send)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body read by the guard, as one message; then the server's own messages (a
    streaming response still hears the client disconnect)."""
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay


@final
class _Guarded:
    """The server's ``send``, adding the security headers to every response start, and
    knowing whether the response has started."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
            headers = message.get("headers", [])
            names = {k.lower() for k, _ in headers}
            message["headers"] = [
                *headers,
                *((k, v) for k, v in SECURITY_HEADERS if k not in names),
            ]
        await self._send(message)


def refusal(status: int, reason: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers (security headers included) and JSON body of a refusal. The connection is
    closed after it: the request's body may be left unread."""
    body = encode_json({"error": reason})
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
        (b"connection", b"close"),
    ]
    return [*headers, *SECURITY_HEADERS], body


async def _refuse(send: Send, status: int, reason: str) -> None:
    headers, body = refusal(status, reason)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
