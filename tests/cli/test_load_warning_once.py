"""An operator pass reported a broken entry point's warning printed twice by ``nr-llm tools
list``. Not reproduced on this code (an import error, a missing attribute, a wrong object, a
name two distributions claim, a name mismatch; in process and isolated; ``tools list``,
``doctor``, ``run``, ``demo``): this pins that each command that loads the tools prints the
warning exactly once, in a real process with the CLI's own log handler, for a real
distribution that fails at import."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..loading.distributions import add_distribution

WARNING = "tool 'broken' from 'nr-llm-op-broken' not loaded: could not be imported: RuntimeError"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    add_distribution(
        root,
        "nr-llm-op-broken",
        {"broken": "nr_llm_op_broken:Tool"},
        {"nr_llm_op_broken": "raise RuntimeError('broken at import')\n"},
    )
    return root


@pytest.mark.parametrize(
    "command",
    [
        ["tools", "list"],
        ["tools", "list", "--isolate", "broken"],
        ["doctor"],
        ["run", "hi"],
    ],
    ids=["tools-list", "tools-list-isolated", "doctor", "run"],
)
def test_the_warning_is_printed_once(site: Path, tmp_path: Path, command: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NR_LLM_")}
    env["PYTHONPATH"] = str(site)
    env["NR_LLM_DB"] = str(tmp_path / "audit.db")
    proc = subprocess.run(
        [sys.executable, "-m", "nr_llm_core", *command],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    said = proc.stdout + proc.stderr
    isolated = "in its worker: " if "--isolate" in command else ""
    expected = WARNING.replace("not loaded: ", f"not loaded: {isolated}")
    assert said.count(expected) == 1, said
    assert said.count("not loaded") == 1, said
