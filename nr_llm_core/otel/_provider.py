"""What a span says about the provider: name, model and server, from the host's settings only."""

from __future__ import annotations

import re
from typing import Any, Final
from urllib.parse import urlsplit

from nr_llm_core.otel import semconv as sc
from nr_llm_core.otel.attributes import Attributes

__all__ = ["describe_provider"]

# The adapters nr-llm ships, by module and class (importing them here would gain nothing).
_KNOWN: Final = {
    ("nr_llm_core.providers.openai", "OpenAIChatProvider"): sc.PROVIDER_OPENAI,
    ("nr_llm_core.providers.anthropic", "AnthropicProvider"): sc.PROVIDER_ANTHROPIC,
    ("nr_llm_core.providers.scripted", "ScriptedProvider"): sc.PROVIDER_SCRIPTED,
}
_CLASS_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
# A model name as operators write them (gpt-4o, llama3.1:8b, org/model@rev): printable ASCII.
_MODEL: Final = re.compile(r"[\x21-\x7e]{1,200}")
_HOST: Final = re.compile(r"[A-Za-z0-9._:-]{1,253}")


def _setting(provider: object, name: str) -> Any:
    try:
        return getattr(provider, name, None)
    except Exception:  # a property that raises is no setting
        return None


def describe_provider(provider: object) -> Attributes:
    """``gen_ai.provider.name``, and when the provider has them ``gen_ai.request.model``,
    ``gen_ai.request.max_tokens``, ``server.address`` and ``server.port``.

    These are the host's settings, not run data: the provider's class is stored with every run
    at every level. A provider nr-llm does not ship is named by its class name (when it has a
    class name's shape, else ``_OTHER``); a model name that is not printable ASCII is left
    out; of a base URL only the host and port are read, never credentials, a path or a query.
    """
    cls = type(provider)
    name = _KNOWN.get((cls.__module__, cls.__qualname__))
    if name is None:
        qualname = cls.__qualname__
        name = qualname if _CLASS_NAME.fullmatch(qualname) else sc.ERROR_OTHER
    out: Attributes = {sc.PROVIDER_NAME: name}
    model = _setting(provider, "model")
    if type(model) is str and _MODEL.fullmatch(model):
        out[sc.REQUEST_MODEL] = model
    max_tokens = _setting(provider, "max_tokens")
    if type(max_tokens) is int and max_tokens > 0:
        out[sc.REQUEST_MAX_TOKENS] = max_tokens
    base_url = _setting(provider, "base_url")
    if type(base_url) is str:
        try:
            parts = urlsplit(base_url)
            host, port = parts.hostname, parts.port
        except ValueError:
            host, port = None, None
        if host and _HOST.fullmatch(host):
            out[sc.SERVER_ADDRESS] = host
            default = {"https": 443, "http": 80}.get(parts.scheme.lower())
            if port or default:
                out[sc.SERVER_PORT] = port or default or 0
    return out
