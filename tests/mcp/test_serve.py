"""``nr-llm mcp serve`` against real MCP clients: the SDK's client over stdio and Streamable
HTTP, and the official inspector CLI. Every byte the server sent is captured (the stdio pipe
through ``tee``, HTTP through a recording TCP proxy) and searched for the canaries of the
fixture tools' artifacts, exceptions and secret-adjacent output."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from nr_llm_core.audit import AgentRunPersister
from tests.mcp._support import (
    ARTIFACT_CANARY,
    EXCEPTION_CANARY,
    NR_LLM,
    SECRET_CANARY,
    RecordingProxy,
    free_port,
    http_server,
    make_site,
    node_env,
    node_tools,
    require_sdk,
    serve_env,
)
from tests.store._support import files_holding

require_sdk()

from mcp import Client, StdioServerParameters  # noqa: E402  # after the extra check
from mcp.shared.exceptions import MCPError  # noqa: E402  # after the extra check

CANARIES = (ARTIFACT_CANARY, EXCEPTION_CANARY, SECRET_CANARY)
PUBLIC_TOOLS = {
    "boom",
    "canary_table",
    "chatty",
    "json_schema_2020_12_tool",
    "sleepy",
    "test_error_handling",
    "test_image_content",
    "test_simple_text",
}


def _stdio(site: Path, wire: Path, *args: str, **env: str) -> StdioServerParameters:
    """``nr-llm mcp serve ARGS`` as a stdio server whose stdout is copied to ``wire`` on the
    way to the client (``tee``: every byte the client read)."""
    command = " ".join(shlex.quote(a) for a in (NR_LLM, "mcp", "serve", *args))
    return StdioServerParameters(
        command="/bin/sh",
        args=["-c", f"{command} | tee {shlex.quote(str(wire))}"],
        env=serve_env(site, **env),
    )


async def _exercise(client: Client) -> dict[str, Any]:
    """List the tools and make every kind of call; what the client got, by call."""
    seen: dict[str, Any] = {"tools": (await client.list_tools()).tools}
    for name, arguments in (
        ("canary_table", {"rows": 3}),
        ("test_image_content", {}),
        ("boom", {}),
        ("canary_table", {"rows": "three"}),
        ("test_error_handling", {}),
        ("chatty", {}),
        ("test_simple_text", None),
    ):
        seen[f"{name}:{arguments}"] = await client.call_tool(name, arguments)
    for hidden in ("secret_peek", "internal_note", "needs_approval", "no_such_tool"):
        with pytest.raises(MCPError) as caught:
            await client.call_tool(hidden, {})
        seen[hidden] = caught.value
    return seen


def _check_answers(seen: dict[str, Any]) -> None:
    tools = {t.name: t for t in seen["tools"]}
    assert set(tools) == PUBLIC_TOOLS
    assert tools["json_schema_2020_12_tool"].input_schema["$defs"]["address"]["type"] == "object"
    table = seen["canary_table:{'rows': 3}"]
    assert [(b.type, b.text) for b in table.content] == [("text", "3 rows")]
    assert table.structured_content is None and table.is_error is False
    image = seen["test_image_content:{}"]
    assert [(b.type, b.text) for b in image.content] == [("text", "an image was made")]
    boom = seen["boom:{}"]
    assert boom.is_error and boom.content[0].text == 'Error: tool "boom" failed.'
    bad = seen["canary_table:{'rows': 'three'}"]
    assert bad.is_error
    assert bad.content[0].text.startswith('Error: invalid arguments for tool "canary_table":')
    error = seen["test_error_handling:{}"]
    assert error.is_error and "intentionally" in error.content[0].text
    assert seen["chatty:{}"].content[0].text == "said something"
    assert seen["test_simple_text:None"].content[0].text.startswith("This is a simple text")
    # A hidden tool and a missing one get the same protocol error: -32602, the seam's words.
    for hidden in ("secret_peek", "internal_note", "needs_approval", "no_such_tool"):
        assert seen[hidden].code == -32602
        assert seen[hidden].message == f'Error: unknown tool "{hidden}"'


def test_stdio_the_sdk_client_gets_content_only_and_no_canary_byte(tmp_path: Path) -> None:
    """Over stdio: the external client sees the public tools only, each answer is one text
    block of ``content`` (never structuredContent), failures are the seam's words, a tool's
    print() does not corrupt the stream, and no canary is in any byte of stdout."""
    site, wire = make_site(tmp_path), tmp_path / "wire.bin"

    async def main() -> dict[str, Any]:
        async with Client(_stdio(site, wire)) as client:
            return await _exercise(client)

    seen = anyio.run(main)
    _check_answers(seen)
    raw = wire.read_bytes()
    assert b'"3 rows"' in raw  # the capture is the real stream
    for canary in CANARIES:
        assert canary.encode() not in raw
    for line in raw.splitlines():  # JSON-RPC only: the stray print went elsewhere
        assert json.loads(line)["jsonrpc"] == "2.0"


def test_streamable_http_the_sdk_client_gets_content_only_and_no_canary_byte(
    tmp_path: Path,
) -> None:
    """The same over Streamable HTTP, every response byte captured by a TCP proxy; each call
    is one run in the audit store with the MCP client's name as its origin, and at the
    default privacy level no canary is in the database files either."""
    site = make_site(tmp_path)
    port = free_port()
    proxy = RecordingProxy(port)
    # The client reaches the server through the proxy: its Host names the proxy's port.
    allowed = ("--allowed-host", f"127.0.0.1:{proxy.port}")
    try:
        with http_server(serve_env(site), *allowed, port=port) as served:

            async def main() -> dict[str, Any]:
                async with Client(f"http://127.0.0.1:{proxy.port}/mcp") as client:
                    return await _exercise(client)

            seen = anyio.run(main)
    finally:
        proxy.close()
    _check_answers(seen)
    raw = proxy.received
    assert b"3 rows" in raw
    for canary in CANARIES:
        assert canary.encode() not in raw
    db = Path(os.environ["NR_LLM_DB"])
    with AgentRunPersister(db) as store:
        runs = store.list_runs(limit=100)
        steps = [step for run in runs for step in store.steps(run["id"])]
    assert len(runs) == 11  # one per call, hidden and unknown tools included
    assert {run["status"] for run in runs} == {"completed"}
    metas = [run["meta"] for run in runs]
    assert {m["origin"] for m in metas} == {"mcp"}
    assert {m["mcp_client"] for m in metas} == {"mcp"}  # the SDK client's name
    assert {m["mcp_transport"] for m in metas} == {"streamable-http"}
    assert {step["kind"] for step in steps} == {"tool"}
    assert files_holding(db, CANARIES) == {}
    assert served.proc.returncode == 128 + signal.SIGTERM  # stopped cleanly by SIGTERM
    # The one traceback is the host's log of boom's exception (server-side, as for any tool);
    # stopping added none.
    assert served.stderr.count("Traceback") == 1
    assert "tool 'boom' raised: RuntimeError" in served.stderr


def test_the_trust_zone_and_the_approval_opt_in_widen_what_is_listed(tmp_path: Path) -> None:
    """A local client sees the secret-adjacent and internal tools too; needs_approval only
    with --allow-approval-tools."""
    site = make_site(tmp_path)

    async def listed(*args: str) -> set[str]:
        params = _stdio(site, tmp_path / "w.bin", "--no-record", *args)
        async with Client(params) as client:
            return {t.name for t in (await client.list_tools()).tools}

    local = anyio.run(listed, "--trust-zone", "local")
    assert local == PUBLIC_TOOLS | {"secret_peek", "internal_note"}
    hosted = anyio.run(listed, "--trust-zone", "private-hosted", "--allow-approval-tools")
    assert hosted == PUBLIC_TOOLS | {"internal_note", "needs_approval"}


def test_http_refuses_foreign_hosts_and_origins_and_requires_its_token(tmp_path: Path) -> None:
    """DNS rebinding protection: a foreign Host is 421, a foreign Origin 403. With
    NR_LLM_MCP_TOKEN set, a request without the bearer token is 401 and one with it works;
    binding beyond loopback without a token is refused before anything is served."""
    import httpx

    site = make_site(tmp_path)
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    bearer = {**headers, "Authorization": "Bearer s3cret-token"}
    token_env = serve_env(site, NR_LLM_MCP_TOKEN="s3cret-token")
    with http_server(token_env) as served, httpx.Client(timeout=10) as http:
        foreign_host = http.post(
            served.url, json=init, headers={**bearer, "Host": "evil.example:80"}
        )
        foreign_origin = http.post(
            served.url, json=init, headers={**bearer, "Origin": "http://evil.example"}
        )
        no_token = http.post(served.url, json=init, headers=headers)
        with_token = http.post(
            served.url, json=init, headers={**headers, "Authorization": "Bearer s3cret-token"}
        )
    assert foreign_host.status_code == 421
    assert foreign_origin.status_code == 403
    assert no_token.status_code == 401
    assert with_token.status_code == 200
    refused = subprocess.run(
        [NR_LLM, "mcp", "serve", "--transport", "streamable-http", "--host", "0.0.0.0"],
        env=serve_env(site),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2
    assert "NR_LLM_MCP_TOKEN" in refused.stderr


def test_stdio_ends_when_stdin_closes(tmp_path: Path) -> None:
    """Closing stdin ends the server with status 0; stdout holds nothing but JSON-RPC."""
    site = make_site(tmp_path)
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "pipe", "version": "1"},
        },
    }
    run = subprocess.run(
        [NR_LLM, "mcp", "serve", "--no-record"],
        input=json.dumps(request) + "\n",
        env=serve_env(site),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    answers = [json.loads(line) for line in run.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1]
    assert answers[0]["result"]["serverInfo"]["name"] == "nr-llm"


def test_the_inspector_cli_lists_and_calls_over_stdio(tmp_path: Path) -> None:
    """The official inspector CLI (npm) against ``nr-llm mcp serve`` over stdio: it lists the
    tools and calls one; its output holds the content and no canary."""
    tools = node_tools()
    site = make_site(tmp_path)
    inspector = (
        tools / "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
    )
    served_env = serve_env(site)
    # The inspector starts the server with a minimal environment plus what -e names.
    passed = []
    for name in ("PYTHONPATH", "NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "NR_LLM_PLUGINS"):
        passed += ["-e", f"{name}={served_env[name]}"]
    env = {**node_env(tools), "HOME": str(tmp_path)}

    def cli(*args: str) -> str:
        run = subprocess.run(
            [
                str(tools / "bin" / "node"),
                str(inspector),
                "--cli",
                *passed,
                *args,
                "--",
                NR_LLM,
                "mcp",
                "serve",
                "--no-record",
            ],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        return run.stdout

    listed = json.loads(cli("--method", "tools/list"))
    assert {t["name"] for t in listed["tools"]} == PUBLIC_TOOLS
    called = cli("--method", "tools/call", "--tool-name", "canary_table", "--tool-arg", "rows=2")
    answer = json.loads(called)
    assert answer["content"] == [{"type": "text", "text": "2 rows"}]
    assert "structuredContent" not in answer
    for canary in CANARIES:
        assert canary not in called
