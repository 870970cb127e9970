"""A run a worker hands back is never silently stuck, and says why (ADR 0038), with real
``nr-llm worker`` processes and real ``nr-llm`` commands on a real PostgreSQL server.

Two ways a worker could not act on a queued run, both tried here:

- its host secret is not the one that signed the run's state: the job failed, and the run
  stayed ``queued`` with its state, where no job would come and nothing told the operator;
- it does not offer an approved call's tool (ADR 0029): it gave the approval back, the run
  waits again, and only the worker's log said so, while the approver's command had printed
  that the run was queued.

Either way the run must wait again, unclaimed, with the reason recorded where ``runs list``
and ``runs show`` say it, and be resumable once a fitting worker is there.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core.stores import open_store
from nr_llm_core.stores.queue import enqueue_run

from ._workers import call, fleet, make_site, statuses, wait_for

TURNS: list[Any] = [call("append_line", "a1"), "done"]
OTHER_SECRET = "another-host-secret-" + "9" * 40


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_site(tmp_path_factory.mktemp("given-back-dist"))


def _reason(url: str, run_id: str) -> tuple[str, Any, Any]:
    with open_store(url) as store:
        record = store.get_run(run_id)
    assert record is not None
    return record["status"], record["termination_reason"], record["claimed_by"]


def test_a_worker_with_another_host_secret_hands_the_approved_run_back(
    tmp_path: Path, site: Path, pg_url: str
) -> None:
    """The run suspends on a worker with the fleet's secret; the approval is queued while the
    only worker left has another secret. That worker cannot verify the state: the run waits
    again (not ``queued`` forever), unclaimed, reason ``state_not_verified``, shown by
    ``runs list`` and explained by ``runs show``; its state is kept, nothing ran. Approved
    again with a worker that has the secret, the call runs once and the run completes."""
    with fleet(tmp_path, site, pg_url, TURNS) as f:
        f.start_worker("first")
        run_id = enqueue_run(pg_url, "append once")
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "suspended", "the wait")
        f.workers["first"].terminate()
        assert f.workers["first"].wait(60) == 0, f.output("first")
        with open_store(pg_url) as store:
            before = store.load_suspended(run_id)
        f.start_worker("stranger", env={"NR_LLM_SECRET": OTHER_SECRET})
        approved = f.cli("runs", "approve", run_id, "--yes")
        assert approved.returncode == 0, (approved.stdout, approved.stderr)
        wait_for(
            lambda: _reason(pg_url, run_id) == ("suspended", "state_not_verified", None),
            "the run handed back",
            timeout=60,
        )
        with open_store(pg_url) as store:
            assert store.load_suspended(run_id) == before
        listed = f.cli("runs", "list")
        assert "state_not_verified" in listed.stdout, listed.stdout
        shown = f.cli("runs", "show", run_id)
        assert shown.returncode == 0, shown.stderr
        assert "a worker could not take the run" in shown.stdout
        assert "host secret" in shown.stdout
        assert OTHER_SECRET not in f.output("stranger")
        assert [t for r, t, _ in f.lines() if r == run_id] == []
        f.workers["stranger"].terminate()
        f.workers["stranger"].wait(60)
        f.start_worker("right")
        again = f.cli("runs", "approve", run_id, "--yes")
        assert again.returncode == 0, (again.stdout, again.stderr)
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "completed", "the right worker")
        assert [(t, p) for r, t, p in f.lines() if r == run_id] == [
            ("append_line", f.workers["right"].pid)
        ]
        assert _reason(pg_url, run_id)[1] == "completed"


def test_a_run_queued_to_start_on_a_worker_with_another_secret_is_handed_back(
    tmp_path: Path, site: Path, pg_url: str
) -> None:
    """``enqueue_run`` (``run --queue``) while the only worker has another secret: the run
    waits for the operator (``state_not_verified``) instead of staying ``queued``; it can be
    discarded, which ends it."""
    with fleet(tmp_path, site, pg_url, TURNS) as f:
        f.start_worker("stranger", env={"NR_LLM_SECRET": OTHER_SECRET})
        run_id = enqueue_run(pg_url, "append once")
        wait_for(
            lambda: _reason(pg_url, run_id) == ("suspended", "state_not_verified", None),
            "the run handed back",
            timeout=60,
        )
        shown = f.cli("runs", "show", run_id, "--json")
        assert json.loads(shown.stdout)["run"]["termination_reason"] == "state_not_verified"
        discarded = f.cli("runs", "discard", run_id)
        assert discarded.returncode == 0, discarded.stderr
        assert statuses(pg_url, [run_id])[run_id] == "cancelled"


def test_an_approval_a_worker_gives_back_is_shown_to_the_operator(
    tmp_path: Path, site: Path, pg_url: str
) -> None:
    """The approver's command printed "queued"; the only worker does not offer the approved
    tool and gives the approval back. ``runs list`` shows ``approval_given_back`` and ``runs
    show`` says a worker gave the approval back and why; a new approval clears the reason."""
    with fleet(tmp_path, site, pg_url, TURNS) as f:
        f.start_worker("first")
        run_id = enqueue_run(pg_url, "append once")
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "suspended", "the wait")
        f.workers["first"].terminate()
        assert f.workers["first"].wait(60) == 0, f.output("first")
        f.start_worker("narrow", env={"NR_LLM_DISABLE_TOOLS": "append_line"})
        approved = f.cli("runs", "approve", run_id, "--yes")
        assert "queued for a worker" in approved.stdout
        wait_for(
            lambda: _reason(pg_url, run_id) == ("suspended", "approval_given_back", None),
            "the approval given back",
            timeout=60,
        )
        assert "approval_given_back" in f.cli("runs", "list").stdout
        shown = f.cli("runs", "show", run_id).stdout
        assert "a worker gave the approval back" in shown
        assert "does not offer an approved call's tool" in shown
        f.workers["narrow"].terminate()
        f.workers["narrow"].wait(60)
        f.start_worker("full")
        assert f.cli("runs", "approve", run_id, "--yes").returncode == 0
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "completed", "the full worker")
        assert _reason(pg_url, run_id)[1] == "completed"


def test_a_run_whose_approved_calls_may_have_run_goes_back_saying_so_and_never_runs_them_again(
    tmp_path: Path, site: Path, pg_url: str
) -> None:
    """Worker ``w1`` begins the approved ``block_approved`` call and is killed in it; the only
    worker left has another host secret and is handed the run. Before, it could not put the
    run back (an approval would run the call again): its job failed and the run stayed
    ``running`` for ever. Now the run waits again, unclaimed, its state kept, with the reason
    ``state_not_verified_calls_begun``, which ``runs list`` shows and ``runs show`` explains
    (the calls may have run; a new approval has a worker answer them as possibly run). A
    resume in this process is refused (it would run them again) and leaves the run waiting;
    approved again for a worker with the secret, the call is not run again: the run completes
    with the call answered as possibly run."""
    from nr_llm_core.errors import ApprovalError

    turns: list[Any] = [call("block_approved", "b1"), "done"]
    with fleet(tmp_path, site, pg_url, turns) as f:
        f.start_worker("w1")
        run_id = enqueue_run(pg_url, "approve, then kill")
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "suspended", "the wait")
        assert f.cli("runs", "approve", run_id, "--yes").returncode == 0
        wait_for(lambda: any(t == "block_approved" for _, t, _ in f.lines()), "the call")
        os.kill(f.workers["w1"].pid, signal.SIGKILL)
        f.workers["w1"].wait(30)
        f.start_worker("stranger", env={"NR_LLM_SECRET": OTHER_SECRET})
        wait_for(
            lambda: (
                _reason(pg_url, run_id) == ("suspended", "state_not_verified_calls_begun", None)
            ),
            "the run handed back",
            timeout=60,
        )
        assert "state_not_verified_calls_begun" in f.cli("runs", "list").stdout
        shown = f.cli("runs", "show", run_id)
        assert shown.returncode == 0, shown.stderr
        assert "may have run" in shown.stdout and "never run them again" in shown.stdout
        with open_store(pg_url) as store:
            with pytest.raises(ApprovalError) as refused:
                store.claim_suspended(run_id)
            assert "may have run" in str(refused.value)
            assert store.load_suspended(run_id) is not None
        assert _reason(pg_url, run_id)[0] == "suspended"
        f.workers["stranger"].terminate()
        f.workers["stranger"].wait(60)
        f.start_worker("right")
        again = f.cli("runs", "approve", run_id, "--yes")
        assert again.returncode == 0, (again.stdout, again.stderr)
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "completed", "the right worker")
        f.release.touch()
        approved = [p for r, t, p in f.lines() if r == run_id and t == "block_approved"]
        assert approved == [f.workers["w1"].pid]
    with open_store(pg_url) as store:
        (resume,) = [s["step"] for s in store.steps(run_id) if s["kind"] == "resume"]
    assert resume["lost_calls"] == 1
