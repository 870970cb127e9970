"""What the decoded view (ADR 0034) costs on a huge encoded input, counted: work and memory in
proportion to the input, with no blow-up from decoding what was decoded.

``mask_secrets`` has no length cap (``get_env`` shows whole values; ``redact_text`` masks the
whole string before it cuts it), so its decoded view is built over all of it. Each input here
is all escapes, escapes of escapes three layers deep, or encoded secrets side by side (each
masked, so each round of masking builds the view again). Counted: how many views are built,
how many characters every decoding layer goes over, and the peak of what the redactor
allocates (``tracemalloc``). Ten times the input must cost at most eleven times the work and
fifteen times the memory; the work is at most eight decodings of the input, and the peak at
most 64 bytes per character (measured: 4 to 45).
"""

from __future__ import annotations

import tracemalloc
from array import array
from collections.abc import Callable

import pytest

from nr_llm_core import _decoded_view as view
from nr_llm_core.redaction import mask_secrets

INPUTS: dict[str, Callable[[int], str]] = {
    "percent": lambda n: "%41" * (n // 3),
    "percent-three-layers": lambda n: "%252541" * (n // 7),
    "json-quotes": lambda n: '\\"a' * (n // 3),
    "html-of-html": lambda n: "&amp;quot;x" * (n // 11),
    "u-escapes": lambda n: "\\u0041" * (n // 6),
    "encoded-secrets-side-by-side": lambda n: "token%3D%22abc123def%22%20" * (n // 26),
    "escaped-json-secrets": lambda n: '{\\"password\\": \\"a\\\\\\"b1234\\"} ' * (n // 33),
}


class _Count:
    def __init__(self) -> None:
        self.views = 0
        self.chars = 0


@pytest.fixture
def count(monkeypatch: pytest.MonkeyPatch) -> _Count:
    counted = _Count()
    decode_once = view._decode_once

    def counting(text: str, backslashes: bool = True) -> tuple[str, array[int]] | None:
        counted.chars += len(text)
        return decode_once(text, backslashes)

    original_of = view.DecodedView.of.__func__  # type: ignore[attr-defined]

    def of(
        cls: type[view.DecodedView], source: str, *, backslashes: bool = True
    ) -> view.DecodedView | None:
        counted.views += 1
        return original_of(cls, source, backslashes=backslashes)  # type: ignore[no-any-return]

    monkeypatch.setattr(view, "_decode_once", counting)
    monkeypatch.setattr(view.DecodedView, "of", classmethod(of))
    return counted


def _measure(text: str, count: _Count) -> tuple[int, int, int]:
    count.views = count.chars = 0
    tracemalloc.start()
    try:
        mask_secrets(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return count.views, count.chars, peak


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_a_huge_encoded_input_costs_in_proportion(name: str, count: _Count) -> None:
    build = INPUTS[name]
    small_text, large_text = build(20_000), build(200_000)
    small = _measure(small_text, count)
    large = _measure(large_text, count)
    ratio = len(large_text) / len(small_text)
    views, chars, peak = large
    assert views == small[0] and views <= 8, (small, large)  # rounds do not grow with size
    # At most 12 reads of the input: ADR 0043's second view (URL and HTML only, where JSON is
    # read) decodes the text again in each masking round (9.5 reads measured at most).
    assert chars <= 11 / 10 * ratio * small[1] and chars <= 12 * len(large_text), (small, large)
    assert peak <= 15 / 10 * ratio * small[2] and peak <= 64 * len(large_text), (small, large)
