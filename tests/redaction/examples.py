"""Reading the catalogue's examples: ``⟦…⟧`` marks the secret in a positive example."""

from __future__ import annotations

import re
from typing import Any, Final

import pytest

from nr_llm_core.redaction import SECRET_PATTERNS, SecretPattern, mask

__all__ = ["NEGATIVES", "POSITIVES", "expected", "params", "secrets", "unmarked"]

_MARKED: Final = re.compile(r"⟦(.*?)⟧", re.S)


def unmarked(example: str) -> str:
    """The example as the redactor sees it: the markers removed."""
    return example.replace("⟦", "").replace("⟧", "")


def expected(example: str, kind: str) -> str:
    """What the redactor must make of a positive example: each marked span becomes the mask."""
    masked = mask(kind)
    return _MARKED.sub(lambda _m: masked, example)


def secrets(example: str) -> list[str]:
    """The marked spans of a positive example."""
    return _MARKED.findall(example)


def _label(index: int, shape: SecretPattern, n: int) -> str:
    return f"{index:02d}-{shape.kind}-{n}"


#: (test id, shape, example) for every positive example of the catalogue.
POSITIVES: Final = [
    (_label(i, shape, n), shape, example)
    for i, shape in enumerate(SECRET_PATTERNS)
    for n, example in enumerate(shape.positive)
]
#: (test id, shape, example) for every negative example of the catalogue.
NEGATIVES: Final = [
    (_label(i, shape, n), shape, example)
    for i, shape in enumerate(SECRET_PATTERNS)
    for n, example in enumerate(shape.negative)
]


def params(examples: list[tuple[str, SecretPattern, str]]) -> list[Any]:
    """``examples`` as pytest parameters ``(shape, example)`` with readable ids."""
    return [pytest.param(shape, example, id=label) for label, shape, example in examples]
