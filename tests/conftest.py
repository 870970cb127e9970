"""Shared fixtures: no NR_LLM_* variable from the outside changes a test's outcome."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _clean_nr_llm_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("NR_LLM_") or name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
            monkeypatch.delenv(name)
