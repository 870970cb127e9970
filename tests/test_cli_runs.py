"""``nr-llm runs list|show`` and ``nr-llm privacy level|purge`` on a real database file."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import nr_llm_core
from nr_llm_core.audit import AgentRunPersister
from nr_llm_core.cli import main
from nr_llm_core.results import ToolResult
from nr_llm_core.trace import RunStep, ToolInvocation

HOSTILE = "ansi\x1b[2J rlo\u202e nul\x00 c1\x85 zw\u200b bell\x07"
# Any raw control, C1, bidi or zero-width character reaching the terminal is a failure.
RAW_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def run_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "cli.db"


def make_run(db: Path, *, privacy: str = "full", run_id: str | None = None) -> str:
    with AgentRunPersister(db, privacy=privacy) as store:
        run = store.begin(run_id)
        invocation = ToolInvocation(
            name="echo", arguments={"q": HOSTILE}, result=ToolResult.text(HOSTILE)
        )
        store.record_step(run, RunStep.tool(round=0, duration_ms=1.5, invocation=invocation))
        store.record_step(run, RunStep.llm(round=0, duration_ms=2.0, content=HOSTILE))
        store.settle_completed(run, termination_reason="completed", iterations=1)
    return run


def test_commands_are_registered() -> None:
    code, out = run_cli("--help")
    assert code == 0
    assert "runs" in out
    assert "privacy" in out


def test_list_without_a_database_does_not_create_one(db: Path) -> None:
    code, out = run_cli("runs", "list", "--db", str(db))
    assert code == 0
    assert "No audit database" in out
    assert not db.exists()


def test_list_uses_the_environment_default(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = make_run(db)
    monkeypatch.setenv("NR_LLM_DB", str(db))
    code, out = run_cli("runs", "list")
    assert code == 0
    assert run in out
    assert "completed" in out


def test_list_escapes_stored_strings(db: Path) -> None:
    make_run(db, run_id="evil\x1b]0;title\x07id")
    code, out = run_cli("runs", "list", "--db", str(db))
    assert code == 0
    assert not RAW_UNSAFE.search(out)
    assert "evil\\x1b]0;title\\x07id" in out


def test_show_prints_steps_exactly_as_stored_and_visibly(db: Path) -> None:
    run = make_run(db)
    code, out = run_cli("runs", "show", run, "--db", str(db))
    assert code == 0, out
    assert not RAW_UNSAFE.search(out)
    assert "#1 tool" in out
    assert "#2 llm" in out
    assert "\\u202e" in out  # RLO shown, not applied
    assert "\\x85" in out
    with AgentRunPersister(db) as store:
        stored = store.steps(run)
    payloads = [s["payload"] for s in stored]
    assert stored[1]["step"]["content"] == HOSTILE  # stored as data, byte for byte
    # The JSON encoder already escapes C0; only what visible() adds differs from the stored text.
    for payload in payloads:
        shown = payload.replace("\u202e", "\\u202e").replace("\x85", "\\x85")
        shown = shown.replace("\u200b", "\\u200b")
        assert shown in out


def test_show_at_metadata_shows_what_was_kept(db: Path) -> None:
    run = make_run(db, privacy="metadata")
    code, out = run_cli("runs", "show", run, "--db", str(db))
    assert code == 0
    assert '"content_redacted":true' in out
    assert "ansi" not in out
    assert "privacy_level: metadata" in out


def test_show_unknown_run_fails(db: Path) -> None:
    make_run(db)
    code, out = run_cli("runs", "show", "nope\x1b[31m", "--db", str(db))
    assert code == 1
    assert "no such run" in out
    assert not RAW_UNSAFE.search(out)


def test_show_without_a_database_fails(db: Path) -> None:
    code, out = run_cli("runs", "show", "x", "--db", str(db))
    assert "No audit database" in out
    assert code == 1
    assert not db.exists()


def test_purge(db: Path) -> None:
    old = make_run(db)
    new = make_run(db)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE runs SET started_at = '2001-01-01T00:00:00.000000Z' WHERE id = ?", (old,))
    conn.commit()
    conn.close()
    code, out = run_cli("privacy", "purge", "--older-than", "30", "--db", str(db))
    assert code == 0
    assert "Purged 1 run(s)" in out
    with AgentRunPersister(db) as store:
        assert [r["id"] for r in store.list_runs()] == [new]


@pytest.mark.parametrize("args", [[], ["--older-than", "-1"], ["--older-than", "soon"]])
def test_purge_refuses_bad_arguments(db: Path, args: list[str]) -> None:
    code, _ = run_cli("privacy", "purge", *args, "--db", str(db))
    assert code == 2


def test_privacy_level(monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_cli("privacy", "level")[1].splitlines()[0] == "metadata"
    monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", "redacted")
    assert run_cli("privacy", "level")[1].splitlines()[0] == "redacted"
    monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", "bogus")
    assert run_cli("privacy", "level")[1].splitlines()[0] == "metadata"


def test_package_exports_are_lazy() -> None:
    for name in ("PrivacyLevel", "RunStepPrivacyFilter", "AgentRunPersister"):
        assert name in nr_llm_core.__all__
    code = (
        "import sys, nr_llm_core\n"
        "assert 'nr_llm_core.audit' not in sys.modules\n"
        "assert 'nr_llm_core.privacy' not in sys.modules\n"
        "assert 'sqlite3' not in sys.modules\n"
        "assert nr_llm_core.PrivacyLevel.METADATA == 'metadata'\n"
        "assert nr_llm_core.AgentRunPersister.__module__ == 'nr_llm_core.audit'\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "ok", done.stderr
