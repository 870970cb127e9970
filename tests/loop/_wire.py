"""A local HTTP server on 127.0.0.1 that plays recorded provider answers and keeps every byte
of every request it receives, and a forwarding proxy that does the same in front of it. Either
serves HTTPS when given a server-side ``ssl.SSLContext`` (``tls=``), and keeps each failed TLS
handshake."""

from __future__ import annotations

import base64
import http.client
import json
import select
import socket
import ssl
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs


@attrs.define
class Reply:
    status: int = 200
    body: bytes | Any = b"{}"
    headers: dict[str, str] = attrs.field(factory=dict)
    hang: bool = False  # wait (up to 10 s, or until the server stops) before answering
    trickle: float = 0.0  # seconds between single body bytes

    def payload(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        return json.dumps(self.body).encode()


@attrs.define
class Captured:
    raw: bytes  # request line, headers and body exactly as received
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class _Server(ThreadingHTTPServer):
    """A threading HTTP server on 127.0.0.1, over TLS when ``tls`` is given: the handshake runs
    in the connection's own thread, and one that fails is kept in ``handshake_errors``."""

    daemon_threads = True

    def __init__(
        self, handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None
    ) -> None:
        self.tls = tls
        self.handshake_errors: list[OSError] = []
        self.handshakes = threading.Condition()
        super().__init__(("127.0.0.1", 0), handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(10)
        try:
            wrapped = self.tls.wrap_socket(request, server_side=True)
        except OSError as exc:  # ssl.SSLError included: the client refused the certificate
            with self.handshakes:
                self.handshake_errors.append(exc)
                self.handshakes.notify_all()
            return
        try:
            super().finish_request(wrapped, client_address)
        finally:
            self.shutdown_request(wrapped)

    def wait_for_handshake_errors(self, count: int) -> list[OSError]:
        """The failed handshakes once there are ``count`` (the server's side of a refusal
        may be seen a moment after the client gave up); a generous bound, never a timing
        assertion."""
        with self.handshakes:
            self.handshakes.wait_for(lambda: len(self.handshake_errors) >= count, timeout=10)
            return list(self.handshake_errors)


class WireServer:
    def __init__(self, replies: list[Reply], *, tls: ssl.SSLContext | None = None) -> None:
        self.replies = list(replies)
        self.requests: list[Captured] = []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the stdlib's name
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length)
                head = self.raw_requestline + bytes(self.headers)
                server.requests.append(
                    Captured(
                        raw=head + body,
                        path=self.path,
                        headers={k.lower(): v for k, v in self.headers.items()},
                        body=body,
                    )
                )
                reply = server.replies.pop(0) if server.replies else Reply(500, b"no reply left")
                if reply.hang:
                    server.release.wait(10)
                    return
                data = reply.payload()
                try:
                    self.send_response(reply.status)
                    for key, value in {"content-type": "application/json", **reply.headers}.items():
                        self.send_header(key, value)
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    if reply.trickle:
                        for i in range(len(data)):
                            if server.release.wait(reply.trickle):
                                return
                            self.wfile.write(data[i : i + 1])
                            self.wfile.flush()
                    else:
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = _Server(Handler, tls)
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        scheme = "http" if self.httpd.tls is None else "https"
        return f"{scheme}://{host!s}:{port}"

    def all_bytes(self) -> bytes:
        return b"\n".join(r.raw for r in self.requests)

    def __enter__(self) -> WireServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def serve(replies: list[Reply]) -> Iterator[WireServer]:
    with WireServer(replies) as server:
        yield server


def refused_url() -> str:
    """A loopback URL on which nothing listens (connection refused)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"


#: Request headers a proxy consumes instead of relaying (RFC 9110 7.6.1, plus the proxy's own).
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


class ForwardingProxy:
    """A minimal forwarding HTTP proxy on 127.0.0.1. It keeps every request it receives, as
    received: an absolute-form ``POST http://127.0.0.1:PORT/... HTTP/1.1`` is relayed to its
    target and the answer relayed back; a ``CONNECT host:port`` (what a client sends for an
    https:// target) is refused with ``connect_status``, so no tunnel is ever opened, unless
    ``tunnel`` is set: then a CONNECT to 127.0.0.1 opens the tunnel and relays its bytes both
    ways, keeping those the client sent in ``tunnelled``. With ``credentials``, a request without
    the matching ``Proxy-Authorization`` is answered 407. With ``tls``, clients reach the proxy
    itself over TLS (an ``https://`` proxy URL)."""

    def __init__(
        self,
        *,
        credentials: tuple[str, str] | None = None,
        connect_status: int = 403,
        tunnel: bool = False,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        if tunnel and tls is not None:
            # select() would not see bytes already decrypted into the TLS socket's buffer.
            raise ValueError("a tunnel through a TLS proxy is not supported here")
        self.requests: list[Captured] = []
        self.tunnelled = bytearray()
        expected = None
        if credentials is not None:
            expected = "Basic " + base64.b64encode(":".join(credentials).encode()).decode()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _record(self, body: bytes) -> None:
                proxy.requests.append(
                    Captured(
                        raw=self.raw_requestline + bytes(self.headers) + body,
                        path=self.path,
                        headers={k.lower(): v for k, v in self.headers.items()},
                        body=body,
                    )
                )

            def _answer(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(data)))
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = True

            def do_CONNECT(self) -> None:  # the stdlib's naming scheme
                self._record(b"")
                host, _, port = self.path.rpartition(":")
                if not tunnel or host != "127.0.0.1" or not port.isdigit():
                    self._answer(connect_status, b"", {})
                    return
                upstream = socket.create_connection((host, int(port)), timeout=10)
                self.send_response(200, "Connection established")
                self.end_headers()
                self.close_connection = True
                with upstream:
                    self._relay(upstream)

            def _relay(self, upstream: socket.socket) -> None:
                client = self.connection
                peer = {client: upstream, upstream: client}
                while True:
                    ready, _, _ = select.select(list(peer), [], [], 10)
                    if not ready:
                        return
                    for sock in ready:
                        try:
                            data = sock.recv(65536)
                        except OSError:
                            return
                        if not data:
                            return
                        if sock is client:
                            proxy.tunnelled += data
                        peer[sock].sendall(data)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                self._record(body)
                if expected is not None and self.headers.get("proxy-authorization") != expected:
                    self._answer(407, b"", {"proxy-authenticate": 'Basic realm="test"'})
                    return
                target = urllib.parse.urlsplit(self.path)
                if target.scheme != "http" or not target.hostname:
                    self._answer(400, b"not an absolute-form http:// request", {})
                    return
                forwarded = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                path = target.path + (f"?{target.query}" if target.query else "")
                conn = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=10)
                try:
                    conn.request("POST", path, body=body, headers=forwarded)
                    answer = conn.getresponse()
                    data = answer.read()
                    headers = {
                        k: v
                        for k, v in answer.getheaders()
                        if k.lower() not in _HOP_BY_HOP | {"content-length"}
                    }
                finally:
                    conn.close()
                self._answer(answer.status, data, headers)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = _Server(Handler, tls)
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        scheme = "http" if self.httpd.tls is None else "https"
        return f"{scheme}://127.0.0.1:{self.port}"

    def request_lines(self) -> list[bytes]:
        return [r.raw.split(b"\r\n", 1)[0] for r in self.requests]

    def all_bytes(self) -> bytes:
        return b"\n".join(r.raw for r in self.requests)

    def __enter__(self) -> ForwardingProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
