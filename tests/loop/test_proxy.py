"""``proxy=`` on the HTTP providers, over real HTTP on loopback: with it every request goes
through the named proxy; without it none does, whatever ``HTTP_PROXY``/``HTTPS_PROXY`` say; its
credentials reach the proxy and nowhere else."""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from nr_llm_core import AnthropicProvider, ChatMessage, OpenAIChatProvider, ToolLoop
from nr_llm_core.loop import TerminationReason
from nr_llm_core.providers._adapter import HttpProviderBase

from ._tools import make_host
from ._wire import ForwardingProxy, Reply, WireServer, refused_url
from .test_anthropic_wire import message_reply, text, tool_use
from .test_openai_wire import text_reply, tool_call_reply

KEY = "sk-test-PROXYKEY-5e2d"
USER = "proxy-user-CANARY"
PASSWORD = "proxy-pw-CANARY-7f3a"
AMBIENT = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def openai(base: str, **kw: Any) -> OpenAIChatProvider:
    return OpenAIChatProvider(f"{base}/v1", "gpt-4o-mini", KEY, max_retries=0, timeout=5.0, **kw)


def anthropic(base: str, **kw: Any) -> AnthropicProvider:
    return AnthropicProvider(
        "claude-3-5-sonnet-latest", KEY, base_url=base, max_retries=0, timeout=5.0, **kw
    )


# Each case: the provider, its endpoint path, and a tool round then a final answer.
CASES: dict[str, tuple[Callable[..., HttpProviderBase], str, list[Reply]]] = {
    "openai": (
        openai,
        "/v1/chat/completions",
        [tool_call_reply(("call_1", "lookup", '{"id": 42}')), text_reply("Ada Lovelace.")],
    ),
    "anthropic": (
        anthropic,
        "/v1/messages",
        [
            message_reply(tool_use("toolu_1", "lookup", {"id": 42}), stop="tool_use"),
            message_reply(text("Ada Lovelace.")),
        ],
    ),
}


def run(provider: HttpProviderBase) -> Any:
    with provider:
        return ToolLoop(provider, make_host()).run(  # type: ignore[arg-type]
            [ChatMessage.system("You help."), ChatMessage.user("who is customer 42?")]
        )


@pytest.fixture
def no_ambient_proxy(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (*AMBIENT, "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize("name", CASES)
def test_with_a_proxy_every_request_goes_through_it(name: str) -> None:
    make, path, replies = CASES[name]
    with WireServer(replies) as server, ForwardingProxy() as proxy:
        result = run(make(server.url, proxy=proxy.url))
    assert result.termination_reason is TerminationReason.COMPLETED, result.error
    assert result.content == "Ada Lovelace."
    # Both completions reached the proxy in absolute form, and only through it the server.
    target = f"POST {server.url}{path} HTTP/1.1".encode()
    assert proxy.request_lines() == [target, target]
    assert [r.raw.split(b"\r\n", 1)[0] for r in server.requests] == [
        f"POST {path} HTTP/1.1".encode()
    ] * 2
    assert proxy.requests[1].body == server.requests[1].body  # relayed unchanged
    assert "proxy-authorization" not in proxy.requests[0].headers


@pytest.mark.parametrize("name", CASES)
def test_without_a_proxy_no_request_goes_through_one(name: str) -> None:
    make, path, replies = CASES[name]
    with WireServer(replies) as server, ForwardingProxy() as proxy:
        result = run(make(server.url))
    assert result.termination_reason is TerminationReason.COMPLETED, result.error
    assert proxy.requests == []
    assert len(server.requests) == 2
    assert server.requests[0].raw.startswith(f"POST {path} HTTP/1.1".encode())


@pytest.mark.parametrize("name", CASES)
def test_ambient_proxy_variables_are_ignored(
    name: str, no_ambient_proxy: pytest.MonkeyPatch
) -> None:
    make, path, replies = CASES[name]
    with (
        WireServer([Reply(body={}), *replies]) as server,
        ForwardingProxy() as ambient,
        ForwardingProxy() as named,
    ):
        for var in AMBIENT:
            no_ambient_proxy.setenv(var, ambient.url)
        # The control: a client that reads its environment does go through that proxy, so
        # the variables would catch the provider's requests if it read them.
        with httpx.Client() as client:
            assert client.post(f"{server.url}/control", content=b"{}").status_code == 200
        assert ambient.request_lines() == [f"POST {server.url}/control HTTP/1.1".encode()]

        result = run(make(server.url))
        assert result.termination_reason is TerminationReason.COMPLETED, result.error
        assert len(ambient.requests) == 1  # only the control
        assert len(server.requests) == 3
        assert server.requests[1].raw.startswith(f"POST {path} HTTP/1.1".encode())  # direct
        # With a proxy named, the named one is used and the ambient one still is not.
        server.replies[:] = list(replies)
        result = run(make(server.url, proxy=named.url))
    assert result.termination_reason is TerminationReason.COMPLETED, result.error
    assert len(ambient.requests) == 1
    assert len(named.requests) == 2


@pytest.mark.parametrize("name", CASES)
def test_proxy_credentials_go_to_the_proxy_and_nowhere_else(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # httpx and httpcore log at DEBUG: none of it may hold them
    make, _, replies = CASES[name]
    with (
        WireServer(replies) as server,
        ForwardingProxy(credentials=(USER, PASSWORD)) as proxy,
    ):
        provider = make(server.url, proxy=f"http://{USER}:{PASSWORD}@127.0.0.1:{proxy.port}")
        shown = repr(provider)
        result = run(provider)
    assert result.termination_reason is TerminationReason.COMPLETED, result.error
    expected = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert [r.headers["proxy-authorization"] for r in proxy.requests] == [expected] * 2
    assert shown == (
        f"{type(provider).__name__}(model={provider.model!r}, api_key=<set>, "
        f"proxy='http://***@127.0.0.1:{proxy.port}')"
    )
    assert str(provider) == shown
    seen = shown + caplog.text + "".join(str(r.args) for r in caplog.records)
    assert caplog.records  # the capture works: httpx logged the requests
    assert USER not in seen
    assert PASSWORD not in seen


@pytest.mark.parametrize("name", CASES)
def test_wrong_proxy_credentials_fail_the_run_with_a_clear_reason(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    make, _, _ = CASES[name]
    with WireServer([]) as server, ForwardingProxy(credentials=(USER, "right")) as proxy:
        result = run(make(server.url, proxy=f"http://{USER}:{PASSWORD}@127.0.0.1:{proxy.port}"))
    assert result.termination_reason is TerminationReason.FAILED
    assert result.error is not None
    assert "the proxy refused the request" in result.error
    assert "HTTP 407 (proxy authentication required)" in result.error
    assert server.requests == []
    for shown in (result.error, caplog.text):
        assert USER not in shown
        assert PASSWORD not in shown


@pytest.mark.parametrize("name", CASES)
def test_an_unreachable_proxy_fails_the_run_without_its_credentials(name: str) -> None:
    make, _, _ = CASES[name]
    dead = refused_url().replace("http://", f"http://{USER}:{PASSWORD}@")
    with WireServer([]) as server:
        result = run(make(server.url, proxy=dead))
    assert result.termination_reason is TerminationReason.FAILED
    assert result.error is not None
    assert "through the proxy (ConnectError)" in result.error
    assert USER not in result.error
    assert PASSWORD not in result.error
    assert server.requests == []  # no fallback to a direct connection


@pytest.mark.parametrize("name", CASES)
def test_an_https_provider_is_reached_through_a_tunnel_the_proxy_cannot_read(
    name: str,
) -> None:
    # The real case: an https:// API behind a corporate proxy. The client asks the proxy for
    # a tunnel (CONNECT); the key and the conversation would travel inside TLS. This proxy
    # refuses the tunnel, so the run fails, having sent the proxy nothing but the host name.
    make, _, _ = CASES[name]
    host = "api.nr-llm-proxy-test.invalid"  # never resolved here: only the proxy sees it
    with ForwardingProxy() as proxy:
        result = run(make(f"https://{host}", proxy=proxy.url))
    assert result.termination_reason is TerminationReason.FAILED
    assert result.error is not None
    assert "through the proxy (ProxyError)" in result.error
    assert proxy.request_lines() == [f"CONNECT {host}:443 HTTP/1.1".encode()]
    assert KEY.encode() not in proxy.all_bytes()
    assert b"customer 42" not in proxy.all_bytes()


@pytest.mark.parametrize("name", CASES)
def test_a_plain_http_base_url_through_a_proxy_warns(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    make, _, _ = CASES[name]
    proxy = f"http://{USER}:{PASSWORD}@proxy.example:3128"
    with caplog.at_level(logging.WARNING, logger="nr_llm.providers"):
        make("https://api.example", proxy=proxy).close()
        make("http://api.example").close()
        assert caplog.records == []
        make("http://api.example", proxy=proxy).close()
    assert [r.getMessage() for r in caplog.records] == [
        f"the {'OpenAI-compatible' if name == 'openai' else 'Anthropic'} provider: the base "
        "URL is not https, so the proxy can read every request, API key included"
    ]


# Refused: each with credentials in it, which no message may repeat.
BAD = {
    "no scheme": f"{USER}:{PASSWORD}@proxy.example:3128",
    "ftp": f"ftp://{USER}:{PASSWORD}@proxy.example:21",
    "socks5": f"socks5://{USER}:{PASSWORD}@proxy.example:1080",
    "socks5h": f"socks5h://{USER}:{PASSWORD}@proxy.example:1080",
    "no host": f"http://{USER}:{PASSWORD}@:3128",
    "empty netloc": "http:///",
    "bad host": f"http://{USER}:{PASSWORD}@proxy!example:3128",
    "port 0": f"http://{USER}:{PASSWORD}@proxy.example:0",
    "port too big": f"http://{USER}:{PASSWORD}@proxy.example:65536",
    "port not a number": f"http://{USER}:{PASSWORD}@proxy.example:{PASSWORD}",
    "empty port": f"http://{USER}:{PASSWORD}@proxy.example:",
    "path": f"http://{USER}:{PASSWORD}@proxy.example:3128/{PASSWORD}",
    "query": f"http://{USER}:{PASSWORD}@proxy.example:3128?{PASSWORD}",
    "empty query": f"http://{USER}:{PASSWORD}@proxy.example:3128?",
    "fragment": f"http://{USER}:{PASSWORD}@proxy.example:3128#{PASSWORD}",
    "space": f"http://{USER}:{PASSWORD} @proxy.example:3128",
    "newline": f"http://{USER}:{PASSWORD}@proxy.example:3128\r\nX: {PASSWORD}",
    "non-ascii": f"http://{USER}:{PASSWORD}é@proxy.example:3128",
    "open bracket": f"http://{USER}:{PASSWORD}@[::1:3128",
    "ipv6 junk": f"http://{USER}:{PASSWORD}@[::1]x:3128",
    "empty": "",
}


@pytest.mark.parametrize("make", [openai, anthropic], ids=["openai", "anthropic"])
@pytest.mark.parametrize("url", BAD.values(), ids=BAD.keys())
def test_a_bad_proxy_url_is_refused_at_construction(
    make: Callable[..., HttpProviderBase], url: str
) -> None:
    with pytest.raises(ValueError, match="proxy") as info:
        make("https://api.example", proxy=url)
    message = str(info.value)
    assert USER not in message
    assert PASSWORD not in message
    assert "proxy.example" not in message  # no part of the URL at all
    assert info.value.__cause__ is None


def test_socks_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="SOCKS proxies are not supported"):
        openai("https://api.example", proxy="socks5://127.0.0.1:1080")


def test_a_proxy_that_is_not_a_string_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="the proxy URL must be a string"):
        openai("https://api.example", proxy=b"http://proxy.example:3128")


GOOD = {
    "http://proxy.example:3128": "http://proxy.example:3128",
    "https://proxy.example:8443": "https://proxy.example:8443",
    "HTTP://Proxy.Example:3128/": "http://Proxy.Example:3128",
    "http://proxy.example": "http://proxy.example",
    "http://10.0.0.1:8080": "http://10.0.0.1:8080",
    "http://[::1]:3128": "http://[::1]:3128",
    "http://[2001:db8::1]": "http://[2001:db8::1]",
    f"http://{USER}:{PASSWORD}@proxy.example:3128": "http://***@proxy.example:3128",
    f"http://{USER}@proxy.example:3128": "http://***@proxy.example:3128",
    f"http://{USER}:p%40ss%2F{PASSWORD}@proxy_1.example:3128": "http://***@proxy_1.example:3128",
}


@pytest.mark.parametrize("url", GOOD)
def test_an_accepted_proxy_url_is_one_httpx_uses(url: str) -> None:
    provider = openai("https://api.example", proxy=url)
    assert repr(provider).endswith(f", proxy={GOOD[url]!r})")
    assert USER not in repr(provider)
    assert PASSWORD not in repr(provider)
    client = provider._poster._http()
    try:
        (pattern, transport), *more = client._mounts.items()  # the proxy's transport
        assert more == []
        assert pattern.pattern == "all://"
        proxy_url = transport._pool._proxy_url  # type: ignore[attr-defined]
        assert proxy_url.scheme.decode() == url.split(":", 1)[0].lower()
        assert proxy_url.host.decode() in url.lower()
        assert PASSWORD.encode() not in bytes(proxy_url)
    finally:
        provider.close()


def test_without_a_proxy_the_client_has_none_and_repr_says_nothing() -> None:
    provider = anthropic("https://api.example")
    assert repr(provider) == ("AnthropicProvider(model='claude-3-5-sonnet-latest', api_key=<set>)")
    try:
        assert provider._poster._http()._mounts == {}
    finally:
        provider.close()
