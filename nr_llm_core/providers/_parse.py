"""Reading untrusted provider answers: tool calls and short error codes.

A provider's response is data from outside: ids may be missing, names may be empty or odd,
arguments may be invalid JSON or not an object. Nothing here raises for that. A call without
a usable name is dropped (and counted); a call without a usable id gets a host id; arguments
that cannot be decoded keep the call with ``arguments_error`` set, so the loop answers the
model with an invalid-arguments error instead of running the tool.
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

__all__ = ["RawCall", "clean_text", "error_code", "keep_tool_calls", "parse_arguments"]

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
