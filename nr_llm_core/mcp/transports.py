"""Serving a :class:`~nr_llm_core.mcp.serve.ToolServer` over stdio or Streamable HTTP.

Stdio: the SDK's transport, which points file descriptor 1 at stderr while it serves, so a
tool's ``print()`` never reaches the JSON-RPC stream; it ends when stdin closes.

Streamable HTTP: the SDK's session manager at ``/mcp`` on a socket bound first (port ``0``:
any free one), served by uvicorn. Host and Origin headers are checked against the bound
address (DNS rebinding protection, always on); a bearer token is required when one is given,
and one must be given to bind beyond the loopback interface. SIGTERM and Ctrl-C stop the
server cleanly (uvicorn's graceful shutdown, then the command's own exits).
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from collections.abc import Iterable
from typing import Final

import anyio
import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette

from nr_llm_core.mcp.serve import ToolServer

__all__ = ["ENDPOINT", "HttpEndpoint", "is_loopback", "serve_stdio"]

#: The path of the Streamable HTTP endpoint.
ENDPOINT: Final = "/mcp"
_LOOPBACK_NAMES: Final = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
# The most a request body may hold (the SDK's default is 4 MiB; a call's arguments are small).
_MAX_BODY_BYTES: Final = 1024 * 1024


def is_loopback(bind: str) -> bool:
    """Whether ``bind`` names the loopback interface only."""
    if bind in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(bind.strip("[]")).is_loopback
    except ValueError:
        return False


def serve_stdio(server: ToolServer) -> None:
    """Serve on stdin/stdout until stdin closes."""

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.server.run(read, write, server.server.create_initialization_options())

    anyio.run(run)


class _StaticToken:
    """The SDK's token verifier for one bearer token, compared in constant time."""

    def __init__(self, token: str) -> None:
        self._token = token.encode("utf-8")

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode("utf-8", "replace"), self._token):
            return AccessToken(token="bearer", client_id="nr-llm-operator", scopes=[])  # noqa: S106  # a fixed label, the token itself is never kept here
        return None


def _bind(address: str, port: int) -> socket.socket:
    family, kind, proto, _, sockaddr = socket.getaddrinfo(
        address.strip("[]"), port, type=socket.SOCK_STREAM
    )[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(sockaddr)
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


class HttpEndpoint:
    """``server`` at ``http://bind:port/mcp``, bound when built (``port`` 0: any free one).

    ``token``: the bearer token every request must carry (required beyond loopback).
    ``allowed_hosts``/``allowed_origins`` add ``Host`` and ``Origin`` values to those of the
    bound address (for a name or a reverse proxy in front of it).
    """

    def __init__(
        self,
        server: ToolServer,
        *,
        bind: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
    ) -> None:
        if not is_loopback(bind) and not token:
            raise ValueError("a token is required to serve beyond the loopback interface")
        self.socket = _bind(bind, port)
        self.port: int = self.socket.getsockname()[1]
        self.bind = bind
        name = bind.strip("[]")
        shown = f"[{name}]" if ":" in name else name
        self.url = f"http://{shown}:{self.port}{ENDPOINT}"
        hosts = [f"{shown}:{self.port}"]
        origins = [f"http://{shown}:{self.port}"]
        if is_loopback(bind):
            for loop in ("127.0.0.1", "localhost", "[::1]"):
                hosts.append(f"{loop}:{self.port}")
                origins.append(f"http://{loop}:{self.port}")
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[*dict.fromkeys([*hosts, *allowed_hosts])],
            allowed_origins=[*dict.fromkeys([*origins, *allowed_origins])],
        )
        auth = None
        verifier = None
        if token:
            verifier = _StaticToken(token)
            auth = AuthSettings(
                issuer_url=f"http://{shown}:{self.port}",  # type: ignore[arg-type]  # pydantic parses it
                resource_server_url=None,
                required_scopes=[],
            )
        self.app: Starlette = server.server.streamable_http_app(
            streamable_http_path=ENDPOINT,
            transport_security=security,
            host=bind,
            max_request_body_size=_MAX_BODY_BYTES,
            auth=auth,
            token_verifier=verifier,
        )
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            # No handlers of uvicorn's own: they would write its records (a traceback can
            # quote a client's path or header) to stderr raw. Its loggers then propagate to
            # the application's, which on the command line escape every control character.
            log_config=None,
            access_log=False,
            ws="none",
            proxy_headers=False,
            server_header=False,
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)

    @property
    def started(self) -> bool:
        """Whether the server accepts connections."""
        return bool(self._server.started)

    def serve(self) -> None:
        """Serve in this thread until SIGTERM or Ctrl-C (or :meth:`stop` from another)."""
        try:
            self._server.run(sockets=[self.socket])
        finally:
            self.socket.close()

    def stop(self) -> None:
        """Ask a serving :meth:`serve` to return."""
        self._server.should_exit = True
