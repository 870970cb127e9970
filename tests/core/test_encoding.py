"""The shared encoder's helpers: terminal-safe JSON and the deep copy of arguments."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from nr_llm_core.encoding import EncodeError, encode_json_ascii, encode_json_str, json_copy

HOSTILE = 'nul\x00 esc\x1b[2J del\x7f c1\x9b rlo\u202e zw\u200b bom\ufeff é 😀 "q" \\'


def test_ascii_json_is_printable_ascii_and_the_same_value() -> None:
    value = {HOSTILE: [HOSTILE, 1, 2.5, None, True]}
    text = encode_json_ascii(value)
    assert text.isascii() and text.isprintable()
    assert json.loads(text) == value == json.loads(encode_json_str(value))
    assert "\\u007f" in text and "\\u202e" in text and "\\u009b" in text


@pytest.mark.parametrize("bad", [math.nan, {1, 2}, b"x"], ids=["nan", "set", "bytes"])
def test_ascii_json_refuses_what_the_encoder_refuses(bad: Any) -> None:
    with pytest.raises(EncodeError):
        encode_json_ascii({"x": bad})


def test_json_copy_is_deep_and_equal() -> None:
    original = {"a": [1, {"b": ["c"]}], "d": HOSTILE}
    copied = json_copy(original)
    assert copied == original
    copied["a"][1]["b"].append("changed")
    assert original == {"a": [1, {"b": ["c"]}], "d": HOSTILE}


@pytest.mark.parametrize(
    "bad", [{1, 2}, math.inf, 10**5000], ids=["set", "inf", "past-the-digit-limit"]
)
def test_json_copy_refuses_what_is_not_plain_json(bad: Any) -> None:
    with pytest.raises(EncodeError):
        json_copy({"x": bad})
