"""A worker stopped (Ctrl-C, SIGTERM: a ``KeyboardInterrupt``) after it took a run and
before its loop watches for interrupts never leaves the run ``running`` for ever, with a real
PostgreSQL store (ADR 0041).

The loop settles a run it is interrupted in (``cancelled``, ``interrupted``), but only from
where it watches: a take commits the run ``running`` before that, and an interrupt between
the two left it ``running``, where no command ends it and, the job being over, no worker takes
it again. The worker must give the run back when nothing of it began (it waits again, its
state row as it was), else settle it as interrupted; and the interrupt still stops it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from nr_llm_core import ToolHost
from nr_llm_core.approval import SuspendedRunState
from nr_llm_core.messages import ChatMessage
from nr_llm_core.providers.base import Completion, TrustZone
from nr_llm_core.results import ToolSpec
from nr_llm_core.stores import open_store
from nr_llm_core.stores._runner import RunExecutor
from nr_llm_core.stores.postgres import PostgresStore

from ..store._support import append_host, suspend_append_run
from .fixtures import execute
from .test_taken_while_ending import queued


def _row(url: str, run_id: str) -> list[Any]:
    return execute(
        url, "SELECT state, decisions, mac, applying FROM states WHERE run_id = :r", r=run_id
    )


def _run(url: str, run_id: str) -> tuple[Any, ...]:
    (row,) = execute(
        url, "SELECT status, termination_reason, taken_by FROM runs WHERE id = :r", r=run_id
    )
    return tuple(row)


def test_an_interrupt_before_anything_of_the_run_began_gives_it_back(pg_store_url: str) -> None:
    """The run is taken; the interrupt lands while the worker makes its provider for it
    (``provider_for`` raises ``KeyboardInterrupt``), before the loop exists. The interrupt
    reaches the caller, and the run waits again (``worker_could_not_start``), untaken, its
    state row byte for byte as it was; before, it stayed ``running``."""

    def interrupted(state: SuspendedRunState) -> Any:
        raise KeyboardInterrupt

    with open_store(pg_store_url) as store:
        assert isinstance(store, PostgresStore)
        run_id = queued(store, "go")
        before = _row(pg_store_url, run_id)
        executor = RunExecutor(store, ToolHost(), interrupted, name="A", zone=TrustZone.LOCAL)
        with pytest.raises(KeyboardInterrupt):
            executor.execute(run_id)
    assert _run(pg_store_url, run_id) == ("suspended", "worker_could_not_start", None)
    assert _row(pg_store_url, run_id) == before


class InterruptedOnceResumed:
    """A provider whose ``model`` is read, by the loop as it opens its run, after this take
    recorded its ``resume`` step: the interrupt lands there, once the take began the run and
    before the loop watches it."""

    trust_zone = TrustZone.LOCAL

    def __init__(self, store: PostgresStore, run_id: str) -> None:
        self.store = store
        self.run_id = run_id

    @property
    def model(self) -> str:
        if any(s["kind"] == "resume" for s in self.store.steps(self.run_id)):
            raise KeyboardInterrupt
        return "m"

    def complete(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> Completion:
        raise AssertionError("the loop must not ask the model after the interrupt")


def test_an_interrupt_after_the_take_began_the_run_settles_it_interrupted(
    pg_store_url: str,
) -> None:
    """A lost worker had begun the run's approved calls; this worker takes it over, records
    its ``resume`` step (it began the run), and is interrupted before its loop watches. The
    interrupt reaches the caller and the run is ``cancelled`` for ``interrupted``, as the
    loop settles a run it is interrupted in; before, it stayed ``running``."""
    run_id, digest = suspend_append_run(pg_store_url)
    with open_store(pg_store_url) as store:
        assert isinstance(store, PostgresStore)
        store.approve_queued(run_id, digest=digest, decisions={"a1": True})
        lost = store.take(run_id, worker="lost", zone="local")
        assert lost is not None
        assert store.mark_applying(run_id, worker="lost", attempt=lost.attempt)
        provider = InterruptedOnceResumed(store, run_id)
        executor = RunExecutor(
            store, append_host(), lambda state: provider, name="B", zone=TrustZone.LOCAL
        )
        with pytest.raises(KeyboardInterrupt):
            executor.execute(run_id)
        kinds = [s["kind"] for s in store.steps(run_id)]
    assert kinds[-1] == "resume"
    assert _run(pg_store_url, run_id)[:2] == ("cancelled", "interrupted")
    assert _row(pg_store_url, run_id) == []


def test_a_run_whose_calls_may_have_run_given_back_unstarted_says_they_may_have_run(
    pg_store_url: str,
) -> None:
    """A lost worker had begun the run's approved calls; this worker takes it over and
    cannot make its provider, so it gives the run back before it began anything. The reason
    must not be ``worker_could_not_start``, whose note says nothing of the run changed:
    the approved calls may have run, and ``runs show`` must say so in the words it uses for
    ``state_not_verified_calls_begun``; the mark stays, so a new approval never runs them
    again."""
    from click.testing import CliRunner

    from nr_llm_core.cli import main

    def no_provider(state: SuspendedRunState) -> Any:
        raise RuntimeError("no provider here")

    run_id, digest = suspend_append_run(pg_store_url)
    with open_store(pg_store_url) as store:
        assert isinstance(store, PostgresStore)
        store.approve_queued(run_id, digest=digest, decisions={"a1": True})
        lost = store.take(run_id, worker="lost", zone="local")
        assert lost is not None
        assert store.mark_applying(run_id, worker="lost", attempt=lost.attempt)
        executor = RunExecutor(store, append_host(), no_provider, name="B", zone=TrustZone.LOCAL)
        assert executor.execute(run_id) == "given_back"
    status, reason, _ = _run(pg_store_url, run_id)
    assert status == "suspended"
    assert reason == "worker_could_not_start_calls_begun"
    ((applying,),) = [r[3:] for r in _row(pg_store_url, run_id)]
    assert applying == "lost"
    shown = CliRunner().invoke(main, ["runs", "show", run_id, "--db", pg_store_url])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert "a worker could not start on the run" in text
    assert "nothing of the run changed" not in text
    assert (
        "the worker running its approved calls had begun them and stopped: they may have run"
        in text
    )
    assert "answer those calls as possibly run and never run them again" in text
