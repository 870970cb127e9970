"""A worker the queue gave up on must not run an approved call that its successor runs.

procrastinate hands a job whose worker sent no heartbeat for ``stalled_after`` seconds to
another worker (its stalled-job retry). The first worker need not be dead: a paused process,
a stalled heartbeat, a long garbage collection. Both then hold the run: the second through its
``take`` (the run is ``running`` with its state), the first from before. Each records that it
begins the approved calls (``mark_applying``) before it runs them; that record must admit one
of them only: the worker that holds the run now, and only if nobody began the calls before.
"""

from __future__ import annotations

import pytest

from nr_llm_core.stores import open_store

from ..store._support import suspend_append_run


def test_the_worker_that_lost_the_run_to_a_retry_cannot_begin_its_approved_calls(
    pg_store_url: str,
) -> None:
    """Worker ``A`` takes the approved run; the queue hands it again to ``B`` (A stalled, not
    dead). ``B`` begins the approved calls; ``A``, waking, must be refused (it was admitted
    too: the record checked only that the run was open with decisions, so the approved
    append ran twice)."""
    run_id, digest = suspend_append_run(pg_store_url)
    with open_store(pg_store_url) as store:
        store.approve_queued(run_id, digest=digest, decisions={"a1": True})  # type: ignore[attr-defined]
        first = store.take(run_id, worker="A", zone="local")  # type: ignore[attr-defined]
        second = store.take(run_id, worker="B", zone="local")  # type: ignore[attr-defined]
        assert first is not None and second is not None
        assert (first.attempt, second.attempt) == (1, 2)
        assert store.mark_applying(run_id, worker="B", attempt=second.attempt)  # type: ignore[attr-defined]
        assert not store.mark_applying(run_id, worker="A", attempt=first.attempt)  # type: ignore[attr-defined]


def test_a_stale_take_is_refused_even_before_its_successor_begins(pg_store_url: str) -> None:
    """The order reversed: ``A`` wakes first, after ``B`` took the run but before ``B``
    began. ``A`` no longer holds the run and is refused; ``B`` begins. Two jobs of one worker
    process share its name, so the take is told apart by its attempt, not only the name."""
    run_id, digest = suspend_append_run(pg_store_url)
    with open_store(pg_store_url) as store:
        store.approve_queued(run_id, digest=digest, decisions={"a1": True})  # type: ignore[attr-defined]
        first = store.take(run_id, worker="same", zone="local")  # type: ignore[attr-defined]
        second = store.take(run_id, worker="same", zone="local")  # type: ignore[attr-defined]
        assert first is not None and second is not None
        assert not store.mark_applying(run_id, worker="same", attempt=first.attempt)  # type: ignore[attr-defined]
        assert store.mark_applying(run_id, worker="same", attempt=second.attempt)  # type: ignore[attr-defined]
        # Once begun, nobody begins again, not even the same take.
        assert not store.mark_applying(run_id, worker="same", attempt=second.attempt)  # type: ignore[attr-defined]


def test_a_stale_take_cannot_withdraw_the_approval_its_successor_holds(
    pg_store_url: str,
) -> None:
    """Two takes by workers of one name (two jobs of one worker process): the first, which
    the queue gave up on, cannot run an approved call and gives the approval back. Only the
    latest take may do that: the withdrawal named the worker only, so the stale take undid
    the approval while its successor held the run (the run waiting again, its decision gone,
    under a worker that is running it). The successor's own withdrawal still works."""
    run_id, digest = suspend_append_run(pg_store_url)
    with open_store(pg_store_url) as store:
        store.approve_queued(run_id, digest=digest, decisions={"a1": True})  # type: ignore[attr-defined]
        first = store.take(run_id, worker="same", zone="local")  # type: ignore[attr-defined]
        second = store.take(run_id, worker="same", zone="local")  # type: ignore[attr-defined]
        assert first is not None and second is not None
        assert not store.withdraw_approval(run_id, worker="same", attempt=first.attempt)  # type: ignore[attr-defined]
        record = store.get_run(run_id)
        assert record is not None and record["status"] == "running"
        assert store.withdraw_approval(run_id, worker="same", attempt=second.attempt)  # type: ignore[attr-defined]
        record = store.get_run(run_id)
        assert record is not None
        assert (record["status"], record["termination_reason"]) == (
            "suspended",
            "approval_given_back",
        )


def test_a_worker_withdrawal_must_name_its_take(pg_store_url: str) -> None:
    """A worker's withdrawal without the take's number is refused outright (a name alone
    cannot tell two takes apart), before anything changes."""
    run_id, digest = suspend_append_run(pg_store_url)
    with open_store(pg_store_url) as store:
        store.approve_queued(run_id, digest=digest, decisions={"a1": True})  # type: ignore[attr-defined]
        assert store.take(run_id, worker="w", zone="local") is not None  # type: ignore[attr-defined]
        with pytest.raises(TypeError):
            store.withdraw_approval(run_id, worker="w")  # type: ignore[attr-defined]
        record = store.get_run(run_id)
        assert record is not None and record["status"] == "running"


def test_a_stale_take_writes_nothing_to_the_run_its_successor_holds(pg_store_url: str) -> None:
    """``A``'s take was given up on; ``B`` holds the run. Whatever ``A`` writes in its take's
    name (a step, a settle, a suspension: what its loop does when it wakes mid-run) is
    refused in the transaction that would write it, and the run stays ``running`` in ``B``'s
    hands with ``B``'s steps only; ``B``'s own writes go through."""
    from nr_llm_core.stores._pg_states import TakenAwayError
    from nr_llm_core.trace import RunStep

    run_id, digest = suspend_append_run(pg_store_url)
    with open_store(pg_store_url) as store:
        store.approve_queued(run_id, digest=digest, decisions={"a1": True})  # type: ignore[attr-defined]
        first = store.take(run_id, worker="A", zone="local")  # type: ignore[attr-defined]
        second = store.take(run_id, worker="B", zone="local")  # type: ignore[attr-defined]
        assert first is not None and second is not None
        steps = len(store.steps(run_id))
        step = RunStep.error(round=1, reason="from the stale take", duration_ms=0.0)
        assert not store.holds(run_id, attempt=first.attempt)  # type: ignore[attr-defined]
        assert store.holds(run_id, attempt=second.attempt)  # type: ignore[attr-defined]
        assert not store.record_step(run_id, step, attempt=first.attempt)  # type: ignore[call-arg]
        with pytest.raises(TakenAwayError):
            store.settle(run_id, "completed", attempt=first.attempt)  # type: ignore[call-arg]
        with pytest.raises(TakenAwayError):
            store.suspend(run_id, first.state, attempt=first.attempt)  # type: ignore[call-arg]
        record = store.get_run(run_id)
        assert record is not None and record["status"] == "running"
        assert len(store.steps(run_id)) == steps
        assert store.record_step(run_id, step, attempt=second.attempt)  # type: ignore[call-arg]
        store.settle(run_id, "completed", attempt=second.attempt)  # type: ignore[call-arg]
        record = store.get_run(run_id)
        assert record is not None and record["status"] == "completed"


def test_a_begun_run_approved_again_but_not_queued_waits_again_with_its_mark(
    pg_store_url: str,
) -> None:
    """A run whose approved calls a lost worker had begun was given back and is approved
    again, but the queue takes no job: the approval is withdrawn (before, it was refused:
    the run stayed ``queued`` where no job would come) and the run waits again with the
    mark and the decisions the calls were begun under, so an in-process claim is still
    refused and no call can run a second time."""
    from nr_llm_core.errors import ApprovalError

    from .fixtures import execute

    run_id, digest = suspend_append_run(pg_store_url)
    with open_store(pg_store_url) as store:
        store.approve_queued(run_id, digest=digest, decisions={"a1": True})  # type: ignore[attr-defined]
        taken = store.take(run_id, worker="lost", zone="local")  # type: ignore[attr-defined]
        assert store.mark_applying(run_id, worker="lost", attempt=taken.attempt)  # type: ignore[attr-defined]
        assert store.give_back(run_id)  # type: ignore[attr-defined]
        store.approve_queued(run_id, digest=digest, decisions={"a1": False})  # type: ignore[attr-defined]
        row = execute(
            pg_store_url, "SELECT decisions, applying FROM states WHERE run_id = :r", r=run_id
        )
        assert row == [('{"a1":true}', "lost")]  # the decisions the calls were begun under
        assert store.withdraw_approval(run_id)  # type: ignore[attr-defined]
        record = store.get_run(run_id)
        assert record is not None and record["status"] == "suspended"
        # It still says that the calls may have run (`runs list`, `runs show`).
        assert record["termination_reason"] == "state_not_verified_calls_begun"
        assert (
            execute(
                pg_store_url, "SELECT decisions, applying FROM states WHERE run_id = :r", r=run_id
            )
            == row
        )
        with pytest.raises(ApprovalError):
            store.claim_suspended(run_id)
