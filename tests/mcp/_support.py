"""Shared pieces of the MCP tests: a real tool distribution with the conformance suite's fixture
tools and canary tools, the Node tools of ``scripts/mcp-node``, and ``nr-llm mcp serve`` run in
its own process."""

from __future__ import annotations

import json
import os
import re
import socket
import ssl
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NR_LLM = str(Path(sys.executable).with_name("nr-llm"))

#: Run-only data of the fixture tools: it must never appear in any MCP response byte.
ARTIFACT_CANARY = "CANARY-ARTIFACT-5b1f0e"
#: What a fixture tool's exception says: never in a response either.
EXCEPTION_CANARY = "CANARY-EXCEPTION-93ac21"
#: The output of the secret-adjacent tool, which an external client may not even see listed.
SECRET_CANARY = "CANARY-SECRET-77d0b2"

FIXTURE_MODULE = f'''
import time

from nr_llm_core import Artifact, ToolResult, ToolSpec, hookimpl

EMPTY = {{"type": "object", "properties": {{}}}}


class _Tool:
    name = ""
    description = ""
    parameters = EMPTY
    data_class = "public"
    requires_approval = False

    @hookimpl
    def tool_spec(self):
        return ToolSpec(
            self.name,
            self.description,
            self.parameters,
            data_class=self.data_class,
            requires_approval=self.requires_approval,
        )


class SimpleText(_Tool):
    name = "test_simple_text"
    description = "Returns simple text (the conformance suite's fixture)."

    @hookimpl
    def execute(self, arguments):
        return ToolResult.text("This is a simple text response for testing.")


class ErrorHandling(_Tool):
    name = "test_error_handling"
    description = "Always returns an error result (the conformance suite's fixture)."

    @hookimpl
    def execute(self, arguments):
        return ToolResult.error("This tool intentionally returns an error for testing")


class JsonSchema(_Tool):
    name = "json_schema_2020_12_tool"
    description = "Tool with JSON Schema 2020-12 features"
    parameters = {{
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {{
            "address": {{
                "type": "object",
                "properties": {{"street": {{"type": "string"}}, "city": {{"type": "string"}}}},
            }}
        }},
        "properties": {{"name": {{"type": "string"}}, "address": {{"$ref": "#/$defs/address"}}}},
        "additionalProperties": False,
    }}

    @hookimpl
    def execute(self, arguments):
        return ToolResult.text("name: " + str(arguments.get("name")))


class ImageContent(_Tool):
    name = "test_image_content"
    description = "An image the model must not see: nr-llm keeps it as an artifact."

    @hookimpl
    def execute(self, arguments):
        return ToolResult.text(
            "an image was made",
            Artifact.text("image {ARTIFACT_CANARY}", "iVBORw0KGgo {ARTIFACT_CANARY}"),
        )


class CanaryTable(_Tool):
    name = "canary_table"
    description = "Rows for people, a summary for the model."
    parameters = {{
        "type": "object",
        "properties": {{"rows": {{"type": "integer", "minimum": 0, "maximum": 100}}}},
        "required": ["rows"],
    }}

    @hookimpl
    def execute(self, arguments):
        rows = [["{ARTIFACT_CANARY}-" + str(i), "x"] for i in range(arguments["rows"])]
        return ToolResult.text(
            str(arguments["rows"]) + " rows",
            Artifact.table("{ARTIFACT_CANARY} table", ["{ARTIFACT_CANARY}", "b"], rows),
            Artifact.text("note", "{ARTIFACT_CANARY} text"),
        )


class Boom(_Tool):
    name = "boom"
    description = "Raises."

    @hookimpl
    def execute(self, arguments):
        raise RuntimeError("{EXCEPTION_CANARY}")


class Sleepy(_Tool):
    name = "sleepy"
    description = "Sleeps."
    parameters = {{"type": "object", "properties": {{"seconds": {{"type": "number"}}}}}}

    @hookimpl
    def execute(self, arguments):
        time.sleep(arguments.get("seconds", 0))
        return ToolResult.text("awake")


class Chatty(_Tool):
    name = "chatty"
    description = "Prints to stdout before answering."

    @hookimpl
    def execute(self, arguments):
        print("stray output on stdout")
        return ToolResult.text("said something")


class SecretPeek(_Tool):
    name = "secret_peek"
    description = "Returns secret-adjacent data."
    data_class = "secret-adjacent"

    @hookimpl
    def execute(self, arguments):
        return ToolResult.text("{SECRET_CANARY}")


class InternalNote(_Tool):
    name = "internal_note"
    description = "Returns internal data."
    data_class = "internal"

    @hookimpl
    def execute(self, arguments):
        return ToolResult.text("internal")


class NeedsApproval(_Tool):
    name = "needs_approval"
    description = "Changes something: requires approval."
    requires_approval = True

    @hookimpl
    def execute(self, arguments):
        return ToolResult.text("changed")
'''

#: tool name -> class in the fixture module.
FIXTURE_TOOLS: Mapping[str, str] = {
    "test_simple_text": "SimpleText",
    "test_error_handling": "ErrorHandling",
    "json_schema_2020_12_tool": "JsonSchema",
    "test_image_content": "ImageContent",
    "canary_table": "CanaryTable",
    "boom": "Boom",
    "sleepy": "Sleepy",
    "chatty": "Chatty",
    "secret_peek": "SecretPeek",
    "internal_note": "InternalNote",
    "needs_approval": "NeedsApproval",
}


def make_site(root: Path) -> Path:
    """A site folder holding a real distribution with the fixture tools."""
    site = root / "site"
    info = site / "nr_llm_mcp_fixtures-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: nr-llm-mcp-fixtures\nVersion: 1.0\n"
    )
    points = "".join(f"{n} = nr_llm_mcp_fixtures:{c}\n" for n, c in FIXTURE_TOOLS.items())
    (info / "entry_points.txt").write_text("[nr_llm.tool]\n" + points)
    (info / "RECORD").write_text("")
    (site / "nr_llm_mcp_fixtures.py").write_text(textwrap.dedent(FIXTURE_MODULE))
    return site


def serve_env(site: Path, *, only_fixtures: bool = True, **extra: str) -> dict[str, str]:
    """The environment of ``nr-llm mcp serve``: the fixture distribution importable, no
    NR_LLM_* from outside but the audit store of the test, and (``only_fixtures``) no other
    tool loaded."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env["NR_LLM_DB"] = os.environ["NR_LLM_DB"]
    env["PYTHONPATH"] = str(site)
    if only_fixtures:
        env["NR_LLM_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        env["NR_LLM_PLUGINS"] = ",".join(FIXTURE_TOOLS)
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    """A running ``nr-llm mcp serve``: its URL and process; once stopped, what it printed."""

    url: str
    proc: subprocess.Popen[str]
    stdout: str = ""
    stderr: str = ""


@contextmanager
def http_server(env: Mapping[str, str], *args: str, port: int | None = None) -> Iterator[Served]:
    """``nr-llm mcp serve --transport streamable-http`` on a free loopback port. Stopped with
    SIGTERM when the block ends (unless it already ended); the test then reads its output."""
    port = port or free_port()
    proc = subprocess.Popen(
        [NR_LLM, "mcp", "serve", "--transport", "streamable-http", "--port", str(port), *args],
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    served = Served(f"http://127.0.0.1:{port}/mcp", proc)
    try:
        _wait_for_port(port, proc)
        yield served
    finally:
        if proc.poll() is None:
            proc.terminate()
        try:
            served.stdout, served.stderr = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            served.stdout, served.stderr = proc.communicate()


def _wait_for_port(port: int, proc: subprocess.Popen[str], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("nr-llm mcp serve exited before it listened")
        with socket.socket() as sock:
            sock.settimeout(0.2)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("nr-llm mcp serve did not start listening")


def require_sdk() -> None:
    """Skip a module when the mcp extra is missing, outside CI; in CI (``CI`` set, as
    ``.ci/run`` runs) a missing extra is an error, never a skip."""
    if os.environ.get("CI"):
        import mcp  # noqa: F401  # an ImportError here fails the module in CI
    else:
        pytest.importorskip("mcp", reason="the mcp extra is not installed")


def node_tools() -> Path:
    """The folder ``scripts/mcp-node`` installed (bin/node, node_modules/), installing it when
    missing. In CI a failure fails the test; elsewhere it skips with the reason."""
    try:
        out = subprocess.run(
            [str(ROOT / "scripts" / "mcp-node")],
            capture_output=True,
            text=True,
            timeout=900,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        reason = f"scripts/mcp-node could not install Node and the MCP npm packages: {detail}"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return Path(out.stdout.strip().splitlines()[-1])


def node_env(tools: Path) -> dict[str, str]:
    """An environment whose ``node`` is the installed one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env["PATH"] = f"{tools / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


ANSI = re.compile(r"\x1b\[[0-9;]*m")


class RecordingProxy:
    """A TCP proxy on 127.0.0.1 that forwards to ``port`` and keeps every byte the server sent
    back: the raw HTTP responses, SSE streams included, as a client received them. With
    ``tls`` (a server-side context) it terminates TLS in front of the plain server; a failed
    handshake is counted in ``handshake_failures``."""

    def __init__(self, port: int, tls: ssl.SSLContext | None = None) -> None:
        self.target = port
        self.tls = tls
        self.handshake_failures = 0
        self._failed = threading.Condition()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port: int = self.listener.getsockname()[1]
        self._received: list[bytes] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._open: list[socket.socket] = []
        self._stopped = False
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self._threads.append(accept)

    @property
    def received(self) -> bytes:
        """Every byte the server sent so far."""
        with self._lock:
            return b"".join(self._received)

    def refused_handshakes(self, timeout: float = 30.0) -> int:
        """The failed handshakes once at least one is counted (or ``timeout`` passed): the
        client gives up on a certificate before this side's handshake has read its alert."""
        with self._failed:
            self._failed.wait_for(lambda: self.handshake_failures >= 1, timeout=timeout)
            return self.handshake_failures

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.tls is not None:
                try:
                    client = self.tls.wrap_socket(client, server_side=True)
                except (OSError, ssl.SSLError):
                    with self._failed:
                        self.handshake_failures += 1
                        self._failed.notify_all()
                    client.close()
                    continue
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self._open += [client, upstream]
            for src, dst, keep in ((client, upstream, False), (upstream, client, True)):
                pump = threading.Thread(target=self._pump, args=(src, dst, keep), daemon=True)
                pump.start()
                self._threads.append(pump)

    def _pump(self, src: socket.socket, dst: socket.socket, keep: bool) -> None:
        try:
            while data := src.recv(65536):
                if keep:
                    with self._lock:
                        self._received.append(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Stop accepting and close every connection."""
        self._stopped = True
        self.listener.close()
        for sock in self._open:
            sock.close()
        for thread in self._threads:
            thread.join(5)


class FloodingHttpServer:
    """A Streamable HTTP MCP server written by hand on 127.0.0.1: it lists ``ok`` and
    ``flood``, and answers ``flood`` with one JSON body of ``flood_bytes`` (a server trying to
    fill the host's memory)."""

    def __init__(self, flood_bytes: int = 20 * 1024 * 1024) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        outer = self
        self.flood_bytes = flood_bytes
        self.sent = 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the stdlib's name
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                if "id" not in body:
                    self.send_response(202)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                self._answer(body["id"], body["method"], body.get("params") or {})

            def do_GET(self) -> None:  # no standalone stream
                self.send_response(405)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_DELETE(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def _answer(self, request_id: object, method: str, params: dict) -> None:
                if method == "initialize":
                    result: object = {
                        "protocolVersion": params["protocolVersion"],
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "flooding", "version": "1"},
                    }
                elif method == "tools/list":
                    schema = {"type": "object", "properties": {}}
                    result = {
                        "tools": [
                            {"name": n, "description": n, "inputSchema": schema}
                            for n in ("ok", "flood")
                        ]
                    }
                elif method == "tools/call" and params.get("name") == "flood":
                    self._flood(request_id)
                    return
                elif method == "tools/call":
                    result = {"content": [{"type": "text", "text": "fine"}]}
                else:
                    error = {"code": -32601, "message": "Method not found"}
                    self._json({"jsonrpc": "2.0", "id": request_id, "error": error})
                    return
                self._json({"jsonrpc": "2.0", "id": request_id, "result": result})

            def _json(self, message: object) -> None:
                data = json.dumps(message).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _flood(self, request_id: object) -> None:
                head = b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode()
                head += b',"result":{"content":[{"type":"text","text":"'
                tail = b'"}]}}'
                size = outer.flood_bytes
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(head) + size + len(tail)))
                self.end_headers()
                try:
                    self.wfile.write(head)
                    chunk = b"x" * 65536
                    for _ in range(size // len(chunk)):
                        self.wfile.write(chunk)
                        outer.sent += len(chunk)
                    self.wfile.write(tail)
                except OSError:
                    pass

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/mcp"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FloodingHttpServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
