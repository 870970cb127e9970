"""Serving the playground with uvicorn on a socket bound first, so the port (``0``: any free
one) and with it the Host allow-list and the printed URL are known before the first request."""

from __future__ import annotations

import ipaddress
import secrets
import socket
import threading
import time
from collections.abc import Mapping
from typing import Final, final

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from nr_llm_core.host import ToolHost
from nr_llm_core.playground._guard import MAX_HEADER_BYTES, allowed_hosts, refusal
from nr_llm_core.playground._runs import ProviderFactory
from nr_llm_core.playground._store import Store
from nr_llm_core.playground.app import PlaygroundApp, create_app

__all__ = ["DEFAULT_BIND", "PlaygroundServer", "is_loopback"]

#: The playground listens on the loopback interface unless told otherwise.
DEFAULT_BIND: Final = "127.0.0.1"
_LOOPBACK_NAMES: Final = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback(bind: str) -> bool:
    """Whether ``bind`` names the loopback interface only."""
    if bind in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(bind.strip("[]")).is_loopback
    except ValueError:
        return False


def _bind(address: str, port: int) -> socket.socket:
    family, kind, proto, _, sockaddr = socket.getaddrinfo(
        address.strip("[]"), port, type=socket.SOCK_STREAM
    )[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(sockaddr)
    sock.listen(128)
    sock.setblocking(False)
    return sock


class _GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, whose own refusal of a request its parser cannot read
    (bytes over 0x7f in the target, a bad ``Content-Length``, a head past the limit …) is the
    guard's JSON refusal with every security header, not a bare ``text/plain`` 400: the app
    never sees such a request, so the guard cannot answer it."""

    def send_400_response(self, msg: str) -> None:
        headers, body = refusal(400, "malformed HTTP request")
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event))
        self.transport.close()


@final
class PlaygroundServer:
    """The playground for ``host``'s tools on ``bind``:``port`` with a fresh random token.

    :meth:`start` serves in a background thread (tests, embedding), :meth:`serve` in the
    calling thread until interrupted. :attr:`url` is the address to open, token included.
    """

    def __init__(
        self,
        host: ToolHost,
        *,
        providers: Mapping[str, ProviderFactory],
        store: Store | None = None,
        bind: str = DEFAULT_BIND,
        port: int = 0,
        token: str | None = None,
        tool_timeout: float | None = 30.0,
        workers: int = 32,
    ) -> None:
        self.token = token or secrets.token_urlsafe(32)
        self.socket = _bind(bind, port)
        self.port: int = self.socket.getsockname()[1]
        self.bind = bind
        extra = () if is_loopback(bind) else (bind.strip("[]"),)
        self.app: PlaygroundApp = create_app(
            host,
            token=self.token,
            allowed_hosts=allowed_hosts(self.port, extra),
            providers=providers,
            store=store,
            tool_timeout=tool_timeout,
            workers=workers,
        )
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            # No handlers of uvicorn's own: they would write its records (a traceback can
            # quote a client's path or header) to stderr raw. Its loggers then propagate to
            # the application's, which on the command line escape every control character.
            log_config=None,
            access_log=False,
            lifespan="off",
            ws="none",
            http=_GuardedH11Protocol,
            h11_max_incomplete_event_size=MAX_HEADER_BYTES,
            proxy_headers=False,
            server_header=False,
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def origin(self) -> str:
        """``http://host:port`` (a wildcard bind is shown as 127.0.0.1)."""
        name = self.bind.strip("[]")
        if name in ("0.0.0.0", "::", ""):  # noqa: S104  # naming the wildcard, not binding it
            name = "127.0.0.1"
        if ":" in name:
            name = f"[{name}]"
        return f"http://{name}:{self.port}"

    @property
    def url(self) -> str:
        """The page's address with the token."""
        return f"{self.origin}/?token={self.token}"

    def serve(self) -> None:
        """Serve in this thread until interrupted (Ctrl-C)."""
        try:
            self._server.run(sockets=[self.socket])
        finally:
            self.app.close()

    def start(self, timeout: float = 10.0) -> PlaygroundServer:
        """Serve in a daemon thread; return once the server accepts connections."""
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self.socket]},
            name="nr-llm-playground",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the playground server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop a server started with :meth:`start`."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self.app.close()
        self.socket.close()

    def __enter__(self) -> PlaygroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
