"""The playground's front door: Host allow-list, token, and security headers on every response.

It is plain ASGI middleware around the whole app, so no route can forget it. In order:

1. A request whose ``Host`` is missing or repeated is refused with 400, one whose ``Host`` is
   not on the allow-list (``127.0.0.1:PORT``, ``localhost:PORT``, ``[::1]:PORT``) with 403:
   a page on another site that rebinds its DNS name to 127.0.0.1 still sends its own name.
2. A POST whose ``Origin`` is present and not this server is refused with 403.
3. The token must be in the ``X-NR-LLM-Token`` header (401 otherwise). Only a page or static
   load (GET/HEAD of ``/`` or ``/static/…``) may carry it as ``?token=`` instead, because a
   browser cannot add a header to a typed URL or a ``<script src>``. State-changing requests
   are POSTs and never accept the query form.

Every response, refusals included, carries the CSP, ``nosniff``, ``no-referrer`` and
``no-store`` headers.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from typing import Any, Final, final
from urllib.parse import parse_qs

from nr_llm_core.encoding import encode_json

__all__ = ["SECURITY_HEADERS", "TOKEN_HEADER", "TokenGuard", "allowed_hosts"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The header API calls carry the token in.
TOKEN_HEADER: Final = "x-nr-llm-token"  # noqa: S105  # a header name, not a secret

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
        send = _with_security_headers(send)
        headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
        host_values = [v for k, v in headers if k == b"host"]
        if len(host_values) != 1:
            await _refuse(send, 400, "a request needs exactly one Host header")
            return
        if host_values[0].decode("latin-1").lower() not in self.hosts:
            await _refuse(send, 403, "this Host is not served here")
            return
        method: str = scope["method"]
        if method not in ("GET", "HEAD", "POST"):
            await _refuse(send, 405, "method not allowed")
            return
        origin = next((v for k, v in headers if k == b"origin"), None)
        if (
            method == "POST"
            and origin is not None
            and origin.decode("latin-1").lower() not in self.origins
        ):
            await _refuse(send, 403, "cross-origin request refused")
            return
        supplied = next((v for k, v in headers if k == TOKEN_HEADER.encode()), None)
        if supplied is None and _is_page_load(method, scope.get("path", "")):
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            values = query.get("token", [])
            supplied = values[0].encode("latin-1") if len(values) == 1 else None
        if supplied is None or not hmac.compare_digest(supplied, self._token):
            await _refuse(send, 401, "a valid token is required")
            return
        await self.app(scope, receive, send)


def _with_security_headers(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            names = {k.lower() for k, _ in message.get("headers", [])}
            extra = [(k, v) for k, v in SECURITY_HEADERS if k not in names]
            message["headers"] = [*message.get("headers", []), *extra]
        await send(message)

    return wrapped


async def _refuse(send: Send, status: int, reason: str) -> None:
    body = encode_json({"error": reason})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode("ascii")),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
