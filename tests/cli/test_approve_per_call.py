"""``nr-llm runs approve`` approved every pending call together, while the API decides per
call. ``--call ID`` (approve only these) and ``--deny ID`` (deny these, approve the others)
decide per call; tried on a run waiting on two calls of a real distribution's tool that
appends a line per call to a log: only the approved call runs, an id that waits for nothing
is refused before anything runs, and the digest check still refuses a stale decision."""

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

from ..store._support import LOG_VAR, append_host, log_lines, make_site

TWO_CALLS: list[Any] = [
    {
        "content": "appending twice",
        "tool_calls": [
            {"id": "a1", "name": "append_line", "arguments": {"text": "one"}},
            {"id": "a2", "name": "append_line", "arguments": {"text": "two"}},
        ],
    },
    "appended",
]


@pytest.fixture
def waiting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str, str, Path]:
    """(db, run id, digest, script) of a run waiting on a1 and a2; the tool's distribution
    importable and its log under ``tmp_path``."""
    monkeypatch.syspath_prepend(str(make_site(tmp_path / "dist")))
    monkeypatch.setenv(LOG_VAR, str(tmp_path / "append.log"))
    db = tmp_path / "audit.db"
    with AgentRunPersister(db) as store:
        result = ToolLoop(ScriptedProvider(TWO_CALLS), append_host(), persister=store).run("go")
    assert result.termination_reason is TerminationReason.AWAITING_APPROVAL
    assert result.suspended is not None and result.suspended.needs_approval == ("a1", "a2")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(TWO_CALLS))
    return db, result.run_id, result.suspended.digest, script


def approve(db: Path, run_id: str, digest: str, script: Path, *extra: str) -> tuple[int, str]:
    args = ["runs", "approve", run_id, "--digest", digest, "--script", str(script)]
    out = CliRunner().invoke(main, [*args, "--db", str(db), *extra])
    return out.exit_code, out.output


def ran(tmp_path: Path) -> list[str]:
    return [line.split(" ", 1)[1] for line in log_lines(tmp_path / "append.log")]


def test_call_approves_only_the_named_call(
    tmp_path: Path, waiting: tuple[Path, str, str, Path]
) -> None:
    code, out = approve(*waiting, "--call", "a1")
    assert code == 0, out
    assert ran(tmp_path) == ["one"]
    assert 'did not approve the call to "append_line"' in out  # a2's answer, to the model


def test_deny_denies_the_named_call_and_approves_the_others(
    tmp_path: Path, waiting: tuple[Path, str, str, Path]
) -> None:
    code, out = approve(*waiting, "--deny", "a1")
    assert code == 0, out
    assert ran(tmp_path) == ["two"]


def test_no_option_approves_every_call_as_before(
    tmp_path: Path, waiting: tuple[Path, str, str, Path]
) -> None:
    code, out = approve(*waiting)
    assert code == 0, out
    assert ran(tmp_path) == ["one", "two"]


def test_an_id_that_waits_for_nothing_is_refused_before_anything_runs(
    tmp_path: Path, waiting: tuple[Path, str, str, Path]
) -> None:
    db, run_id, _, _ = waiting
    code, out = approve(*waiting, "--call", "a3")
    assert code == 2, out
    said = " ".join(out.split())
    assert "no call of the run waits for approval with the id 'a3'" in said
    assert "the calls that wait: a1, a2" in said
    code, out = approve(*waiting, "--call", "a1", "--deny", "a1")
    assert code == 2 and "--call and --deny both name 'a1'" in out
    assert ran(tmp_path) == []
    with AgentRunPersister(db) as store:
        record = store.get_run(run_id)
    assert record is not None and record["status"] == "suspended"


def test_a_stale_digest_is_refused_per_call_too(
    tmp_path: Path, waiting: tuple[Path, str, str, Path]
) -> None:
    db, run_id, digest, script = waiting
    code, out = approve(db, run_id, "0" * len(digest), script, "--call", "a1")
    assert code == 1, out
    assert "stale approval" in out
    assert ran(tmp_path) == []
