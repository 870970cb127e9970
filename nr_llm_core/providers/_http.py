"""One JSON POST with retries, shared by the HTTP providers.

httpx is imported here, on first use, so that ``import nr_llm_core`` stays free of it. The
response body is read in chunks up to :data:`MAX_RESPONSE_BYTES`; anything larger is refused
without reading the rest. Error messages are host words: no key, no URL, no response body.
"""

from __future__ import annotations

import email.utils
import json
import logging
import random
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Self

from nr_llm_core.encoding import EncodeError, decode_json, encode_json
from nr_llm_core.errors import (
    ProviderAuthError,
    ProviderError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderUnavailableError,
)
from nr_llm_core.providers._parse import error_code

if TYPE_CHECKING:
    import httpx

__all__ = ["MAX_RESPONSE_BYTES", "HttpProviderBase", "JsonPoster"]

logger = logging.getLogger("nr_llm.providers")

#: The most response bytes read from a provider (a chat completion is far smaller).
MAX_RESPONSE_BYTES: Final = 8 * 1024 * 1024
_RETRY_STATUSES: Final = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})

#: Replaced in tests to observe waits without waiting.
_sleep: Callable[[float], None] = time.sleep


class _TooLarge(Exception):
    pass


class _PastDeadline(Exception):
    pass


def _encode_request(payload: Any) -> bytes:
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


class JsonPoster:
    """POSTs JSON to one endpoint and returns the decoded JSON object, or raises a
    :class:`ProviderError` subclass. ``what`` names the provider in messages."""

    def __init__(
        self,
        *,
        what: str,
        timeout: float,
        max_retries: int,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        max_retry_after: float = 30.0,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self.what = what
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
            self._client = httpx.Client(timeout=self.timeout, trust_env=False)
        return self._client

    def close(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def post(self, url: str, headers: Mapping[str, str], payload: Any) -> dict[str, Any]:
        """POST ``payload`` and return the decoded object, retrying 429/5xx and transport
        errors up to ``max_retries`` times."""
        import httpx

        body = _encode_request(payload)
        client = self._http()
        attempt = 0
        while True:
            wait: float | None
            status: int | None = None
            try:
                code, retry_after, data = self._once(client, url, headers, body)
            except (httpx.TimeoutException, _PastDeadline):
                problem = f"{self.what} did not answer in time"
                wait = None
            except httpx.TransportError as exc:
                problem = f"could not reach {self.what} ({type(exc).__name__})"
                wait = None
            except _TooLarge:
                raise ProviderResponseError(
                    f"{self.what} sent a response larger than {MAX_RESPONSE_BYTES} bytes"
                ) from None
            else:
                if 200 <= code < 300:
                    return self._decode(data, code)
                if code not in _RETRY_STATUSES:
                    raise self._http_error(code, data)
                status = code
                problem = f"{self.what} answered HTTP {code}"
                wait = retry_after
            if attempt >= self.max_retries:
                tries = attempt + 1
                raise ProviderUnavailableError(
                    f"{problem} ({tries} attempt{'s' if tries != 1 else ''})", status=status
                )
            delay = self._delay(attempt, wait)
            logger.warning("%s; retrying in %.2f s", problem, delay)
            _sleep(delay)
            attempt += 1

    def _once(
        self, client: httpx.Client, url: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, float | None, bytes]:
        # httpx's read timeout is per chunk: a server that trickles bytes would never trip
        # it, so the whole answer also has a deadline.
        deadline = time.monotonic() + self.timeout * 2
        with client.stream("POST", url, headers=dict(headers), content=body) as response:
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                if time.monotonic() > deadline:
                    raise _PastDeadline
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise _TooLarge
                chunks.append(chunk)
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

    def _http_error(self, status: int, data: bytes) -> ProviderError:
        code = _error_code(data)
        detail = f" ({code})" if code else ""
        if status in (401, 403):
            return ProviderAuthError(
                f"{self.what} refused the credentials: HTTP {status}{detail}", status=status
            )
        return ProviderRequestError(
            f"{self.what} refused the request: HTTP {status}{detail}", status=status
        )


def _error_code(data: bytes) -> str | None:
    """The error's ``code`` or ``type`` when the body is a JSON error object (OpenAI and
    Anthropic both nest it under ``error``); never the message."""
    try:
        value = decode_json(data[:65536])
    except (ValueError, RecursionError):
        return None
    err = value.get("error") if type(value) is dict else None
    if type(err) is not dict:
        return None
    return error_code(err.get("code")) or error_code(err.get("type"))


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


class HttpProviderBase:
    """What the HTTP providers share: a key that never shows, a pool to close, ``with``."""

    model: str
    _api_key: str | None
    _poster: JsonPoster

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return f"{type(self).__name__}(model={self.model!r}, api_key=<{key}>)"

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._poster.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
