"""A run started with the scripted provider and ``--script``, then decided on without
``--script``, silently went on with the built-in demo's turns. The decision is now refused
before anything is shown, claimed or run, naming what to pass; another script that did not
play the run's turns is refused the same way; ``--allow-provider-change`` goes on with them
on purpose; the script the run was started with resumes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nr_llm_core import ScriptedProvider, ToolLoop
from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.cli import main
from nr_llm_core.loop import TerminationReason

from ..store._support import APPEND_TURNS, LOG_VAR, append_host, log_lines, make_site


@pytest.fixture
def waiting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str, Path]:
    """(db, run id, script) of a run that waits for approval of one append."""
    monkeypatch.syspath_prepend(str(make_site(tmp_path / "dist")))
    monkeypatch.setenv(LOG_VAR, str(tmp_path / "append.log"))
    monkeypatch.chdir(tmp_path)  # the demo's tools keep their database in ./.nr-llm
    db = tmp_path / "audit.db"
    with AgentRunPersister(db) as store:
        result = ToolLoop(ScriptedProvider(APPEND_TURNS), append_host(), persister=store).run("go")
    assert result.termination_reason is TerminationReason.AWAITING_APPROVAL
    script = tmp_path / "script.json"
    script.write_text(json.dumps(APPEND_TURNS))
    return db, result.run_id, script


def decide(db: Path, run_id: str, *extra: str) -> tuple[int, str]:
    out = CliRunner().invoke(main, ["runs", "approve", run_id, "--db", str(db), *extra])
    return out.exit_code, out.output


def still_waits(db: Path, run_id: str) -> bool:
    with AgentRunPersister(db) as store:
        record = store.get_run(run_id)
    return record is not None and record["status"] == "suspended"


def test_without_the_script_the_demo_is_refused(
    tmp_path: Path, waiting: tuple[Path, str, Path]
) -> None:
    db, run_id, _ = waiting
    code, out = decide(db, run_id)
    assert code == 1, out
    said = " ".join(out.split())
    assert "the demo script (no --script was given) does not begin with them" in said
    assert "pass the --script the run was started with" in said
    assert "pending" not in out.lower()  # refused before the calls were shown
    assert log_lines(tmp_path / "append.log") == []
    assert still_waits(db, run_id)


def test_another_script_is_refused(tmp_path: Path, waiting: tuple[Path, str, Path]) -> None:
    db, run_id, _ = waiting
    other: list[Any] = [{"tool_calls": [{"name": "append_line", "arguments": {"text": "x"}}]}]
    wrong = tmp_path / "other.json"
    wrong.write_text(json.dumps(other))
    code, out = decide(db, run_id, "--script", str(wrong))
    assert code == 1, out
    assert "the --script given does not begin with them" in " ".join(out.split())
    assert still_waits(db, run_id)


def test_the_same_script_resumes_and_allow_goes_on_with_the_demo(
    tmp_path: Path, waiting: tuple[Path, str, Path]
) -> None:
    db, run_id, script = waiting
    code, out = decide(db, run_id, "--script", str(script))
    assert code == 0, out
    assert "appended it" in out
    assert [line.split(" ", 1)[1] for line in log_lines(tmp_path / "append.log")] == ["once"]


def test_allow_provider_change_goes_on_with_the_demo_on_purpose(
    waiting: tuple[Path, str, Path],
) -> None:
    db, run_id, _ = waiting
    code, out = decide(db, run_id, "--allow-provider-change")
    assert not still_waits(db, run_id), out
    assert code in (0, 1)  # the demo's later turns may fail on this run's tools: its choice
