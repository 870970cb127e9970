"""A worker never destroys a run it cannot act on (ADR 0039), with real ``nr-llm worker``
processes on a real PostgreSQL server.

A later version of nr-llm may hand workers what this one cannot act on, signed with the shared
host secret: a decision in a shape it does not know, or pending calls without decisions. This
version's worker settled the first kind as an approval given back (the decision deleted) and
the second ``failed`` (``worker_error``, state deleted). It must leave the run waiting, its
row as it was, for a worker that can read it, and say why; and a worker whose provider cannot
even be made gives the run back the same way instead of failing it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nr_llm_core import ToolHost
from nr_llm_core.approval import SuspendedRunState
from nr_llm_core.messages import ChatMessage, ToolCall
from nr_llm_core.providers.base import TrustZone, Usage
from nr_llm_core.stores import open_store
from nr_llm_core.stores._runner import RunExecutor
from nr_llm_core.stores.queue import _defer, prepare

from ..store._support import suspend_append_run
from ._workers import fleet, make_site, wait_for
from .fixtures import execute


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_site(tmp_path_factory.mktemp("unreadable-dist"))


def _run(url: str, run_id: str) -> tuple[str, Any]:
    with open_store(url) as store:
        record = store.get_run(run_id)
    assert record is not None
    return record["status"], record["termination_reason"]


def _row(url: str, run_id: str) -> list[Any]:
    return execute(
        url, "SELECT state, decisions, mac, applying FROM states WHERE run_id = :r", r=run_id
    )


def test_a_decision_this_version_cannot_read_is_kept_for_a_worker_that_can(
    tmp_path: Path, site: Path, pg_url: str
) -> None:
    """The approver's decision is stored in a later version's shape (an object, not a bool),
    signed with the shared secret, and queued. The worker cannot read it: the run waits again
    (``state_not_verified``), unclaimed, its state row byte for byte as it was (the decision
    kept), and nothing ran. Before, the approval was withdrawn and the decision deleted."""
    from nr_llm_core.stores import _pg_states as st

    run_id, digest = suspend_append_run(pg_url)
    with open_store(pg_url) as store:
        store.approve_queued(run_id, digest=digest, decisions={"a1": True})  # type: ignore[attr-defined]
        state = store.load_suspended(run_id)  # type: ignore[attr-defined]
    assert state is None  # queued now: load_suspended reads waiting runs only
    import sqlalchemy as sa

    engine = sa.create_engine(pg_url, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        found = st.read_state(conn, run_id, st.RunStatus.QUEUED, lock=True)
        assert found is not None
        later = {"a1": {"approved": True, "edited_arguments": {"text": "twice"}}}
        st.put_state(conn, run_id, found.state, decisions=later)  # type: ignore[arg-type]
    engine.dispose()
    before = _row(pg_url, run_id)
    with fleet(tmp_path, site, pg_url, ["done"]) as f:
        f.start_worker("older")
        prepare(pg_url)
        _defer(pg_url, run_id)
        wait_for(
            lambda: _run(pg_url, run_id) == ("suspended", "state_not_verified"),
            "the run handed back",
            timeout=60,
        )
        assert "decisions" in f.output("older")
        assert f.lines() == []
    assert _row(pg_url, run_id) == before


def _pending_state(run_id: str) -> dict[str, Any]:
    call = ToolCall(id="a1", name="append_line", arguments={})
    return SuspendedRunState.create(
        run_id=run_id,
        messages=(ChatMessage.user("go"), ChatMessage.assistant_tool_calls((call,))),
        pending=(call,),
        needs_approval=("a1",),
        iterations=1,
        tool_rounds=0,
        usage=Usage(),
        allowed=None,
    ).to_dict()


def test_pending_calls_without_decisions_are_handed_back_not_failed(
    tmp_path: Path, site: Path, pg_url: str
) -> None:
    """A run queued with pending calls and no decisions (what a later version might queue):
    the worker cannot act on it and gives it back (``state_not_verified``), its state kept;
    before, it was settled ``failed`` (``worker_error``) and its state deleted."""
    run_id = "c" * 32
    with open_store(pg_url) as store:
        store.enqueue(_pending_state(run_id))  # type: ignore[attr-defined]
    before = _row(pg_url, run_id)
    with fleet(tmp_path, site, pg_url, ["done"]) as f:
        f.start_worker("older")
        prepare(pg_url)
        _defer(pg_url, run_id)
        wait_for(
            lambda: _run(pg_url, run_id) == ("suspended", "state_not_verified"),
            "the run handed back",
            timeout=60,
        )
        assert f.lines() == []
    assert _row(pg_url, run_id) == before


def test_a_worker_that_cannot_make_its_provider_gives_the_run_back(pg_url: str) -> None:
    """The worker's provider cannot be made for the run (its factory raises) before anything
    of the run began: the run waits again, ``worker_could_not_start``, its state kept, instead
    of ``failed`` with its state deleted. The catch-all settles ``failed`` only what this
    worker began."""
    from nr_llm_core.stores.queue import enqueue_run

    def no_provider(state: SuspendedRunState) -> Any:
        raise RuntimeError("no provider here")

    with open_store(pg_url) as store:
        run_id = enqueue_run(store, "start")  # type: ignore[arg-type]
        before = _row(pg_url, run_id)
        executor = RunExecutor(
            store,  # type: ignore[arg-type]
            ToolHost(),
            no_provider,
            name="broken",
            zone=TrustZone.LOCAL,
        )
        assert executor.execute(run_id) == "given_back"
    assert _run(pg_url, run_id) == ("suspended", "worker_could_not_start")
    assert _row(pg_url, run_id) == before
