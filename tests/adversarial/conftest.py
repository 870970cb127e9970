"""Fixtures for the adversarial tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..loading.distributions import add_distribution
from ._tools import HOSTILE

HOSTILE_MODULE = f"""
from nr_llm_core import Artifact, ToolResult, ToolSpec, hookimpl

HOSTILE = {HOSTILE!r}

class Tool:
    @hookimpl
    def tool_spec(self):
        return ToolSpec("adv_hostile", "Returns terminal escapes in every field: " + HOSTILE)

    @hookimpl
    def execute(self, arguments):
        return ToolResult.text(
            "content " + HOSTILE,
            Artifact.text("label " + HOSTILE, "text " + HOSTILE),
            Artifact.table("table " + HOSTILE, ["column " + HOSTILE], [["cell " + HOSTILE]]),
        )
"""


@pytest.fixture
def hostile_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A real distribution with the ``adv_hostile`` entry point, importable in this process
    and the only one loaded; returns the tool's name."""
    site = tmp_path / "site"
    add_distribution(
        site,
        "t-adv-hostile",
        {"adv_hostile": "t_adv_hostile:Tool"},
        {"t_adv_hostile": HOSTILE_MODULE},
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("NR_LLM_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("NR_LLM_PLUGINS", "adv_hostile")
    return "adv_hostile"
