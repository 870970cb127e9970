"""HTML numeric character references with leading zeros: red-team of ADR 0034.

A numeric reference may have any number of leading zeros (``&#x0000041;`` and ``&#00000065;``
are ``A``), and HTML reads them so. The view took at most six hex or seven decimal digits, so a
catalogue secret written with zero-padded references was stored whole.
"""

from __future__ import annotations

import pytest

from nr_llm_core._decoded_view import DecodedView
from nr_llm_core.redaction import redact_text

KEY = "AKIAIOSFODNN7EXAMPLQ"


@pytest.mark.parametrize("form", ["&#x%07X;", "&#x%010x;", "&#%08d;", "&#%012d;"])
def test_a_secret_in_zero_padded_references_is_masked(form: str) -> None:
    """Tries: an AWS access key id with every character a zero-padded numeric reference."""
    text = "key " + "".join(form % ord(c) for c in KEY) + " end"
    out = redact_text(text)
    assert out == "key [REDACTED:aws-access-key-id] end"


def test_padding_is_still_bounded_to_unicode() -> None:
    """A padded reference still names at most U+10FFFF and never NUL: beyond is left as
    written."""
    assert DecodedView.of("&#x0000110000;&#00000000;") is None
    view = DecodedView.of("&#x000010FFFF;")
    assert view is not None and view.text == "\U0010ffff"


def test_a_long_run_of_zeros_still_decodes() -> None:
    """References with a thousand leading zeros each are still read (the zeros are taken
    possessively, so a run is scanned once)."""
    text = ("&#" + "0" * 1000 + "65;") * 200
    view = DecodedView.of(text)
    assert view is not None and view.text == "A" * 200
