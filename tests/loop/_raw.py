"""A loopback TCP server that misbehaves the way real servers do: it reads a whole HTTP
request, then closes without answering, or sends the answer's headers and part of its body
before it closes the connection. It keeps the requests it received."""

from __future__ import annotations

import socket
import threading
from typing import Literal

Behaviour = Literal["close_before_answer", "close_mid_answer"]

#: What a broken answer claims to be (its Content-Length) and the part that is sent of it.
HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 4000\r\n"
    b"connection: keep-alive\r\n\r\n"
)
PART = b'{"choices": [{"message": {"role": "assistant", "content": "half an answ'


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


class BrokenServer:
    """Accepts connections on 127.0.0.1 and treats every request with ``behaviour``."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.requests: list[bytes] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(10)
                request = _read_request(conn)
                if not request:
                    continue
                self.requests.append(request)
                if self.behaviour == "close_before_answer":
                    continue
                # The headers and part of the body; then the connection closes (a server
                # that crashed, or a proxy that gave up, mid-answer).
                conn.sendall(HEAD + PART)

    def __enter__(self) -> BrokenServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.thread.join()
        self.sock.close()
