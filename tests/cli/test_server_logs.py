"""The servers' log lines cannot drive the terminal: uvicorn's records (which can quote a
client's request path or header, or an exception's text in a traceback) go through the same
escaping as every other line the CLI writes.

Real processes: the CLI's logging set-up with the playground's and ``nr-llm mcp serve``'s uvicorn
servers built, and the two commands themselves hit over raw sockets with ESC and C1 sequences
in the request line and the headers.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
PATH = "/api/\x1b[2J\x1b]0;owned\x07\x9b31m"

_SCRIPT = textwrap.dedent(
    """
    import logging, sys
    from nr_llm_core.cli._output import log_visibly
    from nr_llm_core import ToolHost
    log_visibly()  # what `nr-llm` does first
    which = sys.argv[1]
    if which == "playground":
        from nr_llm_core.playground import PlaygroundServer
        from nr_llm_core.providers import ScriptedProvider
        server = PlaygroundServer(ToolHost(), providers={"s": lambda: ScriptedProvider([])})
    else:
        from nr_llm_core.mcp.serve import ToolServer
        from nr_llm_core.mcp.transports import HttpEndpoint
        server = HttpEndpoint(ToolServer(ToolHost()))
    # Every logger uvicorn writes through, as a record quoting a client's path would be.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi"):
        logging.getLogger(name).warning("request to %s failed", sys.argv[2])
    """
)


@pytest.mark.parametrize("which", ["playground", "mcp"])
def test_uvicorn_records_are_escaped_on_stderr(which: str, tmp_path: Path) -> None:
    """Tries to get a request path with ESC (clear screen, set the window title) and C1
    CSI bytes onto the terminal raw through any of uvicorn's loggers, once a server is built."""
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, which, PATH],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert not CONTROLS.search(done.stderr), repr(done.stderr)
    shown = "request to /api/\\x1b[2J\\x1b]0;owned\\x07\\x9b31m failed"
    assert done.stderr.count(shown) == 4, repr(done.stderr)


def _send(port: int, data: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        while sock.recv(65536):
            pass


def _hostile_requests(port: int) -> list[bytes]:
    host = f"127.0.0.1:{port}".encode()
    return [
        b"GET " + PATH.encode("latin-1") + b" HTTP/1.1\r\nHost: " + host + b"\r\n\r\n",
        b"GET /mcp%1b[2J%9b31m HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n",
        b"GET /mcp HTTP/1.1\r\nHost: evil\x9b31m:1\r\nConnection: close\r\n\r\n",
        b"GET /mcp HTTP/1.1\r\nHost: " + host + b"\r\nUpgrade: \x9b2J\r\n"
        b"Connection: upgrade, close\r\n\r\n",
    ]


@pytest.mark.parametrize("which", ["playground", "mcp"])
def test_the_commands_write_no_control_for_hostile_requests(which: str, tmp_path: Path) -> None:
    """Tries ESC and C1 sequences in the request line and headers against the real commands
    (some are refused by uvicorn's parser, some by the app, one logged with its Host): what
    the command writes on stderr has no control character."""
    env = {**os.environ, "HOME": str(tmp_path), "NR_LLM_DB": str(tmp_path / "audit.db")}
    command = [sys.executable, "-m", "nr_llm_core"]
    if which == "playground":
        command += ["playground", "--no-open"]
    else:
        command += ["mcp", "serve", "--transport", "streamable-http", "--port", "0"]
    with subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        try:
            stream = proc.stdout if which == "playground" else proc.stderr
            assert stream is not None
            deadline = time.monotonic() + 60
            port = None
            while port is None and time.monotonic() < deadline:
                found = re.search(rb"http://127\.0\.0\.1:(\d+)/", stream.readline())
                port = int(found.group(1)) if found else None
            assert port is not None
            for request in _hostile_requests(port):
                _send(port, request)
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=30)
    text = err.decode("utf-8", "replace")
    assert not CONTROLS.search(text), repr(text)
