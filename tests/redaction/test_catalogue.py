"""The catalogue of secret shapes: every entry names its source and proves itself on examples.

Each positive example must come out of the redactor with exactly its marked span masked and the
rest unchanged, each negative example unchanged; a shape cannot be built without both.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nr_llm_core.redaction import (
    MAX_REDACTED_CHARS,
    SECRET_PATTERNS,
    TRUNCATION_MARK,
    SecretPattern,
    mask_secrets,
    redact_text,
)

from .examples import NEGATIVES, POSITIVES, expected, params, secrets, unmarked


def test_every_shape_names_its_source_and_marks_its_secrets() -> None:
    for shape in SECRET_PATTERNS:
        assert shape.source.strip(), shape
        assert shape.positive, shape
        assert shape.negative, shape
        for example in shape.positive:
            assert secrets(example), f"{shape.kind}: no ⟦secret⟧ marked in {example!r}"
        assert re.fullmatch(r"[a-z0-9-]+", shape.kind), shape.kind  # a mask the masks re-read


@pytest.mark.parametrize(
    "missing",
    [
        {"source": "", "positive": ("⟦x⟧",), "negative": ("y",)},
        {"source": "rule", "positive": (), "negative": ("y",)},
        {"source": "rule", "positive": ("⟦x⟧",), "negative": ()},
    ],
)
def test_a_shape_without_a_source_or_examples_is_refused(missing: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="needs a source and both kinds of example"):
        SecretPattern("made-up", r"x", **missing)  # type: ignore[arg-type]


@pytest.mark.parametrize(("shape", "example"), params(POSITIVES))
def test_a_positive_example_is_masked_exactly(shape: SecretPattern, example: str) -> None:
    """The whole redactor turns each marked span into this shape's mask and keeps the rest."""
    assert redact_text(unmarked(example)) == expected(example, shape.kind)


@pytest.mark.parametrize(("shape", "example"), params(POSITIVES))
def test_a_positive_example_is_caught_by_its_own_shape(shape: SecretPattern, example: str) -> None:
    """The shape alone masks its example: no neighbour in the catalogue does its work."""
    assert shape.sub(unmarked(example)) == expected(example, shape.kind)


@pytest.mark.parametrize(("shape", "example"), params(NEGATIVES))
def test_a_negative_example_is_kept(shape: SecretPattern, example: str) -> None:
    """Near misses pass through the whole redactor unchanged."""
    assert redact_text(example) == example
    assert shape.sub(example) == example


@pytest.mark.parametrize(("shape", "example"), params(POSITIVES))
def test_a_secret_cut_by_the_cap_is_still_masked(shape: SecretPattern, example: str) -> None:
    """Mask before cut: with the 2,000-character cap falling inside the secret, no start of
    the secret survives (cutting first would leave a prefix too short for any shape)."""
    text = unmarked(example)
    secret = secrets(example)[0]
    at = text.index(secret)
    filler_len = MAX_REDACTED_CHARS - at - len(secret) // 2
    lorem = "lorem ipsum dolor " * (MAX_REDACTED_CHARS // 18 + 1)
    filler = lorem[: filler_len - 1] + "\n"
    whole = filler + text + "\n" + lorem
    out = redact_text(whole)
    # Cut, unless the mask swallowed the rest (a private-key block without its END line).
    assert out.endswith(TRUNCATION_MARK) or len(mask_secrets(whole)) <= MAX_REDACTED_CHARS
    head = secret[: min(len(secret), 4)]
    assert not out.startswith(head, filler_len + at), out[filler_len + at - 20 :]
    assert secret not in out


def test_idempotent_on_every_example() -> None:
    for _id, _shape, example in POSITIVES + NEGATIVES:
        once = mask_secrets(unmarked(example))
        assert mask_secrets(once) == once, example


_noise = st.lists(
    st.one_of(
        st.text(max_size=12),
        st.sampled_from(
            ["password: ", "token=", "Cookie: ", "Authorization: ", "-----BEGIN PRIVATE KEY-----",
             "-----END PRIVATE KEY-----", '"', "'", "`", "=", ":", ";", "@", "://", " ", "4111"]
        ),
    ),
    max_size=8,
).map("".join)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([p[1:] for p in POSITIVES]), _noise, _noise)
def test_a_secret_between_lines_of_noise_never_survives(
    positive: tuple[SecretPattern, str], before: str, after: str
) -> None:
    """Whatever surrounds an example on other lines, its secrets are masked, idempotently."""
    _shape, example = positive
    out = mask_secrets(f"{before}\n{unmarked(example)}\n{after}")
    for secret in secrets(example):
        assert secret not in out
    assert mask_secrets(out) == out
