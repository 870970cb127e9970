"""A worker the queue gave up on stops at its next step once another worker holds its run,
with real ``nr-llm worker`` processes on a real PostgreSQL server.

Worker ``A`` begins the approved calls of a run and is paused (SIGSTOP: not dead, a stalled
heartbeat) inside the first of them; the queue hands the run to ``B``, which answers the
approved calls as possibly run and drives the run on, running a call that needs no approval.
When ``A`` wakes, its call in hand ends (nothing can stop a tool mid-call), but it must not
run the next call of the turn, ask its model for more, or write to the run: before, it ran
the rest of its turn and its model's next calls too, so a call that needs no approval ran on
both workers.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from nr_llm_core.stores import open_store
from nr_llm_core.stores.queue import enqueue_run

from ._workers import call, fleet, make_site, statuses, wait_for


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_site(tmp_path_factory.mktemp("stale-stops-dist"))


BOTH: dict[str, Any] = {
    "content": "",
    "tool_calls": [
        {"id": "b1", "name": "block_approved", "arguments": {}},
        {"id": "n1", "name": "note", "arguments": {}},
    ],
}


def test_a_paused_worker_that_lost_its_run_runs_nothing_more_when_it_wakes(
    tmp_path: Path, site: Path, pg_url: str
) -> None:
    """The pending turn is ``b1`` (``block_approved``, approved) and ``n1`` (``note``, no
    approval needed); the model's next turn calls ``note`` again (``n2``). ``A`` is paused in
    ``b1``; ``B`` takes the run over and completes it (``n1`` answered as possibly run, ``n2``
    run once, by ``B``). ``A`` is woken and released: it says it stops, and the call log holds
    ``b1`` by ``A`` and ``note`` by ``B`` only; the run stays as ``B`` settled it, with no
    step of ``A``'s after the take-over."""
    turns: list[Any] = [BOTH, call("note", "n2"), "done"]
    with fleet(tmp_path, site, pg_url, turns) as f:
        a = f.start_worker("A")
        run_id = enqueue_run(pg_url, "approve, pause, take over")
        wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "suspended", "the wait")
        assert f.cli("runs", "approve", run_id, "--yes").returncode == 0
        wait_for(lambda: any(t == "block_approved" for _, t, _ in f.lines()), "the call")
        os.kill(a.pid, signal.SIGSTOP)
        try:
            b = f.start_worker("B")
            wait_for(lambda: statuses(pg_url, [run_id])[run_id] == "completed", "B's run")
            with open_store(pg_url) as store:
                steps_before = [s["step"] for s in store.steps(run_id)]
        finally:
            os.kill(a.pid, signal.SIGCONT)
        f.release.touch()
        wait_for(
            lambda: (
                "taken from this worker" in f.output("A")
                or any(t == "note" and p == a.pid for _, t, p in f.lines())
            ),
            "A to stop, or to run on",
        )
        calls = [(t, p) for r, t, p in f.lines() if r == run_id]
        # block_approved logs itself, then as block (it is one).
        assert calls == [("block_approved", a.pid), ("block", a.pid), ("note", b.pid)], calls
        assert "taken from this worker" in f.output("A")
        with open_store(pg_url) as store:
            record = store.get_run(run_id)
            steps_after = [s["step"] for s in store.steps(run_id)]
    assert record is not None and record["status"] == "completed"
    assert steps_after == steps_before
    (resume,) = [s for s in steps_after if s["kind"] == "resume"]
    assert resume["lost_calls"] == 2
