"""The audit store's rules, on both stores: every test here runs once on a SQLite file and once
on a real PostgreSQL server (``store_target``), through ``open_store``."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import ScriptedProvider, ToolLoop
from nr_llm_core.audit import AuditStoreError, RunSettledError, UnknownRunError
from nr_llm_core.errors import AlreadyClaimedError, ApprovalError
from nr_llm_core.loop import TerminationReason
from nr_llm_core.results import Artifact, ToolResult
from nr_llm_core.stores import AuditStore, open_store, store_kind
from nr_llm_core.trace import RunStep, StepKind, ToolInvocation

from ..store._support import APPEND_TURNS, LOG_VAR, append_host, log_lines

STATE = {"messages": [{"role": "user", "content": "hi"}], "pending": [{"id": "c1", "name": "echo"}]}


def tool_step(round: int = 0, content: str = "ok") -> RunStep:
    invocation = ToolInvocation(name="echo", arguments={}, result=ToolResult.text(content))
    return RunStep.tool(round=round, duration_ms=1.0, invocation=invocation)


def numbered(writer: int, index: int) -> RunStep:
    return RunStep(
        kind=StepKind.TOOL, round=index, duration_ms=0.0, fields={"writer": writer, "index": index}
    )


def seqs(store: AuditStore, run_id: str) -> list[int]:
    return [s["seq"] for s in store.steps(run_id)]


def test_both_stores_implement_the_protocol(store_target: str) -> None:
    with open_store(store_target) as store:
        assert isinstance(store, AuditStore)


def test_begin_record_settle(store_target: str) -> None:
    with open_store(store_target) as store:
        run = store.begin(meta={"model": "m1"})
        assert store.record_step(run, tool_step(0))
        llm = RunStep.llm(
            round=0, duration_ms=2.5, content="x", usage={"input_tokens": 7, "output_tokens": 2}
        )
        assert store.record_step(run, llm)
        store.settle_completed(run, termination_reason="completed", iterations=1, truncated=False)
        record = store.get_run(run)
        assert record is not None
        assert record["status"] == "completed" and record["ended_at"] is not None
        assert (record["tokens_in"], record["tokens_out"]) == (7, 2)
        assert (record["iterations"], record["truncated"], record["steps"]) == (1, False, 2)
        assert record["meta"] == {"model": "m1"}
        steps = store.steps(run)
        assert [s["kind"] for s in steps] == ["tool", "llm"]
        assert steps[1]["duration_ms"] == 2.5
        assert steps[0]["step"]["content_redacted"] is True
        assert [r["id"] for r in store.list_runs()] == [run]


def test_final_statuses_unknown_runs_and_duplicate_ids(store_target: str) -> None:
    with open_store(store_target) as store:
        run = store.begin("r1")
        store.settle_failed(run, termination_reason="provider_error")
        with pytest.raises(RunSettledError):
            store.settle_completed(run)
        with pytest.raises(UnknownRunError):
            store.settle_completed("nope")
        with pytest.raises(AuditStoreError):
            store.begin("r1")
        with pytest.raises(AuditStoreError):
            store.begin("r2", meta={"artifact": Artifact.text("l", "t")})
        assert store.get_run("r2") is None
        assert store.get_run("r1")["status"] == "failed"


def test_record_step_never_raises_and_numbers_only_what_it_stored(store_target: str) -> None:
    store = open_store(store_target, privacy="full")
    assert store.record_step("nope", tool_step()) is False
    run = store.begin()
    assert store.record_step(run, tool_step(0))
    assert (
        store.record_step(run, RunStep.llm(round=1, duration_ms=1, content="x", raw={1})) is False
    )
    assert store.record_step(run, "not a step") is False  # type: ignore[arg-type]
    assert store.record_step(run, tool_step(2))
    assert seqs(store, run) == [1, 2]
    store.settle_completed(run)
    assert store.record_step(run, tool_step()) is False
    store.close()
    assert store.record_step(run, tool_step()) is False  # closed: logged, not raised


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


def test_suspend_load_resume_and_settle(store_target: str) -> None:
    with open_store(store_target) as store:
        run = store.begin()
        assert store.load_suspended(run) is None
        store.suspend(run, STATE)
        assert store.get_run(run)["status"] == "suspended"
        assert store.get_run(run)["suspended"] is True
        assert store.load_suspended(run) == STATE
        assert store.record_step(run, tool_step())  # a suspended run still takes steps
        store.mark_resumed(run)
        assert store.get_run(run)["status"] == "running"
        assert store.load_suspended(run) is None
        with pytest.raises(AuditStoreError):
            store.mark_resumed(run)
        store.suspend(run, STATE)
        store.settle_cancelled(run, termination_reason="denied")
        assert store.get_run(run)["suspended"] is False
        with pytest.raises(RunSettledError):
            store.suspend(run, STATE)


@pytest.mark.parametrize(
    "state",
    [
        {"pending": [Artifact.text("label", "text")]},
        {"messages": [{"role": "tool", "result": ToolResult.text("x")}]},
        {"messages": [], "artifacts": []},
        {"x": {1, 2}},
    ],
    ids=["artifact", "tool-result", "artifacts-key", "not-json"],
)
def test_suspend_refuses_artifacts_and_non_json(store_target: str, state: dict[str, Any]) -> None:
    with open_store(store_target) as store:
        run = store.begin()
        with pytest.raises(AuditStoreError):
            store.suspend(run, state)
        assert store.get_run(run)["status"] == "running"


def test_recording_the_approval_step_claims_the_run(store_target: str) -> None:
    with open_store(store_target) as store:
        run = store.begin()
        store.suspend(run, STATE)
        step = RunStep.approval(round=1, decisions={"c1": True}, digest="ab" * 16)
        assert store.record_step(run, step)
        record = store.get_run(run)
        assert (record["status"], record["suspended"]) == ("running", False)
        assert record["claimed_by"] is not None
        assert store.load_suspended(run) is None


def test_a_claim_is_taken_once_and_names_the_first(store_target: str) -> None:
    with open_store(store_target) as first, open_store(store_target) as second:
        run = first.begin()
        first.suspend(run, {**STATE, "digest": "d1"})
        with pytest.raises(ApprovalError, match="stale approval"):
            second.claim_suspended(run, digest="d0")
        assert (
            first.claim_suspended(run, digest="d1", claimant="cli on a (pid 1)")["digest"] == "d1"
        )
        with pytest.raises(AlreadyClaimedError, match=r"already resumed by cli on a \(pid 1\)"):
            second.claim_suspended(run, digest="d1")
        other = first.begin()
        first.suspend(other, STATE)
        second.discard(other, claimant="cli on b (pid 2)")
        assert second.get_run(other)["termination_reason"] == "discarded"
        with pytest.raises(AlreadyClaimedError, match="was discarded by cli on b"):
            first.claim_suspended(other)
        with pytest.raises(UnknownRunError):
            first.claim_suspended("nope")


def test_purge_deletes_old_runs_with_their_steps_and_states(store_target: str) -> None:
    with open_store(store_target, privacy="full") as store:
        old, new = store.begin(), store.begin()
        store.record_step(old, tool_step(content="old"))
        store.suspend(old, STATE)
        store.record_step(new, tool_step(content="new"))
        set_started_at(store_target, old, "2000-01-01T00:00:00.000000Z")
        assert store.purge(30) == 1
        assert store.get_run(old) is None and store.steps(old) == []
        assert store.get_run(new) is not None
        with pytest.raises(AuditStoreError):
            store.purge(-1)
        assert store.purge(0) == 1
        store.begin(new)  # an id reused after a purge starts again at 1
        assert store.record_step(new, tool_step())
        assert seqs(store, new) == [1]


def set_started_at(target: str, run_id: str, when: str) -> None:
    if store_kind(target) == "sqlite":
        with sqlite3.connect(target) as conn:
            conn.execute("UPDATE runs SET started_at = ? WHERE id = ?", (when, run_id))
        return
    import sqlalchemy as sa

    engine = sa.create_engine(target)
    with engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE runs SET started_at = :w WHERE id = :r"), {"w": when, "r": run_id}
        )
    engine.dispose()


def test_threads_with_their_own_and_a_shared_store_stay_gap_free(store_target: str) -> None:
    """Six threads, half sharing one store and half with their own, write one run at once:
    every step is stored once, numbered 1..N without a gap."""
    per_writer = 40
    shared = open_store(store_target)
    run = shared.begin()
    start = threading.Barrier(6)
    failures: list[int] = []

    def writer(number: int) -> None:
        own = open_store(store_target) if number % 2 else None
        store = own or shared
        start.wait()
        for i in range(per_writer):
            if not store.record_step(run, numbered(number, i)):
                failures.append(number)
        if own is not None:
            own.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    stored = shared.steps(run)
    shared.close()
    assert failures == []
    assert [s["seq"] for s in stored] == list(range(1, 6 * per_writer + 1))
    written = sorted((s["step"]["writer"], s["step"]["index"]) for s in stored)
    assert written == sorted((w, i) for w in range(6) for i in range(per_writer))


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


def test_two_threads_resuming_one_run_run_the_call_once(store_target: str, log: Path) -> None:
    run_id, digest = suspend(store_target)
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def resume() -> None:
        with open_store(store_target) as store:
            loop = ToolLoop(ScriptedProvider(APPEND_TURNS[1:]), append_host(), persister=store)
            barrier.wait()
            try:
                result = loop.resume(run_id, approved=True, digest=digest)
            except ApprovalError as exc:
                outcomes.append(f"refused: {exc}")
            else:
                outcomes.append(result.termination_reason.value)

    threads = [threading.Thread(target=resume) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(log_lines(log)) == 1
    assert sorted(o.split(":")[0] for o in outcomes) == ["completed", "refused"], outcomes
    with open_store(store_target) as store:
        assert store.get_run(run_id)["status"] == TerminationReason.COMPLETED.value


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
