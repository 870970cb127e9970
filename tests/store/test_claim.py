"""13.6: resuming a suspended run is an atomic claim in the store. The first claimant gets the
state and the run; every later one is told who claimed it and when, and no tool runs twice.
Each test that takes ``target`` runs on a SQLite file and on a PostgreSQL server."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import ScriptedProvider, ToolLoop
from nr_llm_core.audit import UnknownRunError, claimant
from nr_llm_core.errors import AlreadyClaimedError, ApprovalError
from nr_llm_core.loop import TerminationReason
from nr_llm_core.stores import open_store

from ._support import APPEND_TURNS, LOG_VAR, append_host, log_lines, suspend_append_run

WHEN = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"


@pytest.fixture
def target(store_target: str) -> str:
    """The store under test: a SQLite file, then a PostgreSQL database."""
    return store_target


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "append.log"
    monkeypatch.setenv(LOG_VAR, str(path))
    return path


def test_a_claim_hands_over_the_state_once_and_records_who(target: str) -> None:
    """Two stores on one database: the first claim gets the state and records the claimant;
    the second is refused with a message naming the first claimant and the time."""
    run_id, digest = suspend_append_run(target)
    with open_store(target) as first, open_store(target) as second:
        state = first.claim_suspended(run_id, digest=digest, claimant="cli on box (pid 7)")
        assert state["digest"] == digest and state["run_id"] == run_id
        record = first.get_run(run_id)
        assert record is not None
        assert record["status"] == "running" and record["suspended"] is False
        assert record["claimed_by"] == "cli on box (pid 7)"
        assert re.fullmatch(WHEN, record["claimed_at"] or "")
        with pytest.raises(AlreadyClaimedError) as refused:
            second.claim_suspended(run_id, digest=digest, claimant="playground on box (pid 8)")
        assert isinstance(refused.value, ApprovalError)
        assert re.fullmatch(
            rf"run '{run_id}' was already resumed by cli on box \(pid 7\) at {WHEN}",
            str(refused.value),
        )
        assert refused.value.claimant == "cli on box (pid 7)"
        assert second.load_suspended(run_id) is None


def test_a_stale_digest_claims_nothing(target: str) -> None:
    run_id, digest = suspend_append_run(target)
    with open_store(target) as store:
        with pytest.raises(ApprovalError, match="stale approval"):
            store.claim_suspended(run_id, digest="0" * 64)
        record = store.get_run(run_id)
        assert record is not None and record["status"] == "suspended"
        assert record["claimed_by"] is None
        assert store.claim_suspended(run_id, digest=digest)["digest"] == digest


def test_claiming_what_is_not_waiting(target: str) -> None:
    """No such run: UnknownRunError; a run that never waited: not waiting for approval."""
    with open_store(target) as store:
        with pytest.raises(UnknownRunError):
            store.claim_suspended("nope")
        run = store.begin()
        with pytest.raises(ApprovalError, match="is not waiting for approval") as refused:
            store.claim_suspended(run)
        assert not isinstance(refused.value, AlreadyClaimedError)


def test_a_discarded_run_cannot_be_resumed(target: str) -> None:
    """discard() settles a waiting run as cancelled, says who discarded it, and a resume after
    it is refused with that name; discarding twice is refused the same way."""
    run_id, digest = suspend_append_run(target)
    with open_store(target) as store:
        store.discard(run_id, claimant="cli on box (pid 9)")
        record = store.get_run(run_id)
        assert record is not None
        assert (record["status"], record["termination_reason"]) == ("cancelled", "discarded")
        assert record["claimed_by"] == "cli on box (pid 9)"
        with pytest.raises(AlreadyClaimedError, match=r"was discarded by cli on box \(pid 9\)"):
            store.claim_suspended(run_id, digest=digest)
        with pytest.raises(AlreadyClaimedError, match="was discarded by"):
            store.discard(run_id)


def test_the_default_claimant_names_the_front_end_host_and_process() -> None:
    import os
    import socket

    assert claimant("cli") == f"cli on {socket.gethostname()} (pid {os.getpid()})"
    assert claimant("api").startswith("api on ")


def race_two_threads(target: str, run_id: str, digest: str, shared: bool) -> list[tuple[str, Any]]:
    """Resume ``run_id`` from two threads released together; each outcome, in any order."""
    barrier = threading.Barrier(2)
    outcomes: list[tuple[str, Any]] = []
    common = open_store(target) if shared else None

    def resume() -> None:
        store = common or open_store(target)
        try:
            loop = ToolLoop(ScriptedProvider(APPEND_TURNS[1:]), append_host(), persister=store)
            barrier.wait()
            try:
                result = loop.resume(run_id, approved=True, digest=digest)
            except ApprovalError as exc:
                outcomes.append(("refused", str(exc)))
            else:
                outcomes.append(("done", result.termination_reason))
        finally:
            if common is None:
                store.close()

    threads = [threading.Thread(target=resume) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    if common is not None:
        common.close()
    return outcomes


@pytest.mark.parametrize("shared", [True, False], ids=["one-persister", "two-persisters"])
def test_two_threads_resuming_one_run_run_the_call_once(
    target: str, log: Path, shared: bool
) -> None:
    """Two threads resume the same run at the same moment, five times over: each time the
    approved call runs exactly once, one resume completes, the other is refused by name."""
    for attempt in range(5):
        log.unlink(missing_ok=True)
        run_id, digest = suspend_append_run(target)
        outcomes = race_two_threads(target, run_id, digest, shared)
        assert len(log_lines(log)) == 1, (attempt, log_lines(log), outcomes)
        assert sorted(kind for kind, _ in outcomes) == ["done", "refused"], outcomes
        done = next(value for kind, value in outcomes if kind == "done")
        refusal = next(value for kind, value in outcomes if kind == "refused")
        assert done is TerminationReason.COMPLETED
        assert re.search(rf"was already resumed by api on .* \(pid \d+\) at {WHEN}", refusal)


def test_a_later_resume_is_told_who_resumed(target: str, log: Path) -> None:
    """Resuming again after the run went on (another process, later): refused by name, and
    the call is not run again."""
    run_id, digest = suspend_append_run(target)
    with open_store(target) as store:
        loop = ToolLoop(ScriptedProvider(APPEND_TURNS[1:]), append_host(), persister=store)
        assert loop.resume(run_id, approved=True, claimant="playground").content == "appended it"
    with open_store(target) as store:
        loop = ToolLoop(ScriptedProvider(APPEND_TURNS[1:]), append_host(), persister=store)
        with pytest.raises(AlreadyClaimedError, match="already resumed by playground at"):
            loop.resume(run_id, approved=True, digest=digest)
    assert len(log_lines(log)) == 1
