"""``nr-llm doctor`` names a tool declared in an entry-point group nr-llm does not read.

A newcomer who writes ``[project.entry-points."nr_llm.tools"]`` (or ``nr-llm.tool``) sees their
tool missing from ``tools list`` and ``doctor`` said "No load errors.": nothing pointed at the
group's name. Real ``.dist-info`` directories on ``PYTHONPATH``, the real CLI in a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _dist(site: Path, dist: str, group: str, name: str) -> None:
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = somewhere:thing\n")
    (info / "RECORD").write_text("")


def _doctor(site: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env["PYTHONPATH"] = str(site)
    env["NR_LLM_DB"] = str(tmp_path / "audit.db")
    return subprocess.run(
        [sys.executable, "-m", "nr_llm_core", "doctor"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("group", ["nr_llm.tools", "nr-llm.tool", "NR_LLM_TOOL"])
def test_a_tool_in_a_nearly_right_group_is_named_with_the_right_group(
    tmp_path: Path, group: str
) -> None:
    site = tmp_path / "site"
    _dist(site, "nr-llm-typo", group, "my_tool")
    proc = _doctor(site, tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        f"! my_tool (distribution nr-llm-typo) is declared in the entry-point group {group!r}, "
        "which nr-llm does not read: tools are found in 'nr_llm.tool'"
    ) in proc.stdout


def test_other_groups_are_not_named(tmp_path: Path) -> None:
    """A distribution's unrelated groups (a console script, a pytest plugin) are its own."""
    site = tmp_path / "site"
    _dist(site, "nr-llm-other", "console_scripts", "my_tool")
    _dist(site, "nr-llm-plugin", "pytest11", "nr_llm_tool")
    proc = _doctor(site, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "does not read" not in proc.stdout
    assert "No load errors." in proc.stdout
