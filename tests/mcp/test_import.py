"""MCP servers declared in the configuration file, imported as tools: a real third-party server
(``@modelcontextprotocol/server-everything`` from npm), a server built on the official SDK
that returns every kind of non-text content with a canary, a hand-written hostile server, and
``nr-llm mcp serve`` itself over Streamable HTTP with a token. Imported tools run through the
same seam, loop and audit store; no non-text byte reaches a provider."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nr_llm_core import AgentRunPersister, OpenAIChatProvider, ToolHost, ToolLoop
from nr_llm_core.cli._session import open_host
from nr_llm_core.config import load_config
from nr_llm_core.errors import ConfigurationError
from nr_llm_core.results import ArtifactType
from tests.loop._wire import WireServer, refused_url
from tests.loop.test_openai_wire import text_reply, tool_call_reply
from tests.mcp._support import (
    NR_LLM,
    FloodingHttpServer,
    RecordingProxy,
    free_port,
    http_server,
    make_site,
    node_tools,
    require_sdk,
    serve_env,
)
from tests.store._support import files_holding

require_sdk()

HERE = Path(__file__).resolve().parent
CANARY = "CANARY-MCP-IMPORT-4e7d"
KEY_CANARY = "sk-CANARY-host-key-0c1d"
PNG_BASE64 = b"iVBORw0KGgo"  # how every PNG's base64 starts


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def _toml_list(items: list[str]) -> str:
    return json.dumps(items)


@pytest.fixture
def no_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the imported tools: no builtin or other installed tool is loaded."""
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")


@pytest.fixture
def everything() -> list[str]:
    """The command of the reference "everything" server over stdio."""
    tools = node_tools()
    server = tools / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    return [str(tools / "bin" / "node"), str(server), "stdio"]


@pytest.fixture
def host_of(tmp_path: Path, no_entry_points: None) -> Iterator[object]:
    """``host_of(toml)``: the host every command builds from that configuration (closed
    after the test)."""
    hosts: list[ToolHost] = []

    def build(text: str) -> ToolHost:
        host = open_host(load_config(_config(tmp_path, text)))
        hosts.append(host)
        return host

    yield build
    for host in hosts:
        host.close()


def test_server_everything_runs_through_the_seam_with_a_scrubbed_environment(
    host_of: object, everything: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference server's tools are ``everything__<tool>``; text is content; its image
    and structured content are artifacts (type, MIME type, size; the JSON), never content; an
    isolated server sees no provider key of the host."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY_CANARY)
    host = host_of(  # type: ignore[operator]
        f'[mcp.servers.everything]\ncommand = {_toml_list(everything)}\ndata_class = "public"\n'
    )
    assert host.load_errors == ()
    assert "everything__echo" in host.names()
    assert host.distribution("everything__echo") == "mcp:everything"
    assert not host.is_isolated("everything__echo")
    assert host.invoke("everything__echo", {"message": "hi"}).content == "Echo: hi"

    image = host.invoke("everything__get-tiny-image", {})
    assert not image.is_error
    assert PNG_BASE64.decode() not in image.content
    assert "1 image, kept out of the conversation" in image.content
    (kept,) = image.artifacts
    assert kept.type is ArtifactType.TABLE
    assert kept.data["columns"] == ["type", "mime_type", "bytes", "uri"]
    ((kind, mime, size, _uri),) = kept.data["rows"]
    assert (kind, mime) == ("image", "image/png") and int(size) > 1000

    structured = host.invoke("everything__get-structured-content", {"location": "New York"})
    (data,) = structured.artifacts
    assert data.type is ArtifactType.TEXT and "temperature" in json.loads(data.data["text"])

    env = host.invoke("everything__get-env", {})
    assert KEY_CANARY not in env.content
    assert "OPENAI_API_KEY" not in json.loads(env.content)

    bad = host.invoke("everything__get-sum", {"a": "one", "b": 2})
    assert bad.is_error and bad.content.startswith("Error: invalid arguments")


def test_no_non_text_byte_reaches_a_provider_and_the_store_keeps_none_at_metadata(
    host_of: object, everything: list[str], tmp_path: Path
) -> None:
    """A ToolLoop over a loopback OpenAI-wire server calls the SDK canary server's report and
    the reference server's image: every provider request byte is free of the canary (in
    structuredContent, an image, audio, a resource, a resource link) and of PNG data; the
    trace holds them as artifacts; the audit database files do not at METADATA."""
    canary_command = [sys.executable, str(HERE / "canary_server.py"), CANARY]
    host = host_of(  # type: ignore[operator]
        f'[mcp.servers.canary]\ncommand = {_toml_list(canary_command)}\ndata_class = "public"\n'
        f'[mcp.servers.everything]\ncommand = {_toml_list(everything)}\ndata_class = "public"\n'
    )
    assert host.load_errors == ()
    replies = [
        tool_call_reply(
            ("c1", "canary__report", '{"rows": 3}'),
            ("c2", "everything__get-tiny-image", "{}"),
        ),
        text_reply("done"),
    ]
    db = tmp_path / "audit.db"
    with WireServer(replies) as server, AgentRunPersister(db) as store:
        provider = OpenAIChatProvider(f"{server.url}/v1", "gpt-4o-mini", "sk-test", max_retries=0)
        result = ToolLoop(provider, host, persister=store).run("report")
        provider.close()
    assert result.content == "done"
    sent = server.all_bytes()
    assert b"3 rows found" in sent  # the text blocks did go
    assert CANARY.encode() not in sent
    assert PNG_BASE64 not in sent
    report = result.invocations[0].result
    labels = [a.label for a in report.artifacts]
    assert labels == ["MCP structured content", "MCP content kept out of the conversation"]
    table, kept = report.artifacts
    assert table.data["columns"] == ["id", "secret"]
    assert table.data["rows"][0] == ["0", f"{CANARY}-0"]
    assert [row[0] for row in kept.data["rows"]] == ["image", "audio", "resource", "resource_link"]
    assert files_holding(db, [CANARY]) == {}


def test_a_hostile_server_gets_error_results_never_a_crashed_host(
    host_of: object, tmp_path: Path
) -> None:
    """Tools with names, schemas too deep or too large, or remote references are load errors
    (the reference is never fetched); a server that hangs is killed with its process group at
    the deadline and the call is ``timed out.``; one that dies, floods, lies or refuses is
    ``failed.``; after each, the next call reconnects and works."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    ref_url = f"http://127.0.0.1:{listener.getsockname()[1]}/schema.json"
    pidfile = tmp_path / "pids"
    command = [sys.executable, str(HERE / "hostile_server.py"), str(pidfile)]
    host = host_of(  # type: ignore[operator]
        f"[mcp.servers.hostile]\ncommand = {_toml_list(command)}\n"
        f'timeout = 3\ndata_class = "public"\nenv = {{ HOSTILE_REF_URL = "{ref_url}" }}\n'
    )
    refused = {e.entry_point: e.reason for e in host.load_errors}
    assert set(refused) == {None, "hostile__deep", "hostile__huge", "hostile__remote_ref"}
    assert "'bad.name'" in refused[None]
    assert "nests deeper than 32" in refused["hostile__deep"]
    assert "over 65536 bytes" in refused["hostile__huge"]
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing ever connected for the $ref
    listener.close()

    assert host.invoke("hostile__ok", {}).content == "fine"
    started = time.monotonic()
    hung = host.invoke("hostile__hang", {})
    assert hung.content == 'Error: tool "hostile__hang" timed out.'
    assert time.monotonic() - started < 20
    for pid in map(int, pidfile.read_text().split()):
        assert _dies(pid), pid  # the server and the child it started: the group is gone
    for name in ("die", "flood", "lie", "refuse"):
        answer = host.invoke(f"hostile__{name}", {})
        assert answer.content == f'Error: tool "hostile__{name}" failed.', name
        assert host.invoke("hostile__ok", {}).content == "fine", name


def _dies(pid: int) -> bool:
    """Whether ``pid`` is gone (or a zombie) within 5 s: SIGKILL is delivered, not instant."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().split(")")[-1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def test_an_nr_llm_server_over_http_imported_with_its_token_and_no_ambient_proxy(
    host_of: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``nr-llm mcp serve`` over Streamable HTTP, imported by URL with the token from the
    variable the configuration names; the environment's proxies (a dead port) are not used.
    Without the token the server refuses, and that is a load error."""
    site = make_site(tmp_path)
    dead = refused_url()
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, dead)
    monkeypatch.setenv("FIXTURES_TOKEN", "t0ken-for-the-test")
    with http_server(serve_env(site, NR_LLM_MCP_TOKEN="t0ken-for-the-test")) as served:
        table = (
            f'[mcp.servers.fixtures]\nurl = "{served.url}"\ndata_class = "public"\n'
            'trust_zone = "local"\n'
        )
        host = host_of(table + 'token_env = "FIXTURES_TOKEN"\n')  # type: ignore[operator]
        assert host.load_errors == ()
        answer = host.invoke("fixtures__canary_table", {"rows": 2})
        assert answer.content == "2 rows" and answer.artifacts == ()
        # The server's own error text (it is nr-llm, so its seam's words for its tool).
        assert host.invoke("fixtures__boom", {}).content == 'Error: tool "boom" failed.'
        # What the serving side hides from an external client is not imported either.
        assert "fixtures__needs_approval" not in host.names()
        assert "fixtures__secret_peek" not in host.names()
        host.close()
        without = host_of(table)  # type: ignore[operator]
        assert without.names() == []
        (error,) = without.load_errors
        assert error.distribution == "mcp:fixtures"
        assert "could not list its tools" in error.reason


def test_an_https_server_is_trusted_by_certifi_and_the_named_bundle_only(
    host_of: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An MCP server behind TLS with a certificate of a company CA: refused while only
    SSL_CERT_FILE names that CA (the providers' rule: it is never read), imported when the
    table's ca_bundle names it."""
    from tests.loop._pki import Pki

    pki = Pki(tmp_path)
    site = make_site(tmp_path)
    port = free_port()
    proxy = RecordingProxy(port, tls=pki.server_context())
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.internal_file))
    url = f"https://127.0.0.1:{proxy.port}/mcp"
    table = f'[mcp.servers.tls]\nurl = "{url}"\ndata_class = "public"\ntrust_zone = "local"\n'
    try:
        allowed = ("--allowed-host", f"127.0.0.1:{proxy.port}")
        with http_server(serve_env(site), *allowed, port=port):
            untrusted = host_of(table)  # type: ignore[operator]
            assert untrusted.names() == []
            assert proxy.refused_handshakes() >= 1
            trusted = host_of(table + f'ca_bundle = "{pki.internal_file}"\n')  # type: ignore[operator]
            assert trusted.load_errors == ()
            assert trusted.invoke("tls__test_simple_text", {}).content.startswith("This is")
    finally:
        proxy.close()


def test_an_http_server_cannot_fill_the_host_memory_with_one_answer(host_of: object) -> None:
    """An answer over the 16 MiB read cap ends as a ``failed.`` call (without the cap the SDK
    would read all 20 MiB and the seam would merely cut it); the next call reconnects."""
    with FloodingHttpServer() as server:
        host = host_of(  # type: ignore[operator]
            f'[mcp.servers.flood]\nurl = "{server.url}"\ndata_class = "public"\n'
            'trust_zone = "local"\n'
        )
        assert host.load_errors == ()
        assert host.invoke("flood__flood", {}).content == 'Error: tool "flood__flood" failed.'
        assert host.invoke("flood__ok", {}).content == "fine"


def test_nr_llm_run_and_tools_list_use_imported_tools(
    tmp_path: Path, everything: list[str]
) -> None:
    """The CLI's commands build the same host: ``tools list`` names the imported tools and
    ``nr-llm run`` with a scripted model calls one through the loop."""
    config = _config(
        tmp_path,
        f'[mcp.servers.everything]\ncommand = {_toml_list(everything)}\ndata_class = "public"\n',
    )
    script = tmp_path / "script.json"
    turn = {
        "content": "",
        "tool_calls": [
            {"id": "e1", "name": "everything__echo", "arguments": {"message": "from the loop"}}
        ],
    }
    script.write_text(json.dumps([turn, "echoed"]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env["NR_LLM_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["NR_LLM_DB"] = str(tmp_path / "audit.db")
    listed = subprocess.run(
        [NR_LLM, "tools", "--config", str(config), "list", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["everything__echo"]["distribution"] == "mcp:everything"
    ran = subprocess.run(
        [NR_LLM, "run", "echo it", "--script", str(script), "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert "echoed" in ran.stdout and "everything__echo" in ran.stdout


def test_the_configuration_checks_every_mcp_server(tmp_path: Path) -> None:
    """A server needs exactly one of command and url; unknown keys, bad names, zones and
    types are refused naming the table; a URL server is external and needs approval unless
    it says otherwise, a command is local and does not."""
    bad = {
        "[mcp.servers.x]\n": "needs either command",
        '[mcp.servers.x]\ncommand = ["a"]\nurl = "http://h/mcp"\n': "needs either command",
        '[mcp.servers.x]\ncommand = ["a"]\ncolor = 1\n': "unknown key 'color'",
        '[mcp.servers."a.b"]\ncommand = ["a"]\n': "letters, digits and '-'",
        '[mcp.servers.x]\nurl = "ftp://user:pw@h/"\n': "must start with http",
        '[mcp.servers.x]\ncommand = ["a"]\ntrust_zone = "mars"\n': "trust_zone must be",
        '[mcp.servers.x]\ncommand = ["a"]\nproxy = "http://p:1"\n': "for a server with a url",
        "[mcp]\nother = 1\n": "only [mcp.servers.<name>]",
    }
    for text, words in bad.items():
        with pytest.raises(ConfigurationError) as caught:
            load_config(_config(tmp_path, text))
        assert words in str(caught.value), text
        assert "pw@" not in str(caught.value)
    config = load_config(
        _config(
            tmp_path,
            '[mcp.servers.remote]\nurl = "https://h.example/mcp"\n'
            '[mcp.servers.local]\ncommand = ["srv"]\ntimeout = 5\n',
        )
    )
    local, remote = config.mcp_servers
    assert (remote.trust_zone, remote.requires_approval) == ("external", True)
    assert (local.trust_zone, local.requires_approval, local.timeout) == ("local", False, 5.0)


def test_without_the_extra_each_server_is_a_load_error(
    tmp_path: Path, no_entry_points: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the SDK cannot be imported, every declared server is a load error naming the
    extra to install, and the other tools load."""
    monkeypatch.setitem(sys.modules, "nr_llm_core.mcp.client", None)
    config = load_config(_config(tmp_path, '[mcp.servers.x]\ncommand = ["srv"]\n'))
    with open_host(config) as host:
        (error,) = host.load_errors
    assert error.distribution == "mcp:x"
    assert "pip install 'nr-llm[mcp]'" in error.reason
