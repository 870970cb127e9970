"""The audit store's rules, on both stores: every test here runs once on a SQLite file and once
on a real PostgreSQL server (``store_target``), through ``open_store``. The contract's life
cycle, numbering, claims, retention and concurrency run on both stores in
tests/test_audit_store.py and tests/store/ (test_claim, test_run_id_prefix, test_effective_level);
here: the protocol itself, a run's level read back by another store, ids no store can hold
(ADR 0032), and a state edited in the store."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from nr_llm_core import ScriptedProvider, ToolLoop
from nr_llm_core.audit import AuditStoreError, UnknownRunError
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
    with open_store(store_target) as other:  # names no level: the run's own applies
        assert other.record_step(run, tool_step(content="kept verbatim"))
        assert other.steps(run)[0]["step"]["tool_result"] == "kept verbatim"
        assert other.get_run(narrow)["privacy_level"] == "none"
        assert other.record_step(narrow, tool_step(content="x"))
        assert set(other.steps(narrow)[0]["step"]) == {"kind", "round", "duration_ms"}


@pytest.mark.parametrize("named", ["store", "environment"])
def test_a_stricter_level_where_a_run_is_resumed_wins_and_is_stored(
    store_target: str, named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run begun at ``full`` gets a step from a store that names ``none`` (its own level,
    or ``NR_LLM_PRIVACY_LEVEL``): the stricter level applies to that step and is stored with
    the run, so a later writer that names nothing keeps to it too (ADR 0011)."""
    with open_store(store_target) as writer:
        run = writer.begin(privacy="full")
        assert writer.record_step(run, tool_step(content="before"))
    if named == "environment":
        monkeypatch.setenv("NR_LLM_PRIVACY_LEVEL", "none")
    with open_store(store_target, privacy="none" if named == "store" else None) as resumer:
        assert resumer.record_step(run, tool_step(round=1, content="RESUMED-CANARY"))
        assert resumer.get_run(run)["privacy_level"] == "none"
    monkeypatch.delenv("NR_LLM_PRIVACY_LEVEL", raising=False)
    with open_store(store_target) as later:
        assert later.record_step(run, tool_step(round=2, content="LATER-CANARY"))
        steps = [s["step"] for s in later.steps(run)]
    assert steps[0]["tool_result"] == "before"
    assert "CANARY" not in json.dumps(steps[1:])
    assert all(set(step) == {"kind", "round", "duration_ms"} for step in steps[1:])


# -- ids no store can hold ---------------------------------------------------------------------

#: PostgreSQL's text holds no NUL (SQLite's could); a lone surrogate (undecodable argv bytes)
#: is not UTF-8, which neither database takes as text.
UNHOLDABLE = {"nul": "nul\x00id", "only-nul": "\x00", "lone-surrogate": "lone\udcffid"}


@pytest.mark.parametrize("bad", list(UNHOLDABLE.values()), ids=list(UNHOLDABLE))
def test_an_id_no_store_can_hold_is_refused_before_anything_is_written(
    store_target: str, bad: str
) -> None:
    """``begin`` with an id one of the databases cannot hold: the same plain
    :class:`AuditStoreError` on both stores, from the stores' one rule before the database
    is asked (no driver exception as the error, its cause or its context), and nothing
    written: no run is listed, and the id names no run anywhere (lookups find nothing,
    claims and changes are refused as no such run, a step is not recorded)."""
    with open_store(store_target) as store:
        with pytest.raises(AuditStoreError) as refused:
            store.begin(bad)
        assert type(refused.value) is AuditStoreError
        assert refused.value.__cause__ is None and refused.value.__context__ is None
        assert "without NUL characters or lone surrogates" in str(refused.value)
        assert store.list_runs() == []
        assert store.get_run(bad) is None
        assert store.steps(bad) == []
        assert store.steps_of([bad], kind="tool") == {}
        assert store.load_suspended(bad) is None
        assert store.record_step(bad, tool_step()) is False
        for change in (
            lambda: store.claim_suspended(bad),
            lambda: store.mark_resumed(bad),
            lambda: store.discard(bad),
            lambda: store.settle(bad, "completed"),
            lambda: store.suspend(bad, STATE),
            lambda: store.resolve_run_id(bad),
        ):
            with pytest.raises(UnknownRunError):
                change()
        assert store.list_runs() == []


def test_an_id_with_a_nul_names_no_run_but_the_one_without(store_target: str) -> None:
    """A run ``abcd1234`` exists; ``abcd1234`` followed by NUL is another id (no store cuts
    it at the NUL): it names no run, and a claim or a step by it leaves the run as it was."""
    with open_store(store_target) as store:
        run = store.begin("abcd1234")
        store.suspend(run, STATE)
        shadow = run + "\x00"
        assert store.get_run(shadow) is None and store.steps(shadow) == []
        with pytest.raises(UnknownRunError):
            store.claim_suspended(shadow)
        assert store.record_step(shadow, tool_step()) is False
        record = store.get_run(run)
        assert record is not None
        assert record["status"] == "suspended" and record["steps"] == 0
        assert store.load_suspended(run) == STATE


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
