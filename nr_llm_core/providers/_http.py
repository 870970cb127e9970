"""One JSON POST with retries, its limits, and what it tells its watcher.

httpx is imported here, on first use, so that ``import nr_llm_core`` stays free of it. The
response body is read in chunks up to :data:`MAX_RESPONSE_BYTES`; anything larger is refused
without reading the rest. Error messages are host words: no key, no response body; an error
about the connection names the endpoint as :func:`shown_url` shows it
(``scheme://host[:port]/path``, never credentials, a query or a fragment).

What a request can do about a failure decides whether it is sent again: a connection that
could not be opened, one that broke, 429 and 5xx are retried ``max_retries`` times; a request
that timed out after the server received it is not (it would start the whole generation over,
and time out again); a setting that cannot work (a base URL without ``http://``, a missing API
key for a host that needs one) is refused when the provider is built, before any request.

Whoever watches a request (telemetry) learns of each retry through :data:`retry_observer`,
set for its context: the attempt, the kind of failure in the HTTP client's words (a status code
or an ``httpx`` exception's class name) and the wait. Never a URL, a header or a body.

The client never reads its environment (``trust_env=False``): ``HTTP_PROXY``, ``HTTPS_PROXY``,
``ALL_PROXY`` and ``~/.netrc`` are ignored, so a variable or file that something else set cannot
send the key to a proxy or replace it. A proxy is used only when the caller names one
(``proxy=``). For the same reason ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` are ignored. The
settings are checked by :mod:`nr_llm_core.providers._settings` when the provider is built.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import random
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from nr_llm_core.encoding import EncodeError, decode_json, encode_json
from nr_llm_core.errors import (
    ProviderAuthError,
    ProviderContextLengthError,
    ProviderError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)
from nr_llm_core.providers._parse import context_overflow, error_code
from nr_llm_core.providers._settings import (
    check_api_key,
    check_base_url,
    check_ca_bundle,
    check_proxy_url,
    shown_proxy,
    shown_url,
    tls_context,
)

if TYPE_CHECKING:
    import httpx

__all__ = [
    "MAX_RESPONSE_BYTES",
    "JsonPoster",
    "check_api_key",
    "check_base_url",
    "check_ca_bundle",
    "check_proxy_url",
    "encode_request",
    "retry_observer",
    "shown_proxy",
    "shown_url",
    "tls_context",
]

logger = logging.getLogger("nr_llm.providers")

#: The most response bytes read from a provider (a chat completion is far smaller).
MAX_RESPONSE_BYTES: Final = 8 * 1024 * 1024
_RETRY_STATUSES: Final = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})

#: Replaced in tests to observe waits without waiting.
_sleep: Callable[[float], None] = time.sleep

#: Called as ``observer(attempt, failure, delay)`` before each retry's wait: ``attempt`` is the
#: number of the attempt that failed (1 for the first), ``failure`` a status code (``"503"``)
#: or the ``httpx`` exception's class name (``"ConnectError"``), ``delay`` the seconds until
#: the next attempt. Set per context by the request's watcher; an observer that raises is
#: ignored.
retry_observer: ContextVar[Callable[[int, str, float], None] | None] = ContextVar(
    "nr_llm_retry_observer", default=None
)


def _tell_retry(attempt: int, failure: str, delay: float) -> None:
    observer = retry_observer.get()
    if observer is None:
        return
    try:
        observer(attempt, failure, delay)
    except Exception as exc:  # telemetry never changes what a request does
        logger.debug("the retry observer raised %s", type(exc).__name__)


class _TooLarge(Exception):
    pass


class _PastDeadline(Exception):
    pass


class _BrokenAnswer(Exception):
    """The connection broke after the answer's headers had arrived."""

    def __init__(self, kind: str) -> None:
        self.kind = kind


def encode_request(payload: Any) -> bytes:
    """A request body's bytes: the shared encoder's, or, when a caller's text holds a lone
    surrogate, the same JSON with every non-ASCII character escaped."""
    try:
        return encode_json(payload)
    except EncodeError:
        pass
    # A caller's text may hold a lone surrogate: send it as an ASCII escape rather than fail.
    try:
        return json.dumps(
            payload, ensure_ascii=True, allow_nan=False, separators=(",", ":")
        ).encode("ascii")
    except (TypeError, ValueError, RecursionError):
        raise ProviderRequestError("the request could not be encoded as JSON") from None


#: Why a certificate was refused, by OpenSSL's X509_V_ERR_* code, in words that name no host.
_UNTRUSTED = "is not signed by a trusted certificate authority"
_CERTIFICATE_PROBLEMS: Final = {
    2: _UNTRUSTED,  # unable to get issuer certificate
    18: _UNTRUSTED,  # self-signed certificate
    19: _UNTRUSTED,  # self-signed certificate in the chain
    20: _UNTRUSTED,  # unable to get local issuer certificate
    21: _UNTRUSTED,  # unable to verify the first certificate
    9: "is not valid yet",
    10: "has expired",
    62: "does not match the host name",  # hostname mismatch
    64: "does not match the host name",  # IP address mismatch
}


def _certificate_problem(exc: BaseException) -> str | None:
    """What is wrong with the certificate when ``exc`` was caused by its verification."""
    import ssl

    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return _CERTIFICATE_PROBLEMS.get(cause.verify_code, "could not be verified")
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


class JsonPoster:
    """POSTs JSON to one endpoint and returns the decoded JSON object, or raises a
    :class:`ProviderError` subclass. ``what`` names the provider in messages; ``timeout`` is
    the deadline of one request: connecting, each read, and the whole answer (checked as its
    bytes arrive, so a server that trickles them cannot hold a request open); ``proxy``
    (checked by :func:`check_proxy_url`) is the only proxy ever used; ``ca_bundle`` (a PEM
    file, checked and loaded here by :func:`tls_context`) adds CA certificates to certifi's
    roots, for the provider and for an ``https://`` proxy alike."""

    def __init__(
        self,
        *,
        what: str,
        base_url_root: str = "the API's root",
        timeout: float,
        max_retries: int,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        max_retry_after: float = 30.0,
        proxy: str | None = None,
        ca_bundle: str | os.PathLike[str] | None = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        # Private, like the key: only shown_proxy() is ever displayed.
        self._proxy = None if proxy is None else check_proxy_url(proxy)
        # Built now, so that a bad file is an error here rather than at the first request.
        self._tls = None if ca_bundle is None else tls_context(ca_bundle)
        #: The CA bundle's path, or ``None``: the caller's own setting, shown by ``repr()``.
        self.ca_bundle = None if ca_bundle is None else os.fspath(ca_bundle)
        self.what = what
        self.base_url_root = base_url_root
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self._client: httpx.Client | None = None

    def _http(self) -> httpx.Client:
        if self._client is None:
            import httpx

            # trust_env=False: a proxy or netrc from the environment must not see the key.
            # The only proxy is the one the caller named.
            tls = self._tls if self._tls is not None else tls_context()
            proxy: str | httpx.Proxy | None = self._proxy
            try:
                if self._proxy is not None and urlsplit(self._proxy).scheme.lower() == "https":
                    # TLS to the proxy is checked against the same roots; left to itself,
                    # httpcore would add the system's store and read SSL_CERT_FILE for it.
                    proxy = httpx.Proxy(self._proxy, ssl_context=tls)
                self._client = httpx.Client(
                    timeout=self.timeout, trust_env=False, proxy=proxy, verify=tls
                )
            except (ValueError, TypeError, httpx.InvalidURL):
                # check_proxy_url() accepts only what httpx takes; never quote the URL.
                raise ProviderRequestError("the proxy URL could not be used") from None
        return self._client

    @property
    def proxy_shown(self) -> str | None:
        """The proxy without its credentials, or ``None``."""
        return None if self._proxy is None else shown_proxy(self._proxy)

    def close(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def post(self, url: str, headers: Mapping[str, str], payload: Any) -> dict[str, Any]:
        """POST ``payload`` and return the decoded object. 429/5xx answers, connections that
        could not be opened and connections that broke are retried up to ``max_retries``
        times; a request that timed out once the server had it is not (see the module)."""
        return self.post_body(url, headers, encode_request(payload))

    def post_body(self, url: str, headers: Mapping[str, str], body: bytes) -> dict[str, Any]:
        """:meth:`post` of a body already encoded (by :func:`encode_request`, or fragment by
        fragment as :mod:`nr_llm_core.providers._body` does)."""
        import httpx

        client = self._http()
        where = f"{self.what} at {shown_url(url)}"
        via = " through the proxy" if self._proxy is not None else ""
        attempt = 0
        while True:
            wait: float | None = None
            status: int | None = None
            failure = ""
            tries = attempt + 1
            counted = f"{tries} attempt{'s' if tries != 1 else ''}"
            try:
                code, retry_after, data = self._once(client, url, headers, body)
            except (httpx.ReadTimeout, _PastDeadline):
                # The server had the whole request and was working on it: sent again, it
                # would start the whole generation over, and most likely time out again.
                raise ProviderTimeoutError(
                    f"{where} did not answer within {self.timeout:g} s ({counted}; a request "
                    "that timed out is not sent again)"
                ) from None
            except httpx.WriteTimeout as exc:  # the server never had the whole request
                failure = type(exc).__name__
                problem = f"{where} did not take the request in time ({failure})"
            except httpx.TimeoutException as exc:  # connect, pool: nothing was sent
                failure = type(exc).__name__
                problem = f"could not reach {where}{via} in time ({failure})"
            except (httpx.UnsupportedProtocol, httpx.LocalProtocolError, httpx.InvalidURL) as exc:
                # The request itself cannot be made: every retry would fail the same way.
                raise ProviderRequestError(
                    f"the request to {where} could not be made ({type(exc).__name__})"
                ) from None
            except _BrokenAnswer as exc:
                failure = exc.kind
                problem = f"the connection to {where} broke during the answer ({failure})"
            except (httpx.ReadError, httpx.RemoteProtocolError) as exc:
                failure = type(exc).__name__
                problem = f"{where} closed the connection without answering ({failure})"
            except httpx.WriteError as exc:
                failure = type(exc).__name__
                problem = f"the connection to {where} broke while sending the request ({failure})"
            except httpx.TransportError as exc:
                refused = _certificate_problem(exc)
                if refused is not None:
                    # Not transient: every retry would be refused the same way.
                    raise ProviderUnavailableError(
                        f"could not reach {where}{via}: the TLS certificate {refused} "
                        "(SSLCertVerificationError)"
                    ) from None
                failure = type(exc).__name__
                problem = f"could not reach {where}{via} ({failure})"
            except _TooLarge:
                raise ProviderResponseError(
                    f"{self.what} sent a response larger than {MAX_RESPONSE_BYTES} bytes"
                ) from None
            else:
                if 200 <= code < 300:
                    return self._decode(data, code)
                if code not in _RETRY_STATUSES:
                    raise self._http_error(code, data, where)
                status = code
                failure = str(code)
                problem = f"{self.what} answered HTTP {code}"
                wait = retry_after
            if attempt >= self.max_retries:
                raise ProviderUnavailableError(f"{problem} ({counted})", status=status)
            delay = self._delay(attempt, wait)
            logger.warning("%s; retrying in %.2f s", problem, delay)
            _tell_retry(tries, failure, delay)
            _sleep(delay)
            attempt += 1

    def _once(
        self, client: httpx.Client, url: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, float | None, bytes]:
        import httpx

        # httpx's read timeout is per chunk: a server that trickles bytes would never trip
        # it, so the whole answer also has a deadline.
        deadline = time.monotonic() + self.timeout
        with client.stream("POST", url, headers=dict(headers), content=body) as response:
            chunks: list[bytes] = []
            size = 0
            try:
                for chunk in response.iter_bytes():
                    if time.monotonic() > deadline:
                        raise _PastDeadline
                    size += len(chunk)
                    if size > MAX_RESPONSE_BYTES:
                        raise _TooLarge
                    chunks.append(chunk)
            except httpx.TimeoutException:
                raise
            except httpx.TransportError as exc:
                # The server had begun to answer: this is not "could not reach".
                raise _BrokenAnswer(type(exc).__name__) from None
            return (
                response.status_code,
                _retry_after(response.headers.get("retry-after")),
                b"".join(chunks),
            )

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        base = min(self.backoff * (2.0**attempt), self.max_backoff)
        # Jitter only spreads retries; it is not a security control.
        jitter: float = 0.5 + random.random() / 2  # noqa: S311
        return base * jitter

    def _decode(self, data: bytes, status: int) -> dict[str, Any]:
        try:
            value = decode_json(data)
        except (ValueError, RecursionError):
            raise ProviderResponseError(
                f"{self.what} sent a response that is not JSON", status=status
            ) from None
        if type(value) is not dict:
            raise ProviderResponseError(
                f"{self.what} sent a response that is not a JSON object", status=status
            )
        return value

    def _http_error(self, status: int, data: bytes, where: str) -> ProviderError:
        error = _error_object(data)
        code = (
            None
            if error is None
            else error_code(error.get("code")) or error_code(error.get("type"))
        )
        detail = f" ({code})" if code else ""
        if status in (401, 403):
            return ProviderAuthError(
                f"{self.what} refused the credentials: HTTP {status}{detail}", status=status
            )
        if status == 407:
            # From the proxy, not the provider: its credentials are missing or wrong.
            return ProviderRequestError(
                f"the proxy refused the request to {self.what}: HTTP 407 (proxy "
                "authentication required)",
                status=status,
            )
        # The endpoint is named as connection errors name it: the first thing to check when
        # a local server refuses is which URL the request went to.
        refused = f"{where} refused the request: HTTP {status}{detail}"
        overflow = context_overflow(error)
        if overflow is not None:
            # The server's numbers (integers only) say what to shorten or enlarge.
            return ProviderContextLengthError(
                f"{refused}: {overflow.describe()}",
                status=status,
                prompt_tokens=overflow.prompt_tokens,
                context_tokens=overflow.context_tokens,
                completion_tokens=overflow.completion_tokens,
            )
        hint = _refusal_hints(self.base_url_root).get(status)
        return ProviderRequestError(f"{refused}: {hint}" if hint else refused, status=status)


def _refusal_hints(base_url_root: str) -> dict[int, str]:
    # What to check, in host words, for the refusals a newcomer meets first with a local
    # server (a model it has not pulled, a base URL without its API root, a model that cannot
    # use tools). The server's own text is never shown: it is untrusted and may quote the
    # request.
    invalid = (
        "the server's reason is not shown (it may quote the request); its log says why, "
        "e.g. a model that cannot use tools or a parameter it does not know"
    )
    return {
        400: invalid,
        404: (
            f"the server has no such endpoint or model: check that the base URL is "
            f"{base_url_root} and that the server serves the model you named"
        ),
        422: invalid,
    }


def _error_object(data: bytes) -> dict[str, Any] | None:
    """The ``error`` object of a JSON error body (OpenAI, llama.cpp and Anthropic all nest it
    under ``error``), or ``None``. Only codes and integers are ever read from it."""
    try:
        value = decode_json(data[:65536])
    except (ValueError, RecursionError):
        return None
    err = value.get("error") if type(value) is dict else None
    return err if type(err) is dict else None


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    if seconds != seconds:  # NaN
        return None
    return max(seconds, 0.0)
