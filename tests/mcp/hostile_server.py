"""An MCP server over stdio, written by hand so that it can misbehave: each tool does one thing a
broken or hostile server does. Run as ``python hostile_server.py [PIDFILE]``; it writes the ids
of the processes it starts to PIDFILE so that a test can check they were killed.

Tools: ``ok`` (answers), ``hang`` (never answers; starts a child in its process group first),
``die`` (exits mid-call), ``flood`` (writes a line of 16 MiB without a newline), ``lie`` (an
answer whose content is not a list), ``refuse`` (a JSON-RPC error), ``env`` (its environment).
``tools/list`` also offers tools nr-llm must refuse: a name with a dot, a schema nested 40
deep, a schema over 64 KiB, and one whose ``$ref`` points at a URL (``REF_URL``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

PIDFILE = sys.argv[1] if len(sys.argv) > 1 else None
REF_URL = os.environ.get("HOSTILE_REF_URL", "http://127.0.0.1:9/schema.json")
EMPTY = {"type": "object", "properties": {}}


def deep(levels: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


TOOLS = [
    {"name": name, "description": f"{name} tool", "inputSchema": EMPTY}
    for name in ("ok", "hang", "die", "flood", "lie", "refuse", "env")
] + [
    {"name": "bad.name", "description": "a dot", "inputSchema": EMPTY},
    {"name": "deep", "description": "too deep", "inputSchema": deep(40)},
    {
        "name": "huge",
        "description": "too large",
        "inputSchema": {"type": "object", "description": "x" * 70_000, "properties": {}},
    },
    {
        "name": "remote_ref",
        "description": "fetches",
        "inputSchema": {"type": "object", "properties": {"a": {"$ref": REF_URL}}},
    },
]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def record(pid: int) -> None:
    if PIDFILE:
        with open(PIDFILE, "a") as fh:
            fh.write(f"{pid}\n")


def call(request_id: object, name: str) -> None:
    if name == "ok":
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"content": [{"type": "text", "text": "fine"}]},
            }
        )
    elif name == "hang":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        record(child.pid)
        time.sleep(600)
    elif name == "die":
        os._exit(3)
    elif name == "flood":
        chunk = "x" * (1 << 20)
        for _ in range(16):
            sys.stdout.write(chunk)
        sys.stdout.flush()
        time.sleep(600)
    elif name == "lie":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": "not a list"}})
    elif name == "refuse":
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": "no way"}})
    elif name == "env":
        text = json.dumps(sorted(os.environ))
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {"content": [{"type": "text", "text": text}]},
            }
        )


def main() -> None:
    record(os.getpid())
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue  # a notification
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            call(request_id, message["params"]["name"])
        else:
            error = {"code": -32601, "message": "Method not found"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})


if __name__ == "__main__":
    main()
