"""``ca_bundle=`` on the HTTP providers, over real TLS on loopback: a server whose certificate an
internal authority signed is refused (before any request is sent) until that authority's
certificate is given; the default roots stay trusted beside it; ``SSL_CERT_FILE`` and
``SSL_CERT_DIR`` never count; a bad bundle is refused when the provider is built."""

from __future__ import annotations

import os
import ssl
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import certifi
import httpx
import pytest

from nr_llm_core import AnthropicProvider, ChatMessage, OpenAIChatProvider, ToolLoop
from nr_llm_core.loop import TerminationReason
from nr_llm_core.providers import _http
from nr_llm_core.providers._adapter import HttpProviderBase
from nr_llm_core.providers._http import check_ca_bundle, tls_context

from ._pki import Pki
from ._tools import make_host
from ._wire import ForwardingProxy, Reply, WireServer
from .test_anthropic_wire import message_reply, text, tool_use
from .test_openai_wire import text_reply, tool_call_reply

KEY = "sk-test-CABUNDLEKEY-91c4"
AMBIENT = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def openai(base: str, **kw: Any) -> OpenAIChatProvider:
    kw.setdefault("max_retries", 0)
    return OpenAIChatProvider(f"{base}/v1", "gpt-4o-mini", KEY, timeout=5.0, **kw)


def anthropic(base: str, **kw: Any) -> AnthropicProvider:
    kw.setdefault("max_retries", 0)
    return AnthropicProvider("claude-3-5-sonnet-latest", KEY, base_url=base, timeout=5.0, **kw)


# Each case: the provider, its endpoint path, its name in messages, and two turns.
CASES: dict[str, tuple[Callable[..., HttpProviderBase], str, str, list[Reply]]] = {
    "openai": (
        openai,
        "/v1/chat/completions",
        "the OpenAI-compatible provider",
        [tool_call_reply(("call_1", "lookup", '{"id": 42}')), text_reply("Ada Lovelace.")],
    ),
    "anthropic": (
        anthropic,
        "/v1/messages",
        "the Anthropic provider",
        [
            message_reply(tool_use("toolu_1", "lookup", {"id": 42}), stop="tool_use"),
            message_reply(text("Ada Lovelace.")),
        ],
    ),
}

UNTRUSTED = "is not signed by a trusted certificate authority"


def refused(name: str, url: str, problem: str = UNTRUSTED, via: str = "") -> str:
    """A run's error when the client refused the certificate of the server at ``url``: it
    names the endpoint (as errors show it), never anything the certificate says."""
    _, path, what, _ = CASES[name]
    return (
        f"provider error: could not reach {what} at {url}{path}{via}: the TLS certificate "
        f"{problem} (SSLCertVerificationError)"
    )


def run(provider: HttpProviderBase) -> Any:
    with provider:
        return ToolLoop(provider, make_host()).run(  # type: ignore[arg-type]
            [ChatMessage.system("You help."), ChatMessage.user("who is customer 42?")]
        )


@pytest.fixture(autouse=True)
def _no_ambient_tls_or_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*AMBIENT, "NO_PROXY", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waited: list[float] = []
    monkeypatch.setattr(_http, "_sleep", waited.append)
    return waited


def assert_refused_by_the_client(server: WireServer | ForwardingProxy) -> None:
    """The server saw one handshake, ended by the client's 'unknown CA' alert."""
    (error,) = server.httpd.wait_for_handshake_errors(1)
    assert isinstance(error, ssl.SSLError)
    assert error.reason == "TLSV1_ALERT_UNKNOWN_CA", error


@pytest.mark.parametrize("name", CASES)
def test_without_a_ca_bundle_an_internal_ca_is_refused_before_any_request(
    name: str, pki: Pki, sleeps: list[float]
) -> None:
    make, _, _, replies = CASES[name]
    with WireServer(replies, tls=pki.server_context()) as server:
        result = run(make(server.url, max_retries=2))
        assert_refused_by_the_client(server)
    assert result.termination_reason is TerminationReason.FAILED
    assert result.error == refused(name, server.url)
    assert server.requests == []  # no request line, no header, no body: the key never left
    assert sleeps == []  # not retried: a certificate does not become trusted by waiting


@pytest.mark.parametrize("name", CASES)
def test_with_the_ca_bundle_the_run_completes(name: str, pki: Pki) -> None:
    make, path, _, replies = CASES[name]
    with WireServer(replies, tls=pki.server_context()) as server:
        assert server.url.startswith("https://127.0.0.1:")
        provider = make(server.url, ca_bundle=pki.internal_file)
        shown = repr(provider)
        result = run(provider)
    assert result.termination_reason is TerminationReason.COMPLETED, result.error
    assert result.content == "Ada Lovelace."
    assert [r.raw.split(b"\r\n", 1)[0] for r in server.requests] == [
        f"POST {path} HTTP/1.1".encode()
    ] * 2
    assert server.httpd.handshake_errors == []
    assert shown.endswith(f", api_key=<set>, ca_bundle={str(pki.internal_file)!r})")


@pytest.mark.parametrize("name", CASES)
def test_the_bundle_adds_to_the_default_roots_rather_than_replacing_them(
    name: str, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    # certifi's file is replaced by the "public" test authority: a server it signed stands for
    # any public API, and must stay reachable when an internal authority is added.
    monkeypatch.setattr(certifi, "where", lambda: str(pki.public_file))
    make, _, _, replies = CASES[name]
    with WireServer(replies, tls=pki.server_context(pki.public)) as public:
        result = run(make(public.url))  # the control: the replaced roots are the ones used
        assert result.termination_reason is TerminationReason.COMPLETED, result.error
        public.replies[:] = list(replies)
        result = run(make(public.url, ca_bundle=pki.internal_file))
        assert result.termination_reason is TerminationReason.COMPLETED, result.error
    with WireServer(replies, tls=pki.server_context()) as internal:
        result = run(make(internal.url))
        assert result.error == refused(name, internal.url)
        internal.replies[:] = list(replies)
        result = run(make(internal.url, ca_bundle=pki.internal_file))
    assert result.termination_reason is TerminationReason.COMPLETED, result.error


def _pool_context(provider: HttpProviderBase) -> ssl.SSLContext:
    pool = provider._poster._http()._transport._pool  # type: ignore[attr-defined]
    context: ssl.SSLContext = pool._ssl_context
    return context


def test_the_context_holds_certifis_roots_and_the_bundles(pki: Pki) -> None:
    roots = ssl.create_default_context(cafile=certifi.where()).get_ca_certs()
    assert len(roots) > 50  # certifi's store, not an empty one
    with openai("https://api.example", ca_bundle=pki.internal_file) as provider:
        context = _pool_context(provider)
        held = context.get_ca_certs()
        assert context.verify_mode is ssl.CERT_REQUIRED
        assert context.check_hostname is True
    internal = ((("organizationName", "nr-llm internal test CA"),),)
    assert [c for c in held if c["subject"][:1] == internal]
    assert len(held) == len(roots) + 1
    assert all(root in held for root in roots)
    with anthropic("https://api.example") as provider:  # without a bundle: certifi alone
        context = _pool_context(provider)
        assert context.get_ca_certs() == roots
        assert context.verify_mode is ssl.CERT_REQUIRED
        assert context.check_hostname is True


def test_a_bundle_may_hold_many_certificates_and_comments(pki: Pki, tmp_path: Path) -> None:
    # The usual way to make one: certifi's bundle (with its '# Issuer:' comments, some not
    # ASCII) and the company's authority, concatenated.
    bundle = tmp_path / "with-certifi.pem"
    bundle.write_bytes(Path(certifi.where()).read_bytes() + pki.internal.cert_pem.bytes())
    assert check_ca_bundle(bundle) == str(bundle)
    make, _, _, replies = CASES["openai"]
    with WireServer(replies, tls=pki.server_context()) as server:
        result = run(make(server.url, ca_bundle=bundle))
    assert result.termination_reason is TerminationReason.COMPLETED, result.error


@pytest.mark.parametrize("name", CASES)
def test_ssl_cert_file_and_dir_are_ignored(
    name: str, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    make, _, _, replies = CASES[name]
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.internal_file))
    monkeypatch.setenv("SSL_CERT_DIR", str(pki.folder))
    with WireServer([Reply(body={}), *replies], tls=pki.server_context()) as server:
        # The control: a client that reads its environment trusts the server through them.
        with httpx.Client() as client:
            assert client.post(f"{server.url}/control", content=b"{}").status_code == 200
        result = run(make(server.url))
        assert_refused_by_the_client(server)
    assert result.error == refused(name, server.url)
    assert len(server.requests) == 1  # only the control


def test_the_certificate_problem_names_the_endpoint_not_the_certificate(pki: Pki) -> None:
    make, *_ = CASES["openai"]
    # A certificate for another name: signed by a trusted authority, but not for this host.
    with WireServer([], tls=pki.server_context(identity="other.nr-llm.test")) as server:
        result = run(make(server.url, ca_bundle=pki.internal_file))
    assert result.error == refused("openai", server.url, "does not match the host name")
    assert "other.nr-llm.test" not in result.error
    assert server.requests == []


def test_an_unknown_verification_failure_is_still_named_a_certificate_problem() -> None:
    error = ssl.SSLCertVerificationError("certificate verify failed")
    error.verify_code = 26  # invalid purpose: no word of its own
    wrapped = httpx.ConnectError("boom")
    wrapped.__cause__ = error
    assert _http._certificate_problem(wrapped) == "could not be verified"
    assert _http._certificate_problem(httpx.ConnectError("refused")) is None


@pytest.mark.parametrize("name", CASES)
def test_through_a_connect_tunnel_the_bundle_verifies_the_provider(name: str, pki: Pki) -> None:
    # A corporate proxy that relays the tunnel: TLS runs end to end, and the provider's
    # internal authority is trusted through the bundle.
    make, _, _, replies = CASES[name]
    with (
        WireServer(replies, tls=pki.server_context()) as server,
        ForwardingProxy(tunnel=True) as proxy,
    ):
        port = server.httpd.server_address[1]
        result = run(make(server.url, proxy=proxy.url))
        assert result.error == refused(name, server.url, via=" through the proxy")
        assert server.requests == []
        server.replies[:] = list(replies)
        proxy.requests.clear()
        proxy.tunnelled.clear()
        result = run(make(server.url, proxy=proxy.url, ca_bundle=pki.internal_file))
    assert result.termination_reason is TerminationReason.COMPLETED, result.error
    assert result.content == "Ada Lovelace."
    assert len(server.requests) == 2
    lines = proxy.request_lines()
    assert lines and set(lines) == {f"CONNECT 127.0.0.1:{port} HTTP/1.1".encode()}
    assert proxy.tunnelled  # the requests went through the tunnel, encrypted
    assert KEY.encode() not in proxy.tunnelled
    assert b"customer 42" not in proxy.tunnelled


@pytest.mark.parametrize("name", CASES)
def test_an_https_proxy_is_verified_with_the_same_roots(
    name: str, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    # TLS to the proxy itself (an https:// proxy URL) is checked like TLS to the provider:
    # certifi and the bundle, never SSL_CERT_FILE, which is set here to the proxy's authority.
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.internal_file))
    make, path, _, replies = CASES[name]
    with (
        WireServer(replies) as server,
        ForwardingProxy(tls=pki.server_context()) as proxy,
    ):
        assert proxy.url.startswith("https://")
        result = run(make(server.url, proxy=proxy.url))
        assert result.error == refused(name, server.url, via=" through the proxy")
        assert_refused_by_the_client(proxy)
        assert proxy.requests == []
        assert server.requests == []
        result = run(make(server.url, proxy=proxy.url, ca_bundle=pki.internal_file))
    assert result.termination_reason is TerminationReason.COMPLETED, result.error
    assert proxy.request_lines() == [f"POST {server.url}{path} HTTP/1.1".encode()] * 2


@pytest.mark.parametrize("make", [openai, anthropic], ids=["openai", "anthropic"])
@pytest.mark.parametrize(
    "case",
    [
        "missing",
        "below a file",
        "directory",
        "empty",
        "text",
        "der",
        "private key",
        "damaged",
        "trusted certificates only",
        "a trusted certificate beside a plain one",
        "server certificate only",
    ],
)
def test_a_bad_bundle_is_refused_at_construction(
    make: Callable[..., HttpProviderBase], case: str, pki: Pki
) -> None:
    """Each file that is not a usable bundle is refused when the provider is built, with the
    path and what is wrong. A ``TRUSTED CERTIFICATE`` block (OpenSSL's trust-annotated form,
    e.g. Fedora's ``ca-bundle.trust.crt``) is one Python cannot load: alone, it must not be
    called "no certificate block"; beside plain blocks, it must not be dropped in silence."""
    path, problem = pki.bad_bundles()[case]
    with pytest.raises(ValueError) as info:
        make("https://api.example", ca_bundle=path)
    assert str(info.value) == f"the CA bundle {str(path)!r} {problem}"
    assert info.value.__cause__ is None
    with pytest.raises(ValueError) as again:
        check_ca_bundle(str(path))
    assert str(again.value) == str(info.value)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "ca.pem"
    os.mkfifo(fifo)
    with pytest.raises(ValueError) as info:
        openai("https://api.example", ca_bundle=fifo)
    assert str(info.value) == f"the CA bundle {str(fifo)!r} is not a regular file"


def test_a_bundle_swapped_for_a_fifo_after_its_check_is_refused_without_waiting(
    pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whoever can write the bundle's folder swaps the checked file for a FIFO right after
    the path is looked at: the bundle must still be refused as not a regular file, without
    waiting for a writer (the open must not block, and the file is judged on what was opened).
    Should the read wait, the test opens the FIFO's other end after 30 s to free it, and fails."""
    bundle = tmp_path / "ca.pem"
    bundle.write_bytes(pki.internal.cert_pem.bytes())
    real_stat = os.stat

    def stat_then_swap(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        looked = real_stat(path, *args, **kwargs)
        if os.fspath(path) == str(bundle) and not stat.S_ISFIFO(looked.st_mode):
            bundle.unlink()
            os.mkfifo(bundle)
        return looked

    monkeypatch.setattr(os, "stat", stat_then_swap)
    outcome: list[BaseException | str] = []

    def check() -> None:
        try:
            outcome.append(check_ca_bundle(bundle))
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=check, daemon=True)
    worker.start()
    worker.join(30)
    waited = worker.is_alive()
    if waited:  # free the blocked open, then fail
        os.close(os.open(bundle, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(30)
    assert not waited, "the CA bundle's open waited for a FIFO's writer"
    assert len(outcome) == 1 and isinstance(outcome[0], ValueError), outcome
    assert str(outcome[0]) == f"the CA bundle {str(bundle)!r} is not a regular file"


def test_an_unreadable_bundle_is_refused(
    pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = tmp_path / "locked.pem"
    locked.write_bytes(pki.internal.cert_pem.bytes())
    locked.chmod(0)
    if os.geteuid() == 0:  # root reads any file (CI runs as root): the open is refused here
        real_open = os.open

        def refused(file: Any, *args: Any, **kwargs: Any) -> int:
            if os.fspath(file) == str(locked):
                raise PermissionError(13, "Permission denied")
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr(os, "open", refused)
    with pytest.raises(ValueError) as info:
        anthropic("https://api.example", ca_bundle=locked)
    assert str(info.value) == f"the CA bundle {str(locked)!r} cannot be read (permission denied)"


def test_an_empty_path_or_one_that_is_not_a_path_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^the CA bundle path is empty \(pass None"):
        openai("https://api.example", ca_bundle="")
    for wrong in (b"/etc/ssl/ca.pem", 3, True):
        with pytest.raises(TypeError, match=r"^the CA bundle must be a path"):
            openai("https://api.example", ca_bundle=wrong)


def test_there_is_no_way_to_turn_verification_off(pki: Pki) -> None:
    # The only TLS setting is a bundle of authorities to add; falsy values are not "off".
    for off in (False, 0, "off"):
        with pytest.raises((TypeError, ValueError)):
            openai("https://api.example", ca_bundle=off)
    assert "verify" not in OpenAIChatProvider.__init__.__code__.co_varnames
    assert "verify" not in AnthropicProvider.__init__.__code__.co_varnames
    assert tls_context(pki.internal_file).verify_mode is ssl.CERT_REQUIRED
