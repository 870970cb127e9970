"""A local HTTP server on 127.0.0.1 that plays recorded provider answers and keeps every byte
of every request it receives."""

from __future__ import annotations

import json
import socket
import threading
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
