"""The audit store's rules, on both stores: every test here runs once on a SQLite file and once
on a real PostgreSQL server (``store_target``), through ``open_store``. The contract's life
cycle, numbering, claims, retention and concurrency run on both stores in
tests/test_audit_store.py and tests/store/ (test_claim, test_run_id_prefix, test_effective_level);
here: the protocol itself, a run's level read back by another store, and a state edited in
the store."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from nr_llm_core import ScriptedProvider, ToolLoop
from nr_llm_core.audit import AuditStoreError
from nr_llm_core.errors import ApprovalError
from nr_llm_core.results import ToolResult
from nr_llm_core.stores import AuditStore, open_store, store_kind
from nr_llm_core.trace import RunStep, ToolInvocation

from ..store._support import APPEND_TURNS, LOG_VAR, append_host, log_lines

STATE = {"messages": [{"role": "user", "content": "hi"}], "pending": [{"id": "c1", "name": "echo"}]}


def tool_step(round: int = 0, content: str = "ok") -> RunStep:
    invocation = ToolInvocation(name="echo", arguments={}, result=ToolResult.text(content))
    return RunStep.tool(round=round, duration_ms=1.0, invocation=invocation)


def test_both_stores_implement_the_protocol(store_target: str) -> None:
    with open_store(store_target) as store:
        assert isinstance(store, AuditStore)


def test_the_run_level_is_read_back_by_another_store(store_target: str) -> None:
    with open_store(store_target) as writer:
        run = writer.begin(privacy="full")
        narrow = writer.begin(meta={"privacy": "none"})
    with open_store(store_target, privacy="none") as other:
        assert other.record_step(run, tool_step(content="kept verbatim"))
        assert other.steps(run)[0]["step"]["tool_result"] == "kept verbatim"
        assert other.get_run(narrow)["privacy_level"] == "none"
        assert other.record_step(narrow, tool_step(content="x"))
        assert set(other.steps(narrow)[0]["step"]) == {"kind", "round", "duration_ms"}


# -- the loop on both stores -------------------------------------------------------------------


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "append.log"
    monkeypatch.setenv(LOG_VAR, str(path))
    return path


def suspend(target: str) -> tuple[str, str]:
    with open_store(target) as store:
        result = ToolLoop(ScriptedProvider(APPEND_TURNS), append_host(), persister=store).run(
            "append once"
        )
    assert result.suspended is not None
    return result.run_id, result.suspended.digest


def rehashed(text: str, change: str, version: int) -> str:
    """The saved state with the pending call's text changed and the digest recomputed the way
    anyone can (the plain SHA-256 of version 1), at ``version``."""
    state = json.loads(text)
    for call in [*state["pending"], *state["messages"][-1]["tool_calls"]]:
        call["arguments"]["text"] = change
    state["version"] = version
    body = {k: v for k, v in state.items() if k != "digest"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    state["digest"] = hashlib.sha256(canonical.encode("ascii")).hexdigest()
    return json.dumps(state, separators=(",", ":"))


def edit_saved_state(target: str, run_id: str, change: str, version: int) -> None:
    """Rewrite the saved state as someone who can write the store, but does not hold the host
    secret, would: on SQLite the file and the hashes its row keeps, on PostgreSQL the row."""
    if store_kind(target) == "sqlite":
        with sqlite3.connect(target) as conn:
            name = conn.execute("SELECT state_file FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
            path = Path(target + "-suspended") / name
            text = rehashed(path.read_text(), change, version)
            path.write_text(text)
            conn.execute(
                "UPDATE runs SET state_sha256 = ?, state_digest = ? WHERE id = ?",
                (hashlib.sha256(text.encode()).hexdigest(), json.loads(text)["digest"], run_id),
            )
        return
    import sqlalchemy as sa

    engine = sa.create_engine(target)
    with engine.begin() as conn:
        text = conn.execute(
            sa.text("SELECT state FROM states WHERE run_id = :r"), {"r": run_id}
        ).scalar_one()
        new = rehashed(text, change, version)
        conn.execute(
            sa.text("UPDATE states SET state = :s, digest = :d WHERE run_id = :r"),
            {"s": new, "d": json.loads(new)["digest"], "r": run_id},
        )
    engine.dispose()


@pytest.mark.parametrize("version", [2, 1], ids=["rehashed", "downgraded-to-version-1"])
def test_a_state_edited_in_the_store_is_refused(store_target: str, log: Path, version: int) -> None:
    """Whoever can write the store but does not hold the host secret changes the pending
    call's arguments and recomputes the digest as anyone can (SHA-256), keeping the version or
    claiming the keyless version 1: the resume is refused and the tool never runs."""
    run_id, _ = suspend(store_target)
    edit_saved_state(store_target, run_id, "EDITED-IN-THE-DATABASE", version)
    with open_store(store_target) as store:
        loop = ToolLoop(ScriptedProvider(APPEND_TURNS[1:]), append_host(), persister=store)
        with pytest.raises((ApprovalError, AuditStoreError)):
            loop.resume(run_id, approved=True)
    assert log_lines(log) == []
