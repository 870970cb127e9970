"""Fixtures for the OpenTelemetry tests: an SDK tracer and meter that keep what they export in
memory, and no ``OTEL_*`` variable from the outside changing what the SDK or exporter does."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from ._memory import Memory


@pytest.fixture(autouse=True)
def _clean_otel_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)


@pytest.fixture
def memory() -> Iterator[Memory]:
    with Memory() as kept:
        yield kept
