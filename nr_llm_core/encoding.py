"""The one JSON encoder every sink uses: NDJSON streams, JSON responses, the audit store.

The artifact bounding check is made on the exact size of this encoder's output (the walk in
:mod:`nr_llm_core.bounding` counts it; a property test holds the count to this encoder), so
anything that passed bounding is encodable by every sink, within the limit. It is the standard
library's C encoder: compact, UTF-8, ``allow_nan=False``. orjson is deliberately not used here:
3.8 segfaults on deep input and 3.12/3.13 corrupt the heap on deeply nested tuples (see
docs/adr/0002-one-encoder.md).
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = [
    "EncodeError",
    "decode_json",
    "encode_json",
    "encode_json_ascii",
    "encode_json_str",
    "json_copy",
]

_ENCODER: Final = json.JSONEncoder(
    ensure_ascii=False,
    allow_nan=False,
    check_circular=True,
    separators=(",", ":"),
)


# For a terminal: the same JSON with every character outside printable ASCII escaped.
_ASCII_ENCODER: Final = json.JSONEncoder(
    ensure_ascii=True,
    allow_nan=False,
    check_circular=True,
    separators=(",", ":"),
)


class EncodeError(ValueError):
    """The value is not plain, finite, UTF-8 JSON."""


def encode_json_str(value: Any) -> str:
    """Encode ``value`` as compact JSON text, refusing NaN, infinities and non-JSON types."""
    return _encode(_ENCODER, value)


def _encode(encoder: json.JSONEncoder, value: Any) -> str:
    try:
        if encoder is _ENCODER and _c_make_encoder is not None:
            # What _ENCODER.encode(value) does, without its per-call Python set-up (about a
            # microsecond of the ~5 a recorded step's payload takes): the C encoder with a
            # fresh circular-reference guard (a shared one would keep the marks an error left).
            return "".join(_c_make_encoder({}, *_ENCODER_ARGS)(value, 0))
        return encoder.encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise EncodeError(f"not encodable as JSON: {type(exc).__name__}") from None


def _not_json(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_c_make_encoder: Final = getattr(json.encoder, "c_make_encoder", None)
_ENCODER_ARGS: Final = (
    _not_json,
    json.encoder.encode_basestring,  # the C function when the C accelerator is there
    None,
    ":",
    ",",
    False,  # sort_keys
    False,  # skipkeys
    False,  # allow_nan
)


def encode_json(value: Any) -> bytes:
    """Encode ``value`` as compact UTF-8 JSON bytes (the bytes every sink writes)."""
    try:
        return encode_json_str(value).encode("utf-8")
    except UnicodeEncodeError:
        raise EncodeError("not encodable as JSON: lone surrogate in a string") from None


def encode_json_ascii(value: Any) -> str:
    """Encode ``value`` as compact JSON text of printable ASCII only, for a terminal: every other
    character (controls, DEL, C1, bidi overrides, zero-width …) is a ``\\uXXXX`` escape, so
    tool text shows as data and never acts on the terminal. The same JSON value as
    :func:`encode_json_str`."""
    return _encode(_ASCII_ENCODER, value).replace(
        "\x7f", "\\u007f"
    )  # the one ASCII control the encoder leaves


def decode_json(data: str | bytes) -> Any:
    """Decode JSON text, refusing ``NaN``/``Infinity`` tokens the encoder would never write."""
    return json.loads(data, parse_constant=_refuse_constant)


def _refuse_constant(token: str) -> Any:
    raise ValueError(f"invalid JSON constant {token}")


def json_copy(value: Any) -> Any:
    """A deep copy of plain JSON ``value``, through the encoder and back: what a caller hands
    a tool so that a tool changing its arguments cannot change the caller's record of them.
    Raises :class:`EncodeError` if ``value`` is not plain JSON (a set, NaN, an integer past
    the decoder's digit limit …)."""
    text = encode_json_str(value)
    try:
        return decode_json(text)
    except ValueError:
        raise EncodeError("not decodable as JSON: ValueError") from None
