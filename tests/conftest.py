"""Shared fixtures: no NR_LLM_* variable or user config file from the outside changes a test's
outcome, and no test writes the audit store in the working directory."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _clean_nr_llm_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    for name in list(os.environ):
        if name.startswith("NR_LLM_") or name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
            monkeypatch.delenv(name)
    # Commands that record runs write here, not into ./.nr-llm/ of the checkout.
    monkeypatch.setenv("NR_LLM_DB", str(tmp_path_factory.mktemp("audit") / "audit.db"))
    # The user's own nr-llm config file (~/.config/nr-llm/config.toml) is not read: the user
    # configuration directory is an empty one of the test's.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
