"""The Anthropic Messages API wire (``/v1/messages``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Final, final

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

__all__ = [
    "ANTHROPIC_VERSION",
    "AnthropicProvider",
    "anthropic_blocks",
    "anthropic_messages",
    "anthropic_tools",
]

ENV_API_KEY: Final = "ANTHROPIC_API_KEY"
ANTHROPIC_VERSION: Final = "2023-06-01"
#: Anthropic's own API: it refuses every request without a key.
ANTHROPIC_HOST: Final = "api.anthropic.com"
#: ``stop_reason`` in host words; any other value is ``other``, none at all is ``end``.
_STOP_REASONS: Final[dict[object, StopReason]] = {
    "end_turn": "end",
    "stop_sequence": "end",
    None: "end",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    # The context filled up while the model was answering: cut, like max_tokens.
    "model_context_window_exceeded": "length",
}


def anthropic_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """The ``tools`` array, built only from :meth:`ToolSpec.to_wire`."""
    out = []
    for spec in tools:
        wire = spec.to_wire()
        out.append(
            {
                "name": wire["name"],
                "description": wire["description"],
                "input_schema": wire["parameters"],
            }
        )
    return out


def anthropic_messages(
    messages: Sequence[ChatMessage],
) -> tuple[str | None, list[dict[str, Any]]]:
    """``(system, messages)``: system messages hoisted into one top-level string; assistant
    tool calls as ``tool_use`` blocks; tool answers as ``tool_result`` blocks in a user turn;
    consecutive turns of one role merged (so consecutive tool results share one user turn)."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for m in messages:
        if m.role is Role.SYSTEM:
            if m.content:
                system.append(m.content)
            continue
        role, blocks = anthropic_blocks(m)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return ("\n\n".join(system) if system else None), turns


def anthropic_blocks(m: ChatMessage) -> tuple[str, list[dict[str, Any]]]:
    """The role of the turn a non-system message goes into, and its content blocks (none for
    an assistant message without text or calls)."""
    if m.role is Role.TOOL:
        return "user", [
            {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
        ]
    blocks: list[dict[str, Any]] = []
    if m.content:  # the API refuses empty text blocks
        blocks.append({"type": "text", "text": m.content})
    blocks.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in m.tool_calls
    )
    return m.role.value, blocks


#: A message's part of the body: the system text it adds (``""`` for none), and the role of its
#: turn with its blocks encoded and joined by commas (``b""`` for none); ``None`` when a block
#: cannot be encoded.
_Encoded = tuple[str, str, bytes] | None
_TURN_STARTS: Final = {
    "user": b'{"role":"user","content":[',
    "assistant": b'{"role":"assistant","content":[',
}


def _encoded_message(m: ChatMessage) -> _Encoded:
    if m.role is Role.SYSTEM:
        return m.content or "", "", b""
    role, blocks = anthropic_blocks(m)
    encoded: list[bytes] = []
    for block in blocks:
        data = fragment(block)
        if data is None:
            return None
        encoded.append(data)
    return "", role, b",".join(encoded)


def _encoded_turns(parts: Sequence[_Encoded]) -> tuple[list[str], bytes] | None:
    """The system texts and the ``messages`` array from each message's part, merged as
    :func:`anthropic_messages` merges them; ``None`` when a part could not be encoded."""
    system: list[str] = []
    chunks: list[bytes] = [b"["]
    open_role = ""
    for part in parts:
        if part is None:
            return None
        text, role, data = part
        if text:
            system.append(text)
        if not data:  # a system message, or no blocks: no turn
            continue
        if role == open_role:
            chunks.append(b",")
        else:
            if open_role:
                chunks.append(b"]},")
            chunks.append(_TURN_STARTS[role])
            open_role = role
        chunks.append(data)
    if open_role:
        chunks.append(b"]}")
    chunks.append(b"]")
    return system, b"".join(chunks)


def _int(value: object) -> int:
    return value if type(value) is int and value >= 0 else 0


def _stop_reason(value: object) -> StopReason:
    try:
        return _STOP_REASONS.get(value, "other")
    except TypeError:  # an unhashable value (a list, an object)
        return "other"


@final
class AnthropicProvider(HttpProviderBase):
    """A provider on the Anthropic Messages API over httpx.

    The key comes from ``api_key``, ``ANTHROPIC_API_KEY`` or the keys file
    (:mod:`nr_llm_core.keys`), sent as ``x-api-key``;
    ``api.anthropic.com`` without one is a ``ConfigurationError`` here, before any request.
    ``max_tokens`` (default 4096, a field the API requires) bounds each answer; an answer cut
    there (``stop_reason`` ``max_tokens``) ends the run as ``max_tokens``. Input tokens count
    the cached ones too (``cache_read_input_tokens`` and ``cache_creation_input_tokens``,
    also kept as parts of the usage). Base URL checks, retries, ``timeout``, errors,
    ``proxy`` and ``ca_bundle`` behave as for
    :class:`~nr_llm_core.providers.openai.OpenAIChatProvider`. The zone is ``external``.
    """

    #: Anthropic's own API refuses every request without a key.
    key_required_hosts = frozenset({ANTHROPIC_HOST})
    base_url_root = "the API's root (without /v1)"
    endpoint_path = "/v1/messages"

    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        base_url: str = f"https://{ANTHROPIC_HOST}",
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = 2,
        max_retry_after: float = 30.0,
        trust_zone: TrustZone | str = TrustZone.EXTERNAL,
        proxy: str | None = None,
        ca_bundle: str | os.PathLike[str] | None = None,
    ) -> None:
        self.model = model
        self.trust_zone = TrustZone(trust_zone)
        self._fragments = MessageFragments(_encoded_message)
        self._connect(
            "the Anthropic provider",
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

    def request_body(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> dict[str, Any]:
        """The JSON body :meth:`complete` sends (no ``tools`` key when none are offered)."""
        system, turns = anthropic_messages(messages)
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens}
        if system is not None:
            body["system"] = system
        body["messages"] = turns
        if tools:
            body["tools"] = anthropic_tools(tools)
        return body

    def complete(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> Completion:
        """One ``/v1/messages`` request; raises a ``ProviderError`` subclass on failure."""
        headers = {
            "content-type": "application/json",
            "accept": "application/json",
            "anthropic-version": ANTHROPIC_VERSION,
        }
        if self._api_key:
            headers["x-api-key"] = self._api_key
        data = self._poster.post_body(
            f"{self.base_url}{self.endpoint_path}", headers, self.request_bytes(messages, tools)
        )
        return parse_anthropic_response(data)

    def request_bytes(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> bytes:
        """:meth:`request_body` encoded, byte for byte what the shared encoder writes for it,
        from each message's bytes kept since an earlier request of the same conversation."""
        turns = _encoded_turns(self._fragments.of(messages))
        head = fragment({"model": self.model, "max_tokens": self.max_tokens})
        offered = fragment(anthropic_tools(tools)) if tools else b""
        system = b""
        if turns is not None and turns[0]:
            system = fragment("\n\n".join(turns[0])) or b""
        if turns is None or head is None or offered is None or (turns[0] and not system):
            return encode_request(self.request_body(messages, tools))
        pairs = []
        if system:
            pairs.append((b'"system"', system))
        pairs.append((b'"messages"', turns[1]))
        if tools:
            pairs.append((b'"tools"', offered))
        return spliced(head, pairs)


def parse_anthropic_response(data: dict[str, Any]) -> Completion:
    """A :class:`Completion` from a decoded Messages API response."""
    content = data.get("content")
    if type(content) is not list:
        raise ProviderResponseError("the Anthropic provider sent no content")
    texts: list[str] = []
    raws: list[RawCall] = []
    for block in content:
        if type(block) is not dict:
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(clean_text(block.get("text")))
        elif kind == "tool_use":
            raws.append(RawCall(block.get("id"), block.get("name"), block.get("input")))
    calls, dropped = keep_tool_calls(raws)
    usage = data.get("usage")
    usage = usage if type(usage) is dict else {}
    # Anthropic's input_tokens leaves out what was read from or written to the prompt cache:
    # the model read all three, and budgets and the audit count all three.
    read = _int(usage.get("cache_read_input_tokens"))
    created = _int(usage.get("cache_creation_input_tokens"))
    return Completion(
        content="".join(texts),
        tool_calls=calls,
        usage=Usage(
            input_tokens=_int(usage.get("input_tokens")) + read + created,
            output_tokens=_int(usage.get("output_tokens")),
            cache_read_input_tokens=read,
            cache_creation_input_tokens=created,
        ),
        dropped_tool_calls=dropped,
        stop_reason=_stop_reason(data.get("stop_reason")),
    )
