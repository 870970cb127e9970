"""Malformed requests over real HTTP, hand-written on a raw socket.

Each one tries to make the playground answer with a bare 500, drop the connection, read an
oversized body into memory, or answer without its security headers. Every answer must be a
4xx that carries every header of ``SECURITY_HEADERS``, before authentication (no token) and
after (a valid token), and the server must keep serving afterwards.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable, Iterator

import attrs
import httpx
import pytest

from nr_llm_core.encoding import decode_json
from nr_llm_core.playground import PlaygroundServer
from nr_llm_core.playground._guard import MAX_BODY_BYTES, MAX_HEADER_BYTES, SECURITY_HEADERS

#: How long a test waits for an answer: a server that waits for the rest of a body it should
#: refuse never answers, and the test fails at this limit instead of hanging.
ANSWER_TIMEOUT = 10.0

AUTH = pytest.mark.parametrize("authenticated", [False, True], ids=["no-token", "token"])


@attrs.frozen
class Answer:
    """One HTTP response as read from the socket."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes

    def header(self, name: bytes) -> list[bytes]:
        return [v for k, v in self.headers if k == name]


def _read_answer(sock: socket.socket) -> Answer:
    """Read until the server closes (every request here says ``Connection: close``). A reset
    after the answer arrived is fine; no answer at all is a failure."""
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        except TimeoutError:
            pytest.fail(f"no complete answer within {ANSWER_TIMEOUT}s: {data[:200]!r}")
        if not chunk:
            break
        data += chunk
    head, sep, body = data.partition(b"\r\n\r\n")
    assert sep, f"the connection ended without an answer: {data[:200]!r}"
    status_line, *lines = head.split(b"\r\n")
    assert status_line.startswith(b"HTTP/1.1 "), status_line
    headers = []
    for line in lines:
        name, _, value = line.partition(b":")
        headers.append((name.strip().lower(), value.strip()))
    return Answer(int(status_line.split()[1]), headers, body)


def _send(
    server: PlaygroundServer, head: bytes, body: Iterable[bytes] = (), *, finish: bool = True
) -> Answer:
    """Send ``head``, then the ``body`` pieces from another thread while this one reads the
    answer (so a server that answers early is heard). ``finish=False`` never sends more than
    the pieces given: a server that waits for the rest of the body never answers."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=ANSWER_TIMEOUT) as sock:
        sock.sendall(head)

        def send_body() -> None:
            try:
                for piece in body:
                    sock.sendall(piece)
            except OSError:  # the server answered and closed before the whole body was sent
                pass

        sender = threading.Thread(target=send_body, daemon=True)
        sender.start()
        answer = _read_answer(sock)
        sender.join(ANSWER_TIMEOUT)
    return answer


def _head(
    server: PlaygroundServer,
    method: bytes,
    target: bytes,
    headers: Iterable[bytes] = (),
    *,
    authenticated: bool,
) -> bytes:
    lines = [method + b" " + target + b" HTTP/1.1", f"Host: 127.0.0.1:{server.port}".encode()]
    if authenticated:
        lines.append(f"X-NR-LLM-Token: {server.token}".encode())
    lines += [*headers, b"Connection: close"]
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _post(
    server: PlaygroundServer,
    target: bytes,
    body: bytes,
    headers: Iterable[bytes] = (b"Content-Type: application/json",),
    *,
    authenticated: bool,
) -> Answer:
    length = f"Content-Length: {len(body)}".encode()
    head = _head(server, b"POST", target, [*headers, length], authenticated=authenticated)
    return _send(server, head + body)


def _get(
    server: PlaygroundServer, target: bytes, headers: Iterable[bytes] = (), *, authenticated: bool
) -> Answer:
    return _send(server, _head(server, b"GET", target, headers, authenticated=authenticated))


def _refused(answer: Answer, *statuses: int, before_token: bool = True) -> None:
    """One of ``statuses``, with every security header once and a JSON reason.
    ``before_token=False``: without a token the request may be refused with 401 instead,
    because what is wrong is in the body, which is only read for an authenticated request."""
    allowed = set(statuses) if before_token else {*statuses, 401}
    assert answer.status in allowed, (answer.status, answer.body[:300])
    assert 400 <= answer.status < 500
    for name, value in SECURITY_HEADERS:
        assert answer.header(name) == [value], name
    assert answer.header(b"content-type") == [b"application/json"]
    assert set(decode_json(answer.body)) == {"error"}


@pytest.fixture
def serving(server: PlaygroundServer) -> Iterator[PlaygroundServer]:
    """The module's server; after the test it must still answer a well-formed request."""
    yield server
    response = httpx.get(
        server.origin + "/api/config", headers={"X-NR-LLM-Token": server.token}, timeout=30
    )
    assert response.status_code == 200


# -- the request target: path and query -----------------------------------------------------------


@AUTH
@pytest.mark.parametrize(
    "target",
    [
        b"/?token=%FF%FE",  # percent-escapes that are not UTF-8 (a 500 in the token parser)
        b"/static/app.js?token=%C3",  # a UTF-8 sequence cut short
        b"/?token=%",  # a lone percent sign
        b"/?token=%G1",  # not a hex escape
        b"/?token=%00",  # a control character
        b"/api/config?x=%FF",  # an API path: the query is malformed even where it is unused
        b"/api/config?x=%ED%A0%80",  # an encoded surrogate
    ],
)
def test_a_query_that_is_not_percent_encoded_utf8_is_refused(
    serving: PlaygroundServer, target: bytes, authenticated: bool
) -> None:
    _refused(_get(serving, target, authenticated=authenticated), 400)


@AUTH
@pytest.mark.parametrize("target", [b"/?token=\xff", b"/api/config?x=\xc3\xa9", b"/\x80"])
def test_raw_bytes_over_0x7f_in_the_target_are_refused(
    serving: PlaygroundServer, target: bytes, authenticated: bool
) -> None:
    # The HTTP parser refuses these before the app runs: its answer carries the headers too.
    _refused(_get(serving, target, authenticated=authenticated), 400)


@AUTH
@pytest.mark.parametrize(
    ("method", "target"),
    [
        (b"POST", b"/api/tools/%FF/invoke"),
        (b"POST", b"/api/tools/%00/invoke"),
        (b"POST", b"/api/tools/ech%6F%0A/invoke"),
        (b"GET", b"/api/runs/%FF"),
        (b"GET", b"/api/runs/%00"),
        (b"POST", b"/api/runs/%FF%FE/resume"),
        (b"GET", b"/static/%FF"),
        (b"GET", b"/%C0%AF"),  # an overlong encoding of "/"
    ],
)
def test_a_path_that_is_not_percent_encoded_utf8_is_refused(
    serving: PlaygroundServer, method: bytes, target: bytes, authenticated: bool
) -> None:
    if method == b"POST":
        answer = _post(serving, target, b'{"arguments": {}}', authenticated=authenticated)
    else:
        answer = _get(serving, target, authenticated=authenticated)
    _refused(answer, 400)


# -- headers ---------------------------------------------------------------------------------------


@AUTH
@pytest.mark.parametrize(
    "header",
    [
        b"X-NR-LLM-Token: \xff\xfe" + b"x" * 41,
        b"Accept: application/json\xff",
        b"Origin: http://127.0.0.1\xe9",
    ],
)
def test_bytes_over_0x7f_in_a_header_the_playground_reads_are_refused(
    serving: PlaygroundServer, header: bytes, authenticated: bool
) -> None:
    # With a token as well, the token header is then repeated: refused too.
    _refused(_get(serving, b"/api/config", [header], authenticated=authenticated), 400)


@AUTH
def test_bytes_over_0x7f_in_the_content_type_are_refused(
    serving: PlaygroundServer, authenticated: bool
) -> None:
    answer = _post(
        serving,
        b"/api/runs",
        b'{"prompt": "x"}',
        [b"Content-Type: application/json\xff"],
        authenticated=authenticated,
    )
    _refused(answer, 400)


def test_a_header_the_playground_does_not_read_may_hold_any_bytes(
    serving: PlaygroundServer,
) -> None:
    """A cookie another local app set is sent to every port of 127.0.0.1: it is not ours to
    judge, so it does not break the page."""
    answer = _get(
        serving, b"/api/config", [b"Cookie: other-app=caf\xc3\xa9\xff"], authenticated=True
    )
    assert answer.status == 200


@AUTH
@pytest.mark.parametrize("size", [MAX_HEADER_BYTES + 1, 100_000, 1_000_000])
def test_huge_headers_are_refused(
    serving: PlaygroundServer, size: int, authenticated: bool
) -> None:
    answer = _get(
        serving, b"/api/config", [b"X-Padding: " + b"a" * size], authenticated=authenticated
    )
    # Past the parser's own limit (when the head arrives in several reads) it says 400.
    _refused(answer, 400, 431)


def test_many_small_headers_past_the_limit_are_refused(serving: PlaygroundServer) -> None:
    count = MAX_HEADER_BYTES // 16 + 1
    headers = [f"X-Many-{i:05d}: abcdef".encode() for i in range(count)]
    answer = _get(serving, b"/api/config", headers, authenticated=True)
    _refused(answer, 400, 431)


def test_a_repeated_token_header_is_refused(serving: PlaygroundServer) -> None:
    """Two token headers, one of them right: which one counts would be up to the parser."""
    right = f"X-NR-LLM-Token: {serving.token}".encode()
    for headers in ([right, b"X-NR-LLM-Token: wrong"], [b"X-NR-LLM-Token: wrong", right]):
        _refused(_get(serving, b"/api/config", headers, authenticated=False), 400)
    # and the right token twice
    _refused(_get(serving, b"/api/config", [right], authenticated=True), 400)


@AUTH
@pytest.mark.parametrize(
    "header",
    [
        b"Content-Length: abc",
        b"Content-Length: 5\r\nContent-Length: 6",
        b"Transfer-Encoding: gzip",
        b"X-Nul: a\x00b",
        b"Bad Name: x",
    ],
)
def test_headers_the_http_parser_refuses(
    serving: PlaygroundServer, header: bytes, authenticated: bool
) -> None:
    head = _head(serving, b"POST", b"/api/runs", [header], authenticated=authenticated)
    _refused(_send(serving, head), 400)


# -- bodies ----------------------------------------------------------------------------------------


@AUTH
@pytest.mark.parametrize(
    ("target", "body"),
    [
        (b"/api/tools/echo/invoke", b'{"arguments": {"text": "\xff"}}'),  # not UTF-8
        # an encoded surrogate
        (b"/api/tools/echo/invoke", b'{"arguments": {"text": "\xed\xa0\x80"}}'),
        # Valid JSON escapes of a lone surrogate: not a Unicode string, and no sink can write it
        # (at FULL, the persisted record went through the encoder: a 500).
        (b"/api/tools/echo/invoke", b'{"arguments": {"text": "\\ud800"}, "privacy": "full"}'),
        (b"/api/runs", b'{"prompt": "\\udfff", "provider": "echoes", "privacy": "full"}'),
        (b"/api/runs", b'{"prompt": "x", "\\ud800": 1}'),
        (b"/api/runs/nope/resume", b'{"digest": "\\ud800", "approved": true}'),
        (b"/api/runs", b'{"prompt": '),  # cut short
        (b"/api/runs", b"[" * 100_000),  # deeper than the decoder goes
    ],
)
def test_a_body_that_is_not_utf8_json_is_refused(
    serving: PlaygroundServer, target: bytes, body: bytes, authenticated: bool
) -> None:
    extra = [b"Content-Type: application/json", b"Accept: application/json"]
    answer = _post(serving, target, body, extra, authenticated=authenticated)
    _refused(answer, 400, before_token=authenticated)


@AUTH
@pytest.mark.parametrize(
    "headers",
    [[], [b"Content-Type: text/plain"], [b"Content-Type: application/x-www-form-urlencoded"]],
)
def test_a_body_without_the_json_content_type_is_refused(
    serving: PlaygroundServer, headers: list[bytes], authenticated: bool
) -> None:
    answer = _post(serving, b"/api/runs", b'{"prompt": "x"}', headers, authenticated=authenticated)
    _refused(answer, 400, before_token=authenticated)


@AUTH
@pytest.mark.parametrize("declared", [MAX_BODY_BYTES + 1, 10_000_000, 10**30])
def test_a_declared_oversized_body_is_refused_before_it_is_sent(
    serving: PlaygroundServer, declared: int, authenticated: bool
) -> None:
    """Only the head is sent: a server that waited for (and buffered) the declared body would
    never answer."""
    head = _head(
        serving,
        b"POST",
        b"/api/runs",
        [b"Content-Type: application/json", f"Content-Length: {declared}".encode()],
        authenticated=authenticated,
    )
    answer = _send(serving, head, [b'{"prompt": "'])
    if declared < 10**18:
        _refused(answer, 413)
    else:  # more digits than the HTTP parser reads: its own refusal
        _refused(answer, 400, 413)


def _chunks(total: int, size: int = 65536) -> Iterator[bytes]:
    sent = 0
    while sent < total:
        piece = b"a" * min(size, total - sent)
        sent += len(piece)
        yield f"{len(piece):x}\r\n".encode() + piece + b"\r\n"


@AUTH
def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_limit(
    serving: PlaygroundServer, authenticated: bool
) -> None:
    """The chunks sent add up to just past the limit and the last chunk never comes: a
    server that read the whole body before judging it would never answer."""
    head = _head(
        serving,
        b"POST",
        b"/api/runs",
        [b"Content-Type: application/json", b"Transfer-Encoding: chunked"],
        authenticated=authenticated,
    )
    answer = _send(serving, head, _chunks(MAX_BODY_BYTES + 1))
    _refused(answer, 413, before_token=authenticated)


def test_a_chunked_body_within_the_limit_is_read(serving: PlaygroundServer) -> None:
    body = b'{"arguments": {"text": "chunked"}}'
    head = _head(
        serving,
        b"POST",
        b"/api/tools/echo/invoke",
        [b"Content-Type: application/json", b"Transfer-Encoding: chunked"],
        authenticated=True,
    )
    pieces = [b"%x\r\n%s\r\n" % (len(body[:10]), body[:10])]
    pieces += [b"%x\r\n%s\r\n" % (len(body[10:]), body[10:]), b"0\r\n\r\n"]
    answer = _send(serving, head, pieces)
    assert answer.status == 200, answer.body
    assert b"echo: chunked" in answer.body


def test_a_body_of_exactly_the_limit_is_read(serving: PlaygroundServer) -> None:
    prefix, suffix = b'{"prompt": "', b'", "provider": "nope"}'
    body = prefix + b"a" * (MAX_BODY_BYTES - len(prefix) - len(suffix)) + suffix
    assert len(body) == MAX_BODY_BYTES
    answer = _post(serving, b"/api/runs", body, authenticated=True)
    # Read and judged by the route (the prompt is over its own limit), not refused for size.
    assert answer.status == 400
    assert b"prompt must be" in answer.body
