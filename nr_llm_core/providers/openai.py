"""The OpenAI-compatible ``/chat/completions`` wire (OpenAI, Ollama, vLLM, llama.cpp server)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Final, final

from nr_llm_core.encoding import encode_json_str
from nr_llm_core.errors import ProviderResponseError
from nr_llm_core.messages import ChatMessage, Role
from nr_llm_core.providers._http import HttpProviderBase
from nr_llm_core.providers._parse import RawCall, clean_text, keep_tool_calls
from nr_llm_core.providers.base import Completion, TrustZone, Usage
from nr_llm_core.results import ToolSpec

__all__ = ["OpenAIChatProvider", "openai_messages", "openai_tools"]

ENV_API_KEY: Final = "OPENAI_API_KEY"


def openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """The ``tools`` array, built only from :meth:`ToolSpec.to_wire`."""
    return [{"type": "function", "function": spec.to_wire()} for spec in tools]


def openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """The ``messages`` array: content strings, tool calls (arguments as a JSON string), and
    ``role: tool`` answers with their ``tool_call_id``. Nothing else exists to send."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role is Role.TOOL:
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        elif m.role is Role.ASSISTANT and m.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": m.content,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.name,
                                # A call whose arguments could not be read goes back as "{}":
                                # the model learns why from the tool message that answers it.
                                "arguments": encode_json_str(c.arguments),
                            },
                        }
                        for c in m.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": m.role.value, "content": m.content})
    return out


def _int(value: object) -> int:
    return value if type(value) is int and value >= 0 else 0


@final
class OpenAIChatProvider(HttpProviderBase):
    """A provider on the OpenAI-compatible ``/chat/completions`` wire over httpx.

    ``base_url`` is the API root (``https://api.openai.com/v1``, ``http://localhost:11434/v1``);
    the key comes from ``api_key`` or ``OPENAI_API_KEY`` and is sent as a bearer token (no
    header when there is none, as Ollama needs). 429, 5xx, timeouts and connection errors are
    retried ``max_retries`` times with backoff, honouring ``Retry-After`` up to
    ``max_retry_after`` seconds. ``trust_zone`` defaults to ``external``: say ``local`` or
    ``private-hosted`` for a server you run. ``extra_body`` adds request fields (such as
    ``temperature``); it may not set ``model``, ``messages`` or ``tools``. ``proxy``
    (``http://`` or ``https://``, optionally with ``user:password@``) sends every request
    through that proxy; without it there is none: ``HTTP_PROXY``, ``HTTPS_PROXY`` and
    ``~/.netrc`` are never read. A malformed proxy URL is a ``ValueError`` here, and its
    credentials never show in ``repr()``, logs or errors. ``ca_bundle``, the path of a PEM file
    of CA certificates, is trusted in addition to certifi's roots (for a server or a
    TLS-inspecting proxy signed by your own authority); ``SSL_CERT_FILE`` and ``SSL_CERT_DIR``
    are never read, and verification cannot be turned off. A missing, unreadable or non-PEM
    file, or one without a CA certificate, is a ``ValueError`` here. Usable as a context manager
    (closes the connection pool).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 2,
        max_retry_after: float = 30.0,
        trust_zone: TrustZone | str = TrustZone.EXTERNAL,
        extra_body: dict[str, Any] | None = None,
        proxy: str | None = None,
        ca_bundle: str | os.PathLike[str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._api_key = api_key if api_key is not None else os.environ.get(ENV_API_KEY)
        self.trust_zone = TrustZone(trust_zone)
        self.extra_body = dict(extra_body or {})
        reserved = {"model", "messages", "tools"} & self.extra_body.keys()
        if reserved:
            # The offer and the conversation come only from the loop's own checked values.
            raise ValueError(f"extra_body may not set {', '.join(sorted(reserved))}")
        self._connect(
            "the OpenAI-compatible provider",
            timeout=timeout,
            max_retries=max_retries,
            max_retry_after=max_retry_after,
            proxy=proxy,
            ca_bundle=ca_bundle,
        )

    def request_body(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> dict[str, Any]:
        """The JSON body :meth:`complete` sends (no ``tools`` key when none are offered)."""
        body: dict[str, Any] = {**self.extra_body, "model": self.model}
        body["messages"] = openai_messages(messages)
        if tools:
            body["tools"] = openai_tools(tools)
        return body

    def complete(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> Completion:
        """One ``/chat/completions`` request; raises a ``ProviderError`` subclass on failure."""
        headers = {"content-type": "application/json", "accept": "application/json"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        data = self._poster.post(
            f"{self.base_url}/chat/completions", headers, self.request_body(messages, tools)
        )
        return parse_openai_response(data)


def parse_openai_response(data: dict[str, Any]) -> Completion:
    """A :class:`Completion` from a decoded response; ``ProviderResponseError`` when it lacks
    a message. Odd tool calls are handled as ``providers._parse`` describes."""
    choices = data.get("choices")
    if type(choices) is not list or not choices or type(choices[0]) is not dict:
        raise ProviderResponseError("the OpenAI-compatible provider sent no choices")
    message = choices[0].get("message")
    if type(message) is not dict:
        raise ProviderResponseError("the OpenAI-compatible provider sent no message")
    text = clean_text(message.get("content"))
    raw_calls = message.get("tool_calls")
    raws: list[RawCall] = []
    if type(raw_calls) is list:
        for item in raw_calls:
            fn = item.get("function") if type(item) is dict else None
            if type(fn) is not dict:
                raws.append(RawCall(None, None, None))
                continue
            raws.append(RawCall(item.get("id"), fn.get("name"), fn.get("arguments")))
    calls, dropped = keep_tool_calls(raws)
    usage = data.get("usage")
    usage = usage if type(usage) is dict else {}
    return Completion(
        content=text,
        tool_calls=calls,
        usage=Usage(
            input_tokens=_int(usage.get("prompt_tokens")),
            output_tokens=_int(usage.get("completion_tokens")),
        ),
        dropped_tool_calls=dropped,
    )
