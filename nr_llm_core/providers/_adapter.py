"""The base the HTTP provider adapters share: their settings checked when built, one poster.

The API key is read in one place (the argument, else its variable, else the key stored with
``nr-llm keys set``); a vendor host that refuses every request without a key is refused when
the adapter is built, not by a 401 after the first request. The poster
(:class:`~nr_llm_core.providers._http.JsonPoster`) does the requests.
"""

from __future__ import annotations

import logging
import os
from typing import Self
from urllib.parse import urlsplit

from nr_llm_core.errors import ConfigurationError
from nr_llm_core.providers._http import JsonPoster
from nr_llm_core.providers._settings import check_api_key, check_base_url

__all__ = ["HttpProviderBase"]

logger = logging.getLogger("nr_llm.providers")


class HttpProviderBase:
    """What the HTTP providers share: the checks of their settings when they are built (base
    URL, API key, answer limit, deadline), a key and proxy credentials that never show, the one
    way to build the poster (proxy and CA bundle), a pool to close, ``with``.

    ``key_required_hosts`` are the hosts that refuse every request without a key (the
    vendor's own API): with one of them and no key, building the provider is a
    :class:`~nr_llm_core.errors.ConfigurationError` that names ``key_env``; any other host (a
    local Ollama or llama.cpp server) may be used without a key.
    """

    #: The hosts that need an API key (each adapter names its vendor's).
    key_required_hosts: frozenset[str] = frozenset()
    #: What the base URL must be, in the hint of a 404 (each adapter says its own).
    base_url_root: str = "the API's root"
    #: The path the adapter adds to the base URL for a request (``/chat/completions``).
    endpoint_path: str = ""
    base_url: str
    model: str
    max_tokens: int
    _api_key: str | None
    _poster: JsonPoster

    def _connect(
        self,
        what: str,
        *,
        base_url: str,
        api_key: str | None,
        key_env: str,
        max_tokens: int,
        timeout: float,
        max_retries: int,
        max_retry_after: float,
        proxy: str | None,
        ca_bundle: str | os.PathLike[str] | None,
    ) -> None:
        self.base_url = check_base_url(base_url)
        if self.endpoint_path and self.base_url.lower().endswith(self.endpoint_path):
            # The whole endpoint pasted from a curl line: the request would go to the path
            # twice and come back 404. Refused here, before any request (the URL not quoted).
            raise ConfigurationError(
                f"the base URL ends in {self.endpoint_path}, the path the provider adds "
                f"itself: give {self.base_url_root}, without {self.endpoint_path}"
            )
        # The one place an adapter's key is read: the argument, else its variable, else the
        # key stored with `nr-llm keys set` (imported here: only a key lookup needs it).
        from nr_llm_core.keys import KEY_VARIABLES, find_key

        self._api_key = check_api_key(
            api_key if api_key is not None else find_key(key_env), key_env
        )
        host = (urlsplit(self.base_url).hostname or "").lower()
        if self._api_key is None and host in self.key_required_hosts:
            # Refused here rather than by a 401 after the first request.
            names = [name for name, variable in KEY_VARIABLES.items() if variable == key_env]
            stored = f" or store it with `nr-llm keys set {names[0]}`" if names else ""
            raise ConfigurationError(
                f"no API key: set {key_env}{stored} ({host} refuses requests without one)"
            )
        if type(max_tokens) is not int or max_tokens < 1:
            raise ConfigurationError("max_tokens must be a whole number of at least 1")
        if type(timeout) not in (int, float) or not 0 < timeout < float("inf"):
            raise ConfigurationError("timeout must be a number of seconds greater than 0")
        self.max_tokens = max_tokens
        self._poster = JsonPoster(
            what=what,
            base_url_root=self.base_url_root,
            timeout=float(timeout),
            max_retries=max_retries,
            max_retry_after=max_retry_after,
            proxy=proxy,
            ca_bundle=ca_bundle,
        )
        if proxy is not None and urlsplit(self.base_url).scheme.lower() != "https":
            # Through a proxy, plain HTTP is readable by the proxy: the conversation and the key.
            logger.warning(
                "%s: the base URL is not https, so the proxy can read every request, "
                "API key included",
                what,
            )

    @property
    def timeout(self) -> float:
        """Seconds one request may take (see :class:`JsonPoster`)."""
        return self._poster.timeout

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        shown = self._poster.proxy_shown
        proxy = "" if shown is None else f", proxy={shown!r}"
        bundle = self._poster.ca_bundle
        ca = "" if bundle is None else f", ca_bundle={bundle!r}"
        return f"{type(self).__name__}(model={self.model!r}, api_key=<{key}>{proxy}{ca})"

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._poster.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
