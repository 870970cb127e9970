"""A stand-in for an OpenAI-compatible model server on 127.0.0.1, for the README walkthrough.

It speaks the ``/chat/completions`` wire as OpenAI does and plays one conversation: asked with
a tool on offer and no tool result yet, it calls that tool with ``arguments``; given the tool's
result, it answers with ``answer.format(result=...)``, built from what the tool returned. It
keeps every request (path, headers, parsed body) for the test to inspect.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

__all__ = ["ModelServer", "Request"]


@attrs.frozen
class Request:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def _completion(message: dict[str, Any], finish_reason: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-readme",
            "object": "chat.completion",
            "created": 1727000000,
            "model": "stand-in",
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
        }
    ).encode()


class ModelServer:
    """``with ModelServer(tool, arguments, answer) as server:`` serves on ``server.url``."""

    def __init__(self, tool: str, arguments: dict[str, Any], answer: str) -> None:
        self.requests: list[Request] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the stdlib's name
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
                outer.requests.append(
                    Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
                offered = [t["function"]["name"] for t in body.get("tools") or ()]
                if results:
                    reply = _completion(
                        {"role": "assistant", "content": answer.format(result=results[-1])},
                        "stop",
                    )
                elif tool in offered:
                    call = {
                        "id": "call_readme_1",
                        "type": "function",
                        "function": {"name": tool, "arguments": json.dumps(arguments)},
                    }
                    reply = _completion(
                        {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
                    )
                else:
                    reply = _completion(
                        {"role": "assistant", "content": f"no tool {tool} on offer"}, "stop"
                    )
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
