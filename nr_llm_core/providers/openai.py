"""The OpenAI-compatible ``/chat/completions`` wire (OpenAI, Ollama, vLLM, llama.cpp server)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Final, Literal, final
from urllib.parse import urlsplit

from nr_llm_core.encoding import EncodeError, encode_json_str
from nr_llm_core.errors import ProviderResponseError
from nr_llm_core.messages import ChatMessage, Role
from nr_llm_core.providers._adapter import HttpProviderBase
from nr_llm_core.providers._body import MessageFragments, fragment, spliced
from nr_llm_core.providers._http import encode_request
from nr_llm_core.providers._parse import RawCall, clean_text, keep_tool_calls
from nr_llm_core.providers.base import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TIMEOUT,
    Completion,
    StopReason,
    TrustZone,
    Usage,
)
from nr_llm_core.results import ToolSpec

__all__ = ["OpenAIChatProvider", "openai_message", "openai_messages", "openai_tools"]

ENV_API_KEY: Final = "OPENAI_API_KEY"
#: OpenAI's own API: it refuses every request without a key.
OPENAI_HOST: Final = "api.openai.com"
#: The request fields that bound the answer (the adapter sets one; ``extra_body`` neither).
MAX_TOKENS_FIELDS: Final = ("max_tokens", "max_completion_tokens")
#: ``finish_reason`` in host words; any other value is ``other``, none at all is ``end``.
_FINISH_REASONS: Final[dict[object, StopReason]] = {
    "stop": "end",
    None: "end",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
}


def openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """The ``tools`` array, built only from :meth:`ToolSpec.to_wire`."""
    return [{"type": "function", "function": spec.to_wire()} for spec in tools]


def openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """The ``messages`` array: content strings, tool calls (arguments as a JSON string), and
    ``role: tool`` answers with their ``tool_call_id``. Nothing else exists to send."""
    return [openai_message(m) for m in messages]


def openai_message(m: ChatMessage) -> dict[str, Any]:
    """One message of the ``messages`` array (see :func:`openai_messages`)."""
    if m.role is Role.TOOL:
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
    if m.role is Role.ASSISTANT and m.tool_calls:
        return {
            "role": "assistant",
            "content": m.content,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {
                        "name": c.name,
                        # A call whose arguments could not be read goes back as "{}": the
                        # model learns why from the tool message that answers it.
                        "arguments": encode_json_str(c.arguments),
                    },
                }
                for c in m.tool_calls
            ],
        }
    return {"role": m.role.value, "content": m.content}


def _encoded_message(m: ChatMessage) -> bytes | None:
    try:
        return fragment(openai_message(m))
    except EncodeError:  # arguments that are not JSON: the whole body says what to do
        return None


def _int(value: object) -> int:
    return value if type(value) is int and value >= 0 else 0


def _stop_reason(value: object) -> StopReason:
    try:
        return _FINISH_REASONS.get(value, "other")
    except TypeError:  # an unhashable value (a list, an object)
        return "other"


@final
class OpenAIChatProvider(HttpProviderBase):
    """A provider on the OpenAI-compatible ``/chat/completions`` wire over httpx.

    ``base_url`` is the API root (``https://api.openai.com/v1``, ``http://localhost:11434/v1``);
    the key comes from ``api_key``, ``OPENAI_API_KEY`` or the keys file
    (:mod:`nr_llm_core.keys`) and is sent as a bearer token (no
    header when there is none, as Ollama and llama.cpp need). ``api.openai.com`` without a
    key, or a base URL that is not ``http(s)://host[:port][/path]``, is a
    ``ConfigurationError`` (a ``ValueError``) here, before any request.

    ``max_tokens`` (default 4096) bounds every answer, so a server without a limit of its own
    cannot generate until the deadline; an answer cut there has ``stop_reason`` ``length``
    and ends the run as ``max_tokens``. It is sent as ``max_completion_tokens`` to
    ``api.openai.com`` (which refuses ``max_tokens`` for its reasoning models) and as
    ``max_tokens`` to any other server (llama.cpp, vLLM, Ollama and LM Studio read it; Ollama
    ignores the newer name); ``max_tokens_field`` chooses the name yourself. ``timeout``
    (default 60 s) is the deadline of one request, the whole answer included.

    429, 5xx, connections that could not be opened and connections that broke are retried
    ``max_retries`` times with backoff, honouring ``Retry-After`` up to ``max_retry_after``
    seconds; a request that timed out is not (it would start the generation over).
    ``trust_zone`` defaults to ``external``: say ``local`` or ``private-hosted`` for a server
    you run. ``extra_body`` adds request fields (such as ``temperature``); it may not set
    ``model``, ``messages``, ``tools``, ``max_tokens`` or ``max_completion_tokens``. ``proxy``
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

    #: OpenAI's own API refuses every request without a key.
    key_required_hosts = frozenset({OPENAI_HOST})
    base_url_root = "the API's root (often ending in /v1)"
    endpoint_path = "/chat/completions"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        max_tokens_field: Literal["max_tokens", "max_completion_tokens"] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = 2,
        max_retry_after: float = 30.0,
        trust_zone: TrustZone | str = TrustZone.EXTERNAL,
        extra_body: dict[str, Any] | None = None,
        proxy: str | None = None,
        ca_bundle: str | os.PathLike[str] | None = None,
    ) -> None:
        self.model = model
        self.trust_zone = TrustZone(trust_zone)
        self.extra_body = dict(extra_body or {})
        reserved = {"model", "messages", "tools", *MAX_TOKENS_FIELDS} & self.extra_body.keys()
        if reserved:
            # The offer and the conversation come only from the loop's own checked values,
            # and the answer's limit from max_tokens alone.
            raise ValueError(
                f"extra_body may not set {', '.join(sorted(reserved))}"
                + (" (use max_tokens=)" if reserved & set(MAX_TOKENS_FIELDS) else "")
            )
        if max_tokens_field is not None and max_tokens_field not in MAX_TOKENS_FIELDS:
            raise ValueError("max_tokens_field must be 'max_tokens' or 'max_completion_tokens'")
        self._connect(
            "the OpenAI-compatible provider",
            base_url=base_url,
            api_key=api_key,
            key_env=ENV_API_KEY,
            max_tokens=max_tokens,
            timeout=timeout,
            max_retries=max_retries,
            max_retry_after=max_retry_after,
            proxy=proxy,
            ca_bundle=ca_bundle,
        )
        self._fragments = MessageFragments(_encoded_message)
        official = urlsplit(self.base_url).hostname == OPENAI_HOST
        #: The request field that carries ``max_tokens``.
        self.max_tokens_field = max_tokens_field or (
            "max_completion_tokens" if official else "max_tokens"
        )

    def request_body(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> dict[str, Any]:
        """The JSON body :meth:`complete` sends (no ``tools`` key when none are offered)."""
        body: dict[str, Any] = {**self.extra_body, "model": self.model}
        body[self.max_tokens_field] = self.max_tokens
        body["messages"] = openai_messages(messages)
        if tools:
            body["tools"] = openai_tools(tools)
        return body

    def complete(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> Completion:
        """One ``/chat/completions`` request; raises a ``ProviderError`` subclass on failure."""
        headers = {"content-type": "application/json", "accept": "application/json"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        data = self._poster.post_body(
            f"{self.base_url}{self.endpoint_path}", headers, self.request_bytes(messages, tools)
        )
        return parse_openai_response(data)

    def request_bytes(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> bytes:
        """:meth:`request_body` encoded, byte for byte what the shared encoder writes for it,
        from each message's bytes kept since an earlier request of the same conversation."""
        parts = self._fragments.of(messages)
        head = fragment(
            {**self.extra_body, "model": self.model, self.max_tokens_field: self.max_tokens}
        )
        offered = fragment(openai_tools(tools)) if tools else b""
        if head is None or offered is None or None in parts:
            return encode_request(self.request_body(messages, tools))
        pairs = [(b'"messages"', b"[" + b",".join(parts) + b"]")]
        if tools:
            pairs.append((b'"tools"', offered))
        return spliced(head, pairs)


def parse_openai_response(data: dict[str, Any]) -> Completion:
    """A :class:`Completion` from a decoded response; ``ProviderResponseError`` when it lacks
    a message. Odd tool calls are handled as ``providers._parse`` describes."""
    choices = data.get("choices")
    if type(choices) is not list or not choices or type(choices[0]) is not dict:
        raise ProviderResponseError("the OpenAI-compatible provider sent no choices")
    finish = choices[0].get("finish_reason")
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
    details = usage.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if type(details) is dict else 0
    return Completion(
        content=text,
        tool_calls=calls,
        usage=Usage(
            # prompt_tokens already counts the cached ones; they are shown as a part.
            input_tokens=_int(usage.get("prompt_tokens")),
            output_tokens=_int(usage.get("completion_tokens")),
            cache_read_input_tokens=cached,
        ),
        dropped_tool_calls=dropped,
        stop_reason=_stop_reason(finish),
    )
