"""A run suspended at one privacy level and resumed in a process that names another.

ADR 0011: where levels meet the stricter wins, and ``NR_LLM_PRIVACY_LEVEL``, when set, "is the
operator's named level and always takes part". A run recorded at ``full`` and approved by an
operator whose environment says ``none`` (say, after they learnt what the run touches) meets
two levels: the one recorded with the run and the one named now. These tests resume such runs
in a real ``nr-llm runs approve`` process and in a fresh persister, and grep the raw bytes of
every file of the store for a canary that only the resumed part of the run produces.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import AgentRunPersister, ScriptedProvider, ToolLoop
from nr_llm_core.loop import TerminationReason
from nr_llm_core.trace import RunStep

from ._support import append_host, cli_env, files_holding, make_site

AFTER = "RESUMED-CANARY-58e2"
TURNS: list[Any] = [
    {
        "content": "appending",
        "tool_calls": [{"id": "a1", "name": "append_line", "arguments": {"text": "once"}}],
    },
    f"appended it {AFTER}",
]


def _suspend_at(db: Path, level: str) -> tuple[str, str]:
    with AgentRunPersister(db, privacy=level) as store:
        result = ToolLoop(ScriptedProvider(TURNS), append_host(), persister=store).run("append")
    assert result.termination_reason is TerminationReason.AWAITING_APPROVAL
    assert result.suspended is not None
    return result.run_id, result.suspended.digest


@pytest.mark.xfail(
    strict=True,
    reason="AgentRunPersister._level reads the run's stored level alone; the environment "
    "does not take part (audit.py, busy)",
)
def test_a_stricter_environment_applies_to_the_steps_a_resumer_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A persister opened under ``NR_LLM_PRIVACY_LEVEL=none`` records a step of a run begun
    at ``full`` elsewhere: the operator's level takes part, so no byte of the step's content
    reaches the files."""
    db = tmp_path / "audit.db"
    with AgentRunPersister(db, privacy="full") as store:
        run = store.begin()
    monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", "none")
    with AgentRunPersister(db) as store:
        assert store.record_step(run, RunStep.llm(round=1, duration_ms=1.0, content=AFTER))
    assert files_holding(db, [AFTER]) == {}


@pytest.mark.xfail(
    strict=True,
    reason="AgentRunPersister._level reads the run's stored level alone; the environment "
    "does not take part (audit.py, busy)",
)
def test_runs_approve_under_a_stricter_environment_records_at_that_level(
    tmp_path: Path,
) -> None:
    """A run suspended at ``full``; ``NR_LLM_PRIVACY_LEVEL=none nr-llm runs approve`` in a real
    process. The answer the model gives after the approval must not be stored."""
    db = tmp_path / "audit.db"
    site = make_site(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(TURNS))
    run_id, digest = _suspend_at(db, "full")
    env = cli_env(site, tmp_path / "append.log")
    env["NR_LLM_PRIVACY_LEVEL"] = "none"
    args = ["runs", "approve", run_id, "--digest", digest, "--script", str(script)]
    done = subprocess.run(
        [sys.executable, "-m", "nr_llm_core", *args, "--db", str(db), "--blind", "--yes"],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert "completed" in done.stdout
    assert files_holding(db, [AFTER]) == {}
