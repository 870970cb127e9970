"""Reading untrusted provider answers: tool calls, short error codes, context-size numbers.

A provider's response is data from outside: ids may be missing, names may be empty or odd,
arguments may be invalid JSON or not an object. Nothing here raises for that. A call without
a usable name is dropped (and counted); a call without a usable id gets a host id; arguments
that cannot be decoded keep the call with ``arguments_error`` set, so the loop answers the
model with an invalid-arguments error instead of running the tool.

From an error body only identifier-shaped codes (:func:`error_code`) and integers
(:func:`context_overflow`) are ever taken: never the server's free text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

import attrs

from nr_llm_core.bounding import coerce_utf8
from nr_llm_core.encoding import EncodeError, decode_json, encode_json
from nr_llm_core.messages import MAX_CALL_ID_CHARS, ToolCall
from nr_llm_core.results import TOOL_NAME_RE

__all__ = [
    "ContextOverflow",
    "RawCall",
    "clean_text",
    "context_overflow",
    "error_code",
    "keep_tool_calls",
    "parse_arguments",
]

_ID_RE: Final = re.compile(rf"[\x21-\x7e]{{1,{MAX_CALL_ID_CHARS}}}")
_CODE_RE: Final = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
#: Arguments beyond this many characters are refused rather than decoded.
MAX_ARGUMENT_CHARS: Final = 1_000_000


@attrs.frozen
class RawCall:
    """A tool call as read from the wire, before it is checked."""

    id: object
    name: object
    arguments: object  # a JSON string (OpenAI) or an already decoded value (Anthropic)


def parse_arguments(value: object) -> tuple[dict[str, Any], str | None]:
    """``(arguments, None)`` or ``({}, reason)``; the reason is host words."""
    if value is None or value == "":
        return {}, None  # some servers send no arguments for a call without parameters
    if isinstance(value, str):
        if len(value) > MAX_ARGUMENT_CHARS:
            return {}, "arguments are too large"
        try:
            value = decode_json(value)
        except (ValueError, RecursionError):
            return {}, "arguments are not valid JSON"
    if type(value) is not dict:
        return {}, "arguments must be a JSON object"
    try:
        # What cannot be sent back (1e999 read as inf, a lone surrogate) is refused here,
        # not in the next request.
        encode_json(value)
    except EncodeError:
        return {}, "arguments are not valid JSON"
    return value, None


def clean_text(value: object) -> str:
    """A provider's text as valid UTF-8 (``""`` when it is not a string)."""
    return coerce_utf8(value) if type(value) is str else ""


def keep_tool_calls(raw: Iterable[RawCall]) -> tuple[tuple[ToolCall, ...], int]:
    """The calls that can be kept, and how many were dropped (no usable name)."""
    kept: list[ToolCall] = []
    seen: set[str] = set()
    dropped = 0
    for n, call in enumerate(raw):
        name = call.name
        if type(name) is not str or TOOL_NAME_RE.fullmatch(name) is None:
            dropped += 1
            continue
        call_id = call.id
        if type(call_id) is not str or _ID_RE.fullmatch(call_id) is None or call_id in seen:
            # Every result must answer exactly one call: a missing, odd or repeated id is
            # replaced by one the host makes up, and that is what goes back on the wire.
            call_id = f"nrllm_call_{n}"
            while call_id in seen:
                call_id += "_"
        seen.add(call_id)
        arguments, error = parse_arguments(call.arguments)
        kept.append(ToolCall(id=call_id, name=name, arguments=arguments, arguments_error=error))
    return tuple(kept), dropped


def error_code(value: object) -> str | None:
    """A provider's error code or type, when it is a short identifier (never free text)."""
    if isinstance(value, str) and _CODE_RE.fullmatch(value):
        return value
    return None


@attrs.frozen
class ContextOverflow:
    """A provider said the prompt does not fit the model's context; its numbers, where it gave
    them (``None`` where not): the prompt's tokens, the context's, and the answer's limit when
    the provider counted it against the context."""

    prompt_tokens: int | None = None
    context_tokens: int | None = None
    completion_tokens: int | None = None

    def describe(self) -> str:
        """The host's sentence for it, with the numbers only."""
        prompt, context, answer = self.prompt_tokens, self.context_tokens, self.completion_tokens
        if prompt is not None and context is not None:
            also = f" and the answer may have {answer}" if answer is not None else ""
            return f"the prompt has {prompt} tokens{also}; the model's context holds {context}"
        if context is not None:
            return f"the prompt does not fit the model's context of {context} tokens"
        if prompt is not None:
            return f"the prompt has {prompt} tokens, more than the model's context holds"
        return "the prompt does not fit the model's context"


#: Codes and types that say "context exceeded" (llama.cpp's type, OpenAI's code).
_OVERFLOW_CODES: Final = frozenset({"exceed_context_size_error", "context_length_exceeded"})
#: The messages read are cut to this many characters first (the patterns are linear anyway).
_MESSAGE_CHARS: Final = 2000
#: Fixed wordings, each with named groups ``prompt`` / ``context`` / ``answer`` of at most
#: nine digits. Only the digits of a match are used.
_OVERFLOW_MESSAGES: Final = tuple(
    re.compile(pattern)
    for pattern in (
        # OpenAI, vLLM: "This model's maximum context length is 4096 tokens. However, you
        # requested 5000 tokens (904 in the messages, 4096 in the completion)." or "… your
        # messages resulted in 5000 tokens."
        r"maximum context length is (?P<context>\d{1,9}) tokens"
        r"(?:[^(]{0,200}\((?P<prompt>\d{1,9}) in the messages, "
        r"(?P<answer>\d{1,9}) in the completion\)"
        r"|[^.]{0,20}\.[^.]{0,80}resulted in (?P<prompt2>\d{1,9}) tokens)?",
        # Anthropic: "prompt is too long: 208310 tokens > 200000 maximum"
        r"prompt is too long: (?P<prompt>\d{1,9}) tokens > (?P<context>\d{1,9}) maximum",
        # Anthropic: "input length and `max_tokens` exceed context limit: 197552 + 8192 > 200000"
        r"exceed context limit: (?P<prompt>\d{1,9}) \+ (?P<answer>\d{1,9}) > "
        r"(?P<context>\d{1,9})",
        # llama.cpp builds before the numbers were fields of their own
        r"\((?P<prompt>\d{1,9}) tokens\) exceeds the available context size "
        r"\((?P<context>\d{1,9}) tokens\)",
        r"exceeds the available context size",
    )
)


def _count(value: object) -> int | None:
    return value if type(value) is int and 0 <= value < 10**12 else None


def context_overflow(error: object) -> ContextOverflow | None:
    """The numbers of an error object (what OpenAI, llama.cpp and Anthropic nest under
    ``error``) that says the prompt does not fit the context; ``None`` when it says something
    else. llama.cpp sends ``n_prompt_tokens`` and ``n_ctx`` as fields; OpenAI, vLLM and
    Anthropic put them in the message, from which only the digits of a known wording are
    read."""
    if type(error) is not dict:
        return None
    fields = ContextOverflow(_count(error.get("n_prompt_tokens")), _count(error.get("n_ctx")))
    coded = any(error_code(error.get(key)) in _OVERFLOW_CODES for key in ("code", "type"))
    message = error.get("message")
    if type(message) is str:
        text = message[:_MESSAGE_CHARS]
        for pattern in _OVERFLOW_MESSAGES:
            found = pattern.search(text)
            if found is None:
                continue
            numbers = {k.rstrip("2"): int(v) for k, v in found.groupdict().items() if v is not None}
            return ContextOverflow(
                fields.prompt_tokens if fields.prompt_tokens is not None else numbers.get("prompt"),
                fields.context_tokens
                if fields.context_tokens is not None
                else numbers.get("context"),
                numbers.get("answer"),
            )
    if coded or fields != ContextOverflow():
        return fields
    return None
