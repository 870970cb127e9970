"""An approval handed to the workers is never lost to the queue (ADR 0036), with real
``nr-llm`` commands and workers on a real PostgreSQL server.

``runs approve`` of a queued run claims it in the store (the decisions signed with its state,
the run ``queued``) and then asks procrastinate for a job. When that second step failed, the
run was settled ``cancelled`` (``not_queued``) and its state deleted: the human's decision and
the conversation were gone, although nothing had run. Two ways it fails, both tried here:

- a job for the run is already waiting (procrastinate refuses a second one with the same
  queueing lock): that job takes the run, so the approval is queued, not cancelled;
- the queue cannot take a job at all: the approval is withdrawn in the store and the run waits
  again, its state kept, unclaimed, and can be approved once the queue works.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nr_llm_core.stores import open_store
from nr_llm_core.stores.queue import _defer, enqueue_run, prepare

from ._workers import call, fleet, make_site, statuses, wait_for
from .fixtures import execute

TURNS: list[Any] = [call("append_line", "a1"), "done"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_site(tmp_path_factory.mktemp("queued-approval-dist"))


def suspended_on_a_worker(f: Any, url: str) -> str:
    """A queued run that a worker ran until it waits for approval; that worker stopped."""
    f.start_worker("first")
    run_id = enqueue_run(url, "append once")
    wait_for(lambda: statuses(url, [run_id])[run_id] == "suspended", "the approval wait")
    f.workers["first"].terminate()
    assert f.workers["first"].wait(60) == 0, f.output("first")
    return run_id


def test_an_approval_for_a_run_whose_job_is_already_waiting_is_queued(
    tmp_path: Path, site: Path, pg_url: str
) -> None:
    """A job for the run is waiting in the queue (as the queue's own recovery leaves one for
    a worker lost after the run suspended): ``runs approve`` exits 0, the run is queued, and
    the worker that starts next takes it through that job and runs the approved call once."""
    with fleet(tmp_path, site, pg_url, TURNS) as f:
        run_id = suspended_on_a_worker(f, pg_url)
        _defer(pg_url, run_id)  # the job already waiting for this run
        approved = f.cli("runs", "approve", run_id, "--yes")
        assert approved.returncode == 0, (approved.stdout, approved.stderr)
        assert "queued for a worker" in approved.stdout
        assert statuses(pg_url, [run_id])[run_id] == "queued"
        f.start_worker("second")
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "completed", "the second worker")
        ran = [(t, pid) for r, t, pid in f.lines() if r == run_id]
        assert ran == [("append_line", f.workers["second"].pid)]  # once, after the approval


def test_an_approval_the_queue_cannot_take_is_withdrawn_and_the_run_still_waits(
    tmp_path: Path, site: Path, pg_url: str
) -> None:
    """The queue cannot take a job (its defer function is gone): ``runs approve`` exits 1
    saying nothing was decided and the run still waits; the run is ``suspended`` again,
    unclaimed, on the same state and digest (no decisions kept with it), nothing ran, and it
    can still be discarded."""
    with fleet(tmp_path, site, pg_url, TURNS) as f:
        run_id = suspended_on_a_worker(f, pg_url)
        with open_store(pg_url) as store:
            before = store.load_suspended(run_id)
        assert before is not None
        prepare(pg_url)
        execute(pg_url, "DROP FUNCTION procrastinate_defer_jobs_v1")
        refused = f.cli("runs", "approve", run_id, "--yes")
        assert refused.returncode == 1, (refused.stdout, refused.stderr)
        message = " ".join(refused.stderr.split())
        assert f"could not queue run '{run_id}'" in message
        assert "nothing was decided and the run still waits" in message
        with open_store(pg_url) as store:
            record = store.get_run(run_id)
            assert record is not None
            assert (record["status"], record["claimed_by"]) == ("suspended", None)
            assert store.load_suspended(run_id) == before
        (decisions,) = execute(pg_url, "SELECT decisions FROM states WHERE run_id = :r", r=run_id)[
            0
        ]
        assert decisions is None
        ran = [t for r, t, _ in f.lines() if r == run_id]
        assert ran == []  # append_line needs approval: the first worker only suspended it
        discarded = f.cli("runs", "discard", run_id)
        assert discarded.returncode == 0, discarded.stderr


def test_a_worker_that_does_not_offer_the_approved_tool_gives_the_approval_back(
    tmp_path: Path, site: Path, pg_url: str
) -> None:
    """The only worker left has ``append_line`` disabled (``NR_LLM_DISABLE_TOOLS``): it takes
    the approved run, cannot run the approved call (ADR 0029), and gives the run back: it
    waits again, unclaimed, on its state (it was settled ``failed``, its state and the
    approval gone). Approved again with a worker that offers the tool, the call runs once."""
    with fleet(tmp_path, site, pg_url, TURNS) as f:
        run_id = suspended_on_a_worker(f, pg_url)
        with open_store(pg_url) as store:
            before = store.load_suspended(run_id)
        f.start_worker("narrow", env={"NR_LLM_DISABLE_TOOLS": "append_line"})
        approved = f.cli("runs", "approve", run_id, "--yes")
        assert approved.returncode == 0, (approved.stdout, approved.stderr)
        wait_for(lambda: "the approval is given back" in f.output("narrow"), "the refusal")
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "suspended", "the run to wait")
        with open_store(pg_url) as store:
            record = store.get_run(run_id)
            assert record is not None and record["claimed_by"] is None
            assert store.load_suspended(run_id) == before
            assert [s["kind"] for s in store.steps(run_id)].count("approval") == 0
        assert [t for r, t, _ in f.lines() if r == run_id] == []
        f.workers["narrow"].terminate()
        f.workers["narrow"].wait(60)
        f.start_worker("full")
        again = f.cli("runs", "approve", run_id, "--yes")
        assert again.returncode == 0, (again.stdout, again.stderr)
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "completed", "the full worker")
        ran = [(t, pid) for r, t, pid in f.lines() if r == run_id]
        assert ran == [("append_line", f.workers["full"].pid)]


@pytest.mark.parametrize("decisions", [{"nope": True}, {"a1": "yes"}], ids=["unknown", "not-bool"])
def test_decisions_a_resume_would_refuse_are_refused_before_the_claim(
    pg_store_url: str, decisions: dict[str, Any]
) -> None:
    """``approve_queued`` with decisions no resume accepts (a call id that is not pending, a
    value that is not a bool) is refused in the approver's process, before it commits: the
    run still waits unclaimed (a worker would have refused them later, out of sight)."""
    from nr_llm_core.errors import ApprovalError

    from ..store._support import suspend_append_run

    run_id, digest = suspend_append_run(pg_store_url)
    with open_store(pg_store_url) as store:
        with pytest.raises(ApprovalError):
            store.approve_queued(run_id, digest=digest, decisions=decisions)  # type: ignore[attr-defined]
        record = store.get_run(run_id)
    assert record is not None
    assert (record["status"], record["claimed_by"]) == ("suspended", None)
