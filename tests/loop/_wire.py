"""A local HTTP server on 127.0.0.1 that plays recorded provider answers and keeps every byte
of every request it receives, and a forwarding proxy that does the same in front of it."""

from __future__ import annotations

import base64
import http.client
import json
import socket
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


class WireServer:
    def __init__(self, replies: list[Reply]) -> None:
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

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

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
    https:// target) is refused with ``connect_status``, so no tunnel is ever opened. With
    ``credentials``, a request without the matching ``Proxy-Authorization`` is answered 407."""

    def __init__(
        self, *, credentials: tuple[str, str] | None = None, connect_status: int = 403
    ) -> None:
        self.requests: list[Captured] = []
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
                self._answer(connect_status, b"", {})

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

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

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
